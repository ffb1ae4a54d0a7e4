"""The policy rules, called directly as the pack calls them: a passing and a failing resource for each,
messages that name the offending field, the registry's metadata, and preview-time unknown values."""

from __future__ import annotations

import base64
import copy
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from pulumi_policy.proxy import (
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
    unknown_checking_proxy,
)

from flyte_apps.core import constants as c
from flyte_apps.core.knative_settings import KnativeConfig, build_knative_objects
from flyte_apps.core.plan import plan_stack
from flyte_apps.policy.pod_rules import image_problem, looks_like_credential
from flyte_apps.policy.registry import RULES, RULES_BY_NAME, Level, ResourceRule, StackRule
from flyte_apps.policy.runner import SUPPORTED_SCHEMA_KEYWORDS, schema_problem
from flyte_apps.policy.wire import (
    UNKNOWN,
    OfflineResourceArgs,
    OfflineStackArgs,
    WireResource,
    plain,
    to_wire,
)
from tests.support.config import REPO_ROOT, minimal_config, minimal_kservice
from tests.support.manager import POSTGRES, manager_objects, platform
from tests.support.tokens import (
    TYPE_CLUSTER_ROLE,
    TYPE_CONFIG_MAP,
    TYPE_CONFIG_MAP_PATCH,
    TYPE_DEPLOYMENT,
    TYPE_ROLE,
)
from tests.support.tokens import TYPE_SERVICE as TYPE_CORE_SERVICE

DIGEST = "sha256:" + "a" * 64
FULL_RESOURCES = {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}


class Collector:
    """A ``report_violation`` that keeps what it is told (pulumi-policy's own test style)."""

    def __init__(self) -> None:
        self.reports: list[tuple[str, str | None]] = []

    def __call__(self, message: str, urn: str | None = None) -> None:
        self.reports.append((message, urn))

    @property
    def messages(self) -> list[str]:
        return [message for message, _ in self.reports]


def check(
    rule_name: str, props: Any, *, typ: str = c.TYPE_KSERVICE, config: dict[str, Any] | None = None
) -> list[str]:
    """Run a resource rule on one resource; the messages it reported."""
    rule = RULES_BY_NAME[rule_name]
    assert isinstance(rule, ResourceRule)
    collect = Collector()
    rule.validate(
        OfflineResourceArgs(WireResource(typ, "res", props, f"urn:{typ}::res"), config or {}), collect
    )
    assert all(urn is None for _, urn in collect.reports)
    return collect.messages


def check_stack(
    rule_name: str, resources: list[WireResource], config: dict[str, Any] | None = None
) -> list[tuple[str, str | None]]:
    """Run a stack rule; (message, urn) of each report."""
    rule = RULES_BY_NAME[rule_name]
    assert isinstance(rule, StackRule)
    collect = Collector()
    rule.validate(OfflineStackArgs(resources, config or {}), collect)
    return collect.reports


def as_resource(manifest: dict[str, Any], name: str, typ: str = c.TYPE_KSERVICE) -> WireResource:
    return WireResource(typ, name, manifest, f"urn:pulumi:dev::flyte-apps::{typ}::{name}")


def manager_wire(raw: dict[str, Any] | None = None, **settings: Any) -> list[WireResource]:
    return [to_wire(obj, stack="dev") for obj in manager_objects(raw, **settings)]


def one(resources: list[WireResource], typ: str) -> WireResource:
    (found,) = [resource for resource in resources if resource.resource_type == typ]
    return found


def edited(resource: WireResource, change: Callable[[dict[str, Any]], None]) -> WireResource:
    props = copy.deepcopy(dict(resource.props))
    change(props)
    return WireResource(resource.resource_type, resource.name, props, resource.urn)


def deployment_props() -> dict[str, Any]:
    return copy.deepcopy(dict(one(manager_wire(), TYPE_DEPLOYMENT).props))


# --------------------------------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------------------------------


def test_rules_have_unique_kebab_case_names_and_one_sentence_descriptions() -> None:
    names = [rule.name for rule in RULES]
    assert len(names) == len(set(names))
    for rule in RULES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name), rule.name
        assert rule.description.endswith(".") and ". " not in rule.description, rule.name
        assert rule.description[0].isupper(), rule.name


def test_rules_have_the_agreed_kinds_and_default_levels() -> None:
    expected = {
        "kservice-name-valid": (ResourceRule, Level.MANDATORY),
        "kservice-names-unique": (StackRule, Level.MANDATORY),
        "flyte-identity-consistent": (ResourceRule, Level.MANDATORY),
        "stopped-apps-are-private": (ResourceRule, Level.MANDATORY),
        "domain-mappings-target-public-apps": (StackRule, Level.MANDATORY),
        "request-timeout-within-knative-max": (StackRule, Level.MANDATORY),
        "knative-feature-flags-enabled": (StackRule, Level.ADVISORY),
        "autoscaling-bounded": (ResourceRule, Level.ADVISORY),
        "image-pinned": (ResourceRule, Level.ADVISORY),
        "resources-set": (ResourceRule, Level.ADVISORY),
        "no-privileged-pods": (ResourceRule, Level.MANDATORY),
        "no-plaintext-credentials": (ResourceRule, Level.ADVISORY),
        "rbac-no-wildcards": (ResourceRule, Level.MANDATORY),
        "sqlite-manager-single-replica": (StackRule, Level.MANDATORY),
    }
    assert {rule.name: (type(rule), rule.level) for rule in RULES} == expected


def test_settings_are_json_schemas_the_check_command_can_validate_with_valid_defaults() -> None:
    with_settings = {rule.name: sorted(rule.settings) for rule in RULES if rule.settings}
    assert with_settings == {
        "request-timeout-within-knative-max": ["maxRevisionTimeoutSeconds"],
        "knative-feature-flags-enabled": ["enabledFlags"],
        "image-pinned": ["requireDigest"],
        "no-plaintext-credentials": ["allowedNames"],
    }
    for rule in RULES:
        for key, schema in rule.settings.items():
            assert set(schema) <= SUPPORTED_SCHEMA_KEYWORDS, (rule.name, key)
            assert "description" in schema and "default" in schema, (rule.name, key)
            assert schema_problem(schema, schema["default"]) is None, (rule.name, key)


def test_rule_modules_import_neither_pulumi_nor_the_policy_sdk() -> None:
    # The rules must be importable by `flyte-apps check` and the tests without the pack's runtime.
    code = (
        "import sys, flyte_apps.policy.registry, flyte_apps.policy.runner\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pulumi', 'pulumi_policy', 'pulumi_kubernetes', 'kubernetes', 'grpc'))\n"
        "print(','.join(bad))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == ""


# --------------------------------------------------------------------------------------------------
# kservice-name-valid
# --------------------------------------------------------------------------------------------------


def test_rendered_kservice_name_is_valid() -> None:
    assert check("kservice-name-valid", minimal_kservice()) == []


@pytest.mark.parametrize(
    ("name", "complaint"),
    [
        ("9lives-proj-dev", "metadata.name '9lives-proj-dev' is not a DNS-1035 label"),
        ("My_App", "metadata.name 'My_App' is not a DNS-1035 label"),
        ("trailing-", "metadata.name 'trailing-' is not a DNS-1035 label"),
        ("a" * 64, f"metadata.name '{'a' * 64}' is 64 characters; KService names are at most 63"),
    ],
)
def test_kservice_name_that_knative_rejects_is_reported(name: str, complaint: str) -> None:
    props = minimal_kservice()
    props["metadata"]["name"] = name
    assert any(message.startswith(complaint) for message in check("kservice-name-valid", props))


def test_kservice_without_a_name_is_reported() -> None:
    props = minimal_kservice()
    del props["metadata"]["name"]
    assert check("kservice-name-valid", props) == [
        "metadata.name is not set: Flyte finds an app's KService by its name"
    ]


def test_name_rule_ignores_a_core_service() -> None:
    assert check("kservice-name-valid", {"metadata": {"name": "9-not-a-ksvc"}}, typ=TYPE_CORE_SERVICE) == []


# --------------------------------------------------------------------------------------------------
# kservice-names-unique
# --------------------------------------------------------------------------------------------------


def test_distinct_kservices_are_unique() -> None:
    first, second = minimal_kservice(), minimal_kservice(name="other")
    assert check_stack("kservice-names-unique", [as_resource(first, "a"), as_resource(second, "b")]) == []


def test_same_name_in_another_namespace_is_fine() -> None:
    first, second = minimal_kservice(), minimal_kservice()
    second["metadata"]["namespace"] = "apps"
    assert check_stack("kservice-names-unique", [as_resource(first, "a"), as_resource(second, "b")]) == []


def test_two_kservices_with_one_namespace_and_name_are_reported_on_the_second() -> None:
    first, second = minimal_kservice(), minimal_kservice()
    resources = [as_resource(first, "a-kservice"), as_resource(second, "b-kservice")]
    assert check_stack("kservice-names-unique", resources) == [
        (
            "metadata.name 'myapp-proj-dev' in namespace 'flyte' is also the name of a-kservice: one "
            "KService would overwrite the other",
            resources[1].urn,
        )
    ]


def test_a_missing_namespace_is_the_default_namespace() -> None:
    first, second = minimal_kservice(), minimal_kservice()
    del first["metadata"]["namespace"]
    second["metadata"]["namespace"] = "default"
    reports = check_stack("kservice-names-unique", [as_resource(first, "a"), as_resource(second, "b")])
    assert [message for message, _ in reports] == [
        "metadata.name 'myapp-proj-dev' in namespace 'default' is also the name of a: one KService "
        "would overwrite the other"
    ]


# --------------------------------------------------------------------------------------------------
# flyte-identity-consistent
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("app", [{}, {"stopped": True}, {"visibility": "cluster-local", "org": "acme"}])
def test_rendered_identity_is_consistent(app: dict[str, Any]) -> None:
    assert check("flyte-identity-consistent", minimal_kservice(**app)) == []


def test_missing_app_managed_label_is_reported() -> None:
    props = minimal_kservice()
    del props["metadata"]["labels"][c.LABEL_APP_MANAGED]
    assert check("flyte-identity-consistent", props) == [
        "metadata.labels['flyte.org/app-managed'] is missing, not 'true': Flyte's app service does "
        "not see the app"
    ]


def test_identity_label_that_disagrees_with_the_app_id_is_reported() -> None:
    props = minimal_kservice()
    props["metadata"]["labels"][c.LABEL_PROJECT] = "other"
    assert check("flyte-identity-consistent", props) == [
        "metadata.labels['flyte.org/project'] is 'other', but "
        "metadata.annotations['flyte.org/app-id'] 'proj/dev/myapp' says 'proj'"
    ]


def test_app_id_that_is_not_project_domain_name_is_reported() -> None:
    props = minimal_kservice()
    props["metadata"]["annotations"][c.ANNOTATION_APP_ID] = "myapp"
    assert check("flyte-identity-consistent", props) == [
        "metadata.annotations['flyte.org/app-id'] is 'myapp', not project/domain/name"
    ]


def test_spec_sha_that_is_not_the_hash_of_the_spec_is_reported() -> None:
    props = minimal_kservice()
    real = props["metadata"]["annotations"][c.ANNOTATION_SPEC_SHA]
    props["metadata"]["annotations"][c.ANNOTATION_SPEC_SHA] = "0000000000000000"
    assert check("flyte-identity-consistent", props) == [
        "metadata.annotations['flyte.org/spec-sha'] is '0000000000000000', but the hash of "
        f"metadata.annotations['flyte.org/spec'] is '{real}'"
    ]


def test_spec_of_another_app_is_caught_by_its_sha() -> None:
    # Copying one app's spec onto another without its sha is the mistake this guards against.
    props, other = minimal_kservice(), minimal_kservice(container={"image": "nginx:1.28"})
    props["metadata"]["annotations"][c.ANNOTATION_SPEC] = other["metadata"]["annotations"][c.ANNOTATION_SPEC]
    (message,) = check("flyte-identity-consistent", props)
    assert message.startswith("metadata.annotations['flyte.org/spec-sha'] is ")


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ("not base64!", "metadata.annotations['flyte.org/spec'] is not standard base64"),
        (
            base64.b64encode(b"\xff\xff\xff").decode(),
            "metadata.annotations['flyte.org/spec'] does not decode as a flyteidl2.app.Spec",
        ),
    ],
)
def test_spec_that_flyte_cannot_read_is_reported(spec: str, complaint: str) -> None:
    props = minimal_kservice()
    props["metadata"]["annotations"][c.ANNOTATION_SPEC] = spec
    assert check("flyte-identity-consistent", props) == [complaint]


# --------------------------------------------------------------------------------------------------
# stopped-apps-are-private
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "app", [{"stopped": True}, {}, {"autoscaling": {"minReplicas": 2, "maxReplicas": 3}}]
)
def test_rendered_apps_pass_the_stop_rule(app: dict[str, Any]) -> None:
    assert check("stopped-apps-are-private", minimal_kservice(**app)) == []


def test_stopped_app_that_is_public_is_reported() -> None:
    props = minimal_kservice(stopped=True)
    del props["metadata"]["labels"][c.LABEL_VISIBILITY]
    assert check("stopped-apps-are-private", props) == [
        "metadata.labels['networking.knative.dev/visibility'] is missing; a stopped app must be "
        "'cluster-local'"
    ]


def test_stopped_app_that_keeps_pods_is_reported() -> None:
    props = minimal_kservice(stopped=True)
    annotations = props["spec"]["template"]["metadata"]["annotations"]
    annotations[c.ANNOTATION_MIN_SCALE] = "1"
    del annotations[c.ANNOTATION_INITIAL_SCALE]
    assert check("stopped-apps-are-private", props) == [
        "spec.template.metadata.annotations['autoscaling.knative.dev/min-scale'] is '1'; a stopped app "
        "must have '0'",
        "spec.template.metadata.annotations['autoscaling.knative.dev/initial-scale'] is missing; a stopped "
        "app must have '0'",
    ]


# --------------------------------------------------------------------------------------------------
# autoscaling-bounded
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "app",
    [
        {"autoscaling": {"maxReplicas": 5}},
        {"visibility": "cluster-local"},
        {"stopped": True},
    ],
)
def test_bounded_or_private_apps_pass(app: dict[str, Any]) -> None:
    assert check("autoscaling-bounded", minimal_kservice(**app)) == []


def test_public_app_without_max_scale_is_reported() -> None:
    assert check("autoscaling-bounded", minimal_kservice()) == [
        "spec.template.metadata.annotations['autoscaling.knative.dev/max-scale'] is not set, so the public "
        "app scales without bound; set autoscaling.maxReplicas"
    ]


def test_public_app_with_unbounded_max_scale_is_reported() -> None:
    assert check("autoscaling-bounded", minimal_kservice(autoscaling={"maxReplicas": 0})) == [
        "spec.template.metadata.annotations['autoscaling.knative.dev/max-scale'] is '0' (unbounded) on a "
        "public app; set autoscaling.maxReplicas"
    ]


# --------------------------------------------------------------------------------------------------
# request-timeout-within-knative-max
# --------------------------------------------------------------------------------------------------


def timed(seconds: int, name: str = "myapp") -> WireResource:
    props = minimal_kservice(name=name)
    props["spec"]["template"]["spec"]["timeoutSeconds"] = seconds
    return as_resource(props, f"{name}-kservice")


def config_defaults(**settings: Any) -> WireResource:
    """The stack's own ``config-defaults`` patch, as ``flyte_apps.core.manager`` builds it."""
    objects = build_knative_objects(KnativeConfig("knative-serving"), platform(**settings))
    (patch,) = [to_wire(obj, stack="dev") for obj in objects if obj.name == "config-defaults"]
    return patch


FIX = (
    "Fix: lower the app's timeouts.request to at most {}s, or set flyte-apps:knative.manageConfig: true "
    "so the stack raises Knative's maximum to platform.maxRequestTimeout"
)


def test_timeouts_within_knatives_default_pass() -> None:
    assert check_stack("request-timeout-within-knative-max", [timed(300), timed(600, "b")]) == []


def test_timeout_above_the_policy_setting_is_reported() -> None:
    resource = timed(900)
    assert check_stack("request-timeout-within-knative-max", [resource]) == [
        (
            "spec.template.spec.timeoutSeconds 900 exceeds Knative's max-revision-timeout-seconds 600 (from "
            "the policy setting maxRevisionTimeoutSeconds): Knative rejects the revision. " + FIX.format(600),
            resource.urn,
        )
    ]


def test_the_setting_raises_the_limit() -> None:
    assert (
        check_stack("request-timeout-within-knative-max", [timed(900)], {"maxRevisionTimeoutSeconds": 1200})
        == []
    )


def test_the_stacks_config_defaults_patch_wins_over_the_setting() -> None:
    patch = config_defaults(maxRequestTimeout="3600s")
    assert patch.resource_type == TYPE_CONFIG_MAP_PATCH
    assert check_stack("request-timeout-within-knative-max", [patch, timed(1800)]) == []
    low = config_defaults(maxRequestTimeout="700s")
    resource = timed(900)
    assert check_stack(
        "request-timeout-within-knative-max", [low, resource], {"maxRevisionTimeoutSeconds": 3600}
    ) == [
        (
            "spec.template.spec.timeoutSeconds 900 exceeds Knative's max-revision-timeout-seconds 700 (from "
            "ConfigMapPatch knative-serving/config-defaults): Knative rejects the revision. "
            + FIX.format(700),
            resource.urn,
        )
    ]


def test_config_defaults_with_a_bad_maximum_is_reported_on_the_patch() -> None:
    patch = edited(config_defaults(), lambda p: p["data"].__setitem__("max-revision-timeout-seconds", "ten"))
    assert check_stack("request-timeout-within-knative-max", [patch, timed(900)]) == [
        ("data['max-revision-timeout-seconds'] is 'ten', not a positive whole number of seconds", patch.urn)
    ]


# --------------------------------------------------------------------------------------------------
# knative-feature-flags-enabled
# --------------------------------------------------------------------------------------------------

GPU_APP = {
    "container": {"image": "vllm/vllm-openai:v0.6.3", "resources": {"limits": {"gpu": 1}}},
    "accelerator": {"device": "nvidia-l4"},
    "sharedMemory": "1Gi",
}
FLAGS = "knative-feature-flags-enabled"


def gpu_kservice(name: str = "llm") -> WireResource:
    return as_resource(minimal_kservice(name=name, **GPU_APP), f"{name}-proj-dev-kservice")


def config_features(**data: Any) -> WireResource:
    """The stack's ``config-features`` patch, as ``flyte_apps.core.knative_settings`` builds it."""
    objects = build_knative_objects(KnativeConfig("knative-serving"), platform(), features=data)
    (patch,) = [to_wire(obj, stack="dev") for obj in objects if obj.name == "config-features"]
    return edited(patch, lambda props: props["data"].update(data))


def test_gated_fields_without_their_flags_are_reported_per_flag_on_the_kservice() -> None:
    resource = gpu_kservice()
    tail = (
        "which neither the stack's config-features patch nor the enabledFlags setting enables: Knative "
        "rejects the revision unless the cluster enables it"
    )
    assert check_stack(FLAGS, [resource]) == [
        (
            f"spec.template.spec.affinity need(s) Knative's feature flag {c.FLAG_AFFINITY}, {tail}",
            resource.urn,
        ),
        (
            f"spec.template.spec.tolerations need(s) Knative's feature flag {c.FLAG_TOLERATIONS}, {tail}",
            resource.urn,
        ),
    ]


def test_the_stacks_config_features_patch_enables_them() -> None:
    patch = config_features(**{c.FLAG_AFFINITY: "enabled", c.FLAG_TOLERATIONS: "allowed"})
    assert patch.resource_type == TYPE_CONFIG_MAP_PATCH
    assert check_stack(FLAGS, [patch, gpu_kservice()]) == []


def test_a_flag_the_patch_does_not_enable_is_still_reported() -> None:
    patch = config_features(**{c.FLAG_AFFINITY: "enabled", c.FLAG_TOLERATIONS: "disabled"})
    messages = [message for message, _ in check_stack(FLAGS, [patch, gpu_kservice()])]
    assert [message.split(" need(s)")[0] for message in messages] == ["spec.template.spec.tolerations"]


def test_the_setting_names_flags_the_cluster_enables() -> None:
    setting = {"enabledFlags": [c.FLAG_AFFINITY, c.FLAG_TOLERATIONS]}
    assert check_stack(FLAGS, [gpu_kservice()], setting) == []


def test_flags_knative_enables_by_default_and_apps_without_gated_fields_pass() -> None:
    shared_memory_only = as_resource(minimal_kservice(sharedMemory="1Gi"), "shm-kservice")
    assert check_stack(FLAGS, [shared_memory_only, as_resource(minimal_kservice(name="b"), "b")]) == []


def test_the_rendered_stack_with_manage_config_passes() -> None:
    config = minimal_config(**GPU_APP)
    config["flyte-apps:knative"] = {"manageConfig": True}
    resources = [to_wire(obj, stack="dev") for obj in plan_stack(config).objects()]
    assert check_stack(FLAGS, resources) == []


def test_an_unknown_config_features_is_not_judged() -> None:
    known = config_features(**{c.FLAG_AFFINITY: "enabled"})
    patch = edited(known, lambda props: props.__setitem__("data", UNKNOWN_OBJECT_VALUE))
    assert check_stack(FLAGS, [patch, gpu_kservice()]) == []


# --------------------------------------------------------------------------------------------------
# image-pinned
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "image",
    [
        "nginx:1.27",
        "ghcr.io/acme/dashboard:v1.4.2",
        "registry.local:5000/team/api:2.0",
        f"nginx@{DIGEST}",
        f"registry.local:5000/team/api:2.0@{DIGEST}",
    ],
)
def test_pinned_images_pass(image: str) -> None:
    assert check("image-pinned", minimal_kservice(container={"image": image})) == []


@pytest.mark.parametrize(
    ("image", "why"),
    [
        ("nginx:latest", "':latest' moves; name a version tag or a digest"),
        ("nginx", "it has no tag, so Kubernetes pulls ':latest'; name a version tag or a digest"),
        (
            "registry.local:5000/team/api",
            "it has no tag, so Kubernetes pulls ':latest'; name a version tag or a digest",
        ),
        ("registry.local:5000/team/api:latest", "':latest' moves; name a version tag or a digest"),
    ],
)
def test_unpinned_images_are_reported_naming_the_field(image: str, why: str) -> None:
    assert check("image-pinned", minimal_kservice(container={"image": image})) == [
        f"spec.template.spec.containers[0].image '{image}' is not pinned: {why}"
    ]


def test_an_image_with_a_digest_that_is_not_one_is_reported() -> None:
    # The program refuses such an image in the config; the pack judges what the engine hands it.
    kservice = minimal_kservice()
    kservice["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx@sha256:abc"
    assert check("image-pinned", kservice) == [
        "spec.template.spec.containers[0].image 'nginx@sha256:abc' is not pinned: "
        "'sha256:abc' is not an image digest"
    ]


def test_require_digest_refuses_a_tag_and_accepts_a_digest() -> None:
    config = {"requireDigest": True}
    assert check("image-pinned", minimal_kservice(container={"image": "nginx:1.27"}), config=config) == [
        "spec.template.spec.containers[0].image 'nginx:1.27' is not pinned: requireDigest is set, and it "
        "names no digest (@sha256:…)"
    ]
    assert (
        check("image-pinned", minimal_kservice(container={"image": f"nginx:1.27@{DIGEST}"}), config=config)
        == []
    )


def test_image_rule_covers_deployments_and_init_containers() -> None:
    props = deployment_props()
    pod = props["spec"]["template"]["spec"]
    pod["initContainers"] = [{"name": "init", "image": "busybox"}]
    assert check("image-pinned", props, typ=TYPE_DEPLOYMENT) == [
        "spec.template.spec.initContainers[0].image 'busybox' is not pinned: it has no tag, so Kubernetes "
        "pulls ':latest'; name a version tag or a digest"
    ]


def test_empty_image_is_not_pinned() -> None:
    assert image_problem("", require_digest=False) == "no image is set"


# --------------------------------------------------------------------------------------------------
# resources-set
# --------------------------------------------------------------------------------------------------


def test_container_with_requests_and_limits_passes() -> None:
    assert (
        check(
            "resources-set", minimal_kservice(container={"image": "nginx:1.27", "resources": FULL_RESOURCES})
        )
        == []
    )
    assert check("resources-set", deployment_props(), typ=TYPE_DEPLOYMENT) == []


def test_container_without_resources_is_reported() -> None:
    assert check("resources-set", minimal_kservice()) == [
        "spec.template.spec.containers[0].resources does not set requests.cpu, requests.memory, limits.cpu, "
        "limits.memory"
    ]


def test_container_with_some_resources_names_the_missing_ones() -> None:
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}
    assert check(
        "resources-set", minimal_kservice(container={"image": "nginx:1.27", "resources": resources})
    ) == ["spec.template.spec.containers[0].resources does not set limits.cpu"]


# --------------------------------------------------------------------------------------------------
# no-privileged-pods
# --------------------------------------------------------------------------------------------------


def test_rendered_pods_are_unprivileged() -> None:
    assert check("no-privileged-pods", minimal_kservice()) == []
    assert check("no-privileged-pods", deployment_props(), typ=TYPE_DEPLOYMENT) == []


def test_privileged_kservice_is_reported_field_by_field() -> None:
    props = minimal_kservice()
    pod = props["spec"]["template"]["spec"]
    pod["hostNetwork"] = True
    pod["hostPID"] = True
    pod["hostIPC"] = False
    pod["volumes"] = [{"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}}]
    pod["containers"][0]["securityContext"] = {"privileged": True, "allowPrivilegeEscalation": True}
    assert check("no-privileged-pods", props) == [
        "spec.template.spec.hostNetwork is true: the pod shares the node's namespace",
        "spec.template.spec.hostPID is true: the pod shares the node's namespace",
        "spec.template.spec.volumes[0].hostPath mounts the node's filesystem ('/var/run/docker.sock')",
        "spec.template.spec.containers[0].securityContext.privileged is true",
        "spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation is true",
    ]


def test_privilege_escalation_in_the_manager_deployment_is_reported() -> None:
    props = deployment_props()
    props["spec"]["template"]["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = True
    assert check("no-privileged-pods", props, typ=TYPE_DEPLOYMENT) == [
        "spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation is true"
    ]


# --------------------------------------------------------------------------------------------------
# no-plaintext-credentials
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "credential"),
    [
        ("AWS_SECRET_ACCESS_KEY", True),
        ("DB_PASSWORD", True),
        ("github-token", True),
        ("OPENAI_API_KEY", True),
        ("GOOGLE_APPLICATION_CREDENTIALS_JSON", True),
        ("client.secret", True),
        ("LOG_LEVEL", False),
        ("FLYTE_AWS_ENDPOINT", False),
        ("TOKEN_URL", False),
        ("PASSWORD_FILE", False),
        ("SECRET_NAME", False),
    ],
)
def test_credential_names(name: str, credential: bool) -> None:
    assert looks_like_credential(name) is credential


def test_kservice_env_without_credentials_passes() -> None:
    assert (
        check(
            "no-plaintext-credentials",
            minimal_kservice(container={"image": "nginx:1.27", "env": {"LOG": "x"}}),
        )
        == []
    )


def test_credential_in_app_env_is_reported_pointing_to_app_secrets() -> None:
    props = minimal_kservice(container={"image": "nginx:1.27", "env": {"DB_PASSWORD": "hunter2"}})
    assert check("no-plaintext-credentials", props) == [
        "spec.template.spec.containers[0].env[0] DB_PASSWORD carries a literal value; deliver it through "
        "the app's secrets (Flyte's secret store), not env or platform.defaultEnvVars"
    ]


def test_platform_default_env_credential_is_reported_in_every_kservice() -> None:
    config = minimal_config()
    config["flyte-apps:platform"] = {"defaultEnvVars": [{"API_TOKEN": "abc"}, {"LOG": "x"}]}
    config["flyte-apps:apps"].append({"name": "other", "container": {"image": "nginx:1.27"}})
    plan = plan_stack(config)
    for app in plan.apps:
        (message,) = check("no-plaintext-credentials", app.kservice)
        assert message.startswith("spec.template.spec.containers[0].env[0] API_TOKEN carries a literal value")


def test_allowed_names_and_empty_values_pass() -> None:
    props = minimal_kservice(
        container={"image": "nginx:1.27", "env": {"NOT_A_TOKEN": "x", "EMPTY_SECRET": ""}}
    )
    assert check("no-plaintext-credentials", props, config={"allowedNames": ["NOT_A_TOKEN"]}) == []


def test_credential_in_a_deployment_points_to_value_from() -> None:
    props = deployment_props()
    env = props["spec"]["template"]["spec"]["containers"][0]["env"]
    env.append({"name": "DB_PASSWORD", "value": "hunter2"})
    env.append({"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}})
    assert check("no-plaintext-credentials", props, typ=TYPE_DEPLOYMENT) == [
        f"spec.template.spec.containers[0].env[{len(env) - 2}] DB_PASSWORD carries a literal value; read it "
        "from a Secret with valueFrom.secretKeyRef"
    ]


def test_credential_in_the_managers_default_env_vars_is_reported() -> None:
    resources = manager_wire(defaultEnvVars=[{"LOG": "x"}, {"GITHUB_TOKEN": "ghp_x"}])
    config_map = one(resources, TYPE_CONFIG_MAP)
    assert check("no-plaintext-credentials", config_map.props, typ=TYPE_CONFIG_MAP) == [
        "data['config.yaml'] internalApps.defaultEnvVars[1] GITHUB_TOKEN carries a literal value; Flyte's "
        "app service copies it into every app in plain text: give apps credentials through their secrets "
        "(Flyte's secret store)"
    ]
    clean = one(manager_wire(defaultEnvVars=[{"LOG": "x"}]), TYPE_CONFIG_MAP)
    assert check("no-plaintext-credentials", clean.props, typ=TYPE_CONFIG_MAP) == []


def test_default_env_vars_as_a_map_are_read_too() -> None:
    text = yaml.safe_dump({"internalApps": {"defaultEnvVars": {"LOG": "x", "SLACK_TOKEN": "t"}}})
    props = {"metadata": {"name": "cfg"}, "data": {"config.yaml": text}}
    (message,) = check("no-plaintext-credentials", props, typ=TYPE_CONFIG_MAP)
    assert message.startswith("data['config.yaml'] internalApps.defaultEnvVars[1] SLACK_TOKEN carries")


# --------------------------------------------------------------------------------------------------
# rbac-no-wildcards
# --------------------------------------------------------------------------------------------------


def test_managers_cluster_role_has_no_wildcard() -> None:
    role = one(manager_wire(), TYPE_CLUSTER_ROLE)
    assert check("rbac-no-wildcards", role.props, typ=TYPE_CLUSTER_ROLE) == []


def test_wildcards_in_a_cluster_role_are_reported() -> None:
    role = edited(
        one(manager_wire(), TYPE_CLUSTER_ROLE),
        lambda p: p["rules"].append({"apiGroups": ["*"], "resources": ["pods/*"], "verbs": ["get", "*"]}),
    )
    index = len(role.props["rules"]) - 1
    assert check("rbac-no-wildcards", role.props, typ=TYPE_CLUSTER_ROLE) == [
        f"rules[{index}].apiGroups[0] '*' is a wildcard; name the apiGroups the role needs",
        f"rules[{index}].resources[0] 'pods/*' is a wildcard; name the resources the role needs",
        f"rules[{index}].verbs[1] '*' is a wildcard; name the verbs the role needs",
    ]


def test_wildcards_in_a_namespaced_role_are_reported() -> None:
    props = {"rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]}]}
    assert check("rbac-no-wildcards", props, typ=TYPE_ROLE) == [
        "rules[0].verbs[0] '*' is a wildcard; name the verbs the role needs"
    ]


# --------------------------------------------------------------------------------------------------
# sqlite-manager-single-replica
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [{}, {"replicas": 0}, {"database": POSTGRES}, {"database": POSTGRES, "replicas": 3}],
    ids=["sqlite", "sqlite-scaled-down", "postgres", "postgres-3-replicas"],
)
def test_rendered_managers_pass(raw: dict[str, Any]) -> None:
    assert check_stack("sqlite-manager-single-replica", manager_wire(raw)) == []


def replace_deployment(
    resources: list[WireResource], change: Callable[[dict[str, Any]], None]
) -> list[WireResource]:
    return [edited(r, change) if r.resource_type == TYPE_DEPLOYMENT else r for r in resources]


def test_sqlite_manager_with_two_replicas_is_reported_from_its_config() -> None:
    resources = replace_deployment(manager_wire(), lambda p: p["spec"].__setitem__("replicas", 2))
    deployment = one(resources, TYPE_DEPLOYMENT)
    assert check_stack("sqlite-manager-single-replica", resources) == [
        (
            "spec.replicas is 2, but the manager's database is SQLite (ConfigMap flyte-manager-config: "
            "database.type sqlite), which has a single writer: run one replica, or use a postgres database",
            deployment.urn,
        )
    ]


def test_sqlite_manager_that_rolls_is_reported() -> None:
    resources = replace_deployment(manager_wire(), lambda p: p["spec"].pop("strategy"))
    assert [message for message, _ in check_stack("sqlite-manager-single-replica", resources)] == [
        "spec.strategy.type is not set (Kubernetes uses RollingUpdate), but the manager's database is "
        "SQLite (ConfigMap flyte-manager-config: database.type sqlite): use 'Recreate' so the old pod lets "
        "go of the database before the new one starts"
    ]


def test_without_its_config_a_claim_backed_manager_counts_as_sqlite() -> None:
    resources = [r for r in manager_wire() if r.resource_type != TYPE_CONFIG_MAP]
    resources = replace_deployment(resources, lambda p: p["spec"].__setitem__("replicas", 2.0))
    assert [message for message, _ in check_stack("sqlite-manager-single-replica", resources)] == [
        "spec.replicas is 2, but the manager keeps its database on PersistentVolumeClaim "
        "'flyte-manager-data' (volume 'data'), which has a single writer: run one replica, or use a "
        "postgres database"
    ]


# --------------------------------------------------------------------------------------------------
# Preview-time unknowns
# --------------------------------------------------------------------------------------------------


def unknown_at(props: dict[str, Any], path: tuple[str | int, ...], sentinel: str) -> dict[str, Any]:
    changed = copy.deepcopy(props)
    target: Any = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = sentinel
    return changed


UNKNOWN_PLACES: list[tuple[tuple[str | int, ...], str]] = [
    (("metadata", "name"), UNKNOWN_STRING_VALUE),
    (("metadata", "namespace"), UNKNOWN_STRING_VALUE),
    (("metadata", "labels"), UNKNOWN_OBJECT_VALUE),
    (("metadata", "labels", c.LABEL_APP_STOPPED), UNKNOWN_STRING_VALUE),
    (("metadata", "labels", c.LABEL_VISIBILITY), UNKNOWN_STRING_VALUE),
    (("metadata", "annotations", c.ANNOTATION_SPEC), UNKNOWN_STRING_VALUE),
    (("metadata", "annotations", c.ANNOTATION_SPEC_SHA), UNKNOWN_STRING_VALUE),
    (("metadata", "annotations", c.ANNOTATION_APP_ID), UNKNOWN_STRING_VALUE),
    (("spec", "template"), UNKNOWN_OBJECT_VALUE),
    (("spec", "template", "metadata", "annotations"), UNKNOWN_OBJECT_VALUE),
    (("spec", "template", "spec", "timeoutSeconds"), UNKNOWN_NUMBER_VALUE),
    (("spec", "template", "spec", "containers"), UNKNOWN_ARRAY_VALUE),
    (("spec", "template", "spec", "containers", 0, "image"), UNKNOWN_STRING_VALUE),
    (("spec", "template", "spec", "containers", 0, "env"), UNKNOWN_ARRAY_VALUE),
    (("spec", "template", "spec", "containers", 0, "env", 0, "value"), UNKNOWN_STRING_VALUE),
    (("spec", "template", "spec", "containers", 0, "resources"), UNKNOWN_OBJECT_VALUE),
    (("spec", "template", "spec", "enableServiceLinks"), UNKNOWN_BOOLEAN_VALUE),
]


def bad_kservice() -> dict[str, Any]:
    """A stopped app that breaks nothing but whose every checked field is one an unknown can hide."""
    props = minimal_kservice(stopped=True, container={"image": "nginx:1.27", "env": {"API_TOKEN": "x"}})
    props["spec"]["template"]["spec"]["timeoutSeconds"] = 900
    return props


def run_every_rule(resources: list[WireResource]) -> list[str]:
    collect = Collector()
    for rule in RULES:
        if isinstance(rule, ResourceRule):
            for resource in resources:
                rule.validate(OfflineResourceArgs(resource, {}), collect)
        else:
            rule.validate(OfflineStackArgs(resources, {}), collect)
    return collect.messages


def test_the_proxy_really_raises_on_unknown_values() -> None:
    proxied = unknown_checking_proxy(
        unknown_at(minimal_kservice(), ("metadata", "name"), UNKNOWN_STRING_VALUE)
    )
    with pytest.raises(UnknownValueError):
        _ = proxied["metadata"]["name"]
    assert plain(proxied)["metadata"]["name"] is UNKNOWN


@pytest.mark.parametrize(
    ("path", "sentinel"),
    UNKNOWN_PLACES,
    ids=lambda v: ".".join(map(str, v)) if isinstance(v, tuple) else None,
)
@pytest.mark.parametrize(
    "wrap", [unknown_checking_proxy, lambda props: props], ids=["proxied", "raw-sentinels"]
)
def test_unknown_values_do_not_crash_any_rule_and_are_not_judged(
    path: tuple[str | int, ...], sentinel: str, wrap: Callable[[dict[str, Any]], Any]
) -> None:
    known = bad_kservice()
    baseline = run_every_rule([as_resource(known, "app-kservice")])
    props = wrap(unknown_at(known, path, sentinel))
    messages = run_every_rule([as_resource(props, "app-kservice")])
    assert set(messages) <= set(baseline), "an unknown value produced a new violation"
    assert not any(sentinel in message or "<unknown>" in message for message in messages)


@pytest.mark.parametrize(
    "path",
    [
        ("spec", "replicas"),
        ("spec", "strategy"),
        ("spec", "template", "spec", "volumes"),
        ("metadata", "name"),
    ],
)
def test_unknowns_in_manager_objects_do_not_crash_stack_rules(path: tuple[str, ...]) -> None:
    resources = manager_wire()
    proxied = [
        WireResource(
            r.resource_type,
            r.name,
            unknown_checking_proxy(
                unknown_at(dict(r.props), path, UNKNOWN_OBJECT_VALUE)
                if r.resource_type == TYPE_DEPLOYMENT
                else dict(r.props)
            ),
            r.urn,
        )
        for r in resources
    ]
    assert run_every_rule(proxied) == []
