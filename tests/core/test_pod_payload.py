"""Pod payloads: a pod template rendered as Flyte's app service renders ``spec.pod`` (reference (c)4-5,
(g) buildPodSpec), merged with ``container`` as Flyte's SDK merges them, carried in the spec as a
deterministic ``K8sPod``, and its metadata put on the revision only when the platform says so."""

from __future__ import annotations

import copy
from typing import Any, Final

import pytest
from flyteidl2.core import tasks_pb2
from google.protobuf import json_format

from flyte_apps.core import constants as c
from flyte_apps.core.errors import ConfigError
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.spec import build_spec, decode_spec, serialize
from flyte_apps.core.stack import load_stack_config
from tests.support.config import minimal_config

ENDPOINT: Final = "http://{app_fqdn}-proj-dev.flyte.svc.cluster.local"
INJECTED: Final = [
    {"name": "INTERNAL_APP_ENDPOINT_PATTERN", "value": ENDPOINT},
    {"name": "FLYTE_INTERNAL_EXECUTION_PROJECT", "value": "proj"},
    {"name": "FLYTE_INTERNAL_EXECUTION_DOMAIN", "value": "dev"},
]
SIDECAR: Final = {"name": "sidecar", "image": "busybox:1.36", "args": ["sleep", "infinity"]}


def pod_app(spec: dict[str, Any], **app: Any) -> dict[str, Any]:
    """``minimal_config`` with a pod template instead of a container (``app``: more app keys)."""
    config = minimal_config(**app)
    entry = config["flyte-apps:apps"][0]
    if "container" not in app:
        del entry["container"]
    entry["pod"] = {**entry.get("pod", {}), "spec": spec}
    return config


def with_platform(config: dict[str, Any], **platform: Any) -> dict[str, Any]:
    config["flyte-apps:platform"] = platform
    return config


def revision(config: dict[str, Any]) -> dict[str, Any]:
    """The KService's revision template (metadata and pod spec)."""
    template: dict[str, Any] = plan_stack(config).apps[0].kservice["spec"]["template"]
    return template


def pod_spec_of(config: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = revision(config)["spec"]
    return spec


def spec_pod(config: dict[str, Any]) -> tasks_pb2.K8sPod:
    return decode_spec(plan_stack(config).apps[0].blob.b64).pod


# --------------------------------------------------------------------------------------------------
# Rendering, as upstream's buildPodSpec
# --------------------------------------------------------------------------------------------------


def test_pod_payload_renders_as_upstreams_build_pod_spec_vector() -> None:
    """Reference (g) buildPodSpec, pod_spec vector, made Knative-valid: port name ``http1`` (Knative
    refuses ``http``) and no ``restartPolicy`` (Knative refuses the field; the next test)."""
    spec = {
        "containers": [
            {
                "name": "app",
                "image": "my-image:v1",
                "ports": [{"containerPort": 80, "name": "http1"}],
                "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
            }
        ]
    }
    assert pod_spec_of(pod_app(spec)) == {
        "containers": [
            {
                "name": "app",
                "image": "my-image:v1",
                "ports": [{"containerPort": 80, "name": "http1"}],
                "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
                "env": INJECTED,
            }
        ],
        "enableServiceLinks": False,
        "timeoutSeconds": 300,
    }


def test_upstreams_vector_as_written_is_refused_where_knative_would_refuse_it() -> None:
    spec = {
        "containers": [
            {"name": "app", "image": "my-image:v1", "ports": [{"containerPort": 80, "name": "http"}]}
        ],
        "restartPolicy": "Always",
    }
    with pytest.raises(ConfigError) as caught:
        plan_stack(pod_app(spec))
    assert [problem.path for problem in caught.value.problems] == [
        "flyte-apps:apps[0].pod.spec.containers[0].ports[0].name",
        "flyte-apps:apps[0].pod.spec.restartPolicy",
    ]


def test_enable_service_links_is_false_unless_the_pod_template_sets_it() -> None:
    spec = {"containers": [{"name": "app", "image": "x:1"}], "enableServiceLinks": True}
    assert pod_spec_of(pod_app(spec))["enableServiceLinks"] is True


def test_the_pod_templates_own_fields_are_kept() -> None:
    spec = {
        "containers": [{"name": "app", "image": "x:1", "ports": [{"containerPort": 8080}]}, SIDECAR],
        "nodeSelector": {"pool": "cpu"},
        "imagePullSecrets": [{"name": "registry"}],
    }
    rendered = pod_spec_of(pod_app(spec))
    assert rendered["containers"][1] == SIDECAR, "Flyte's env goes into containers[0] only"
    assert (rendered["nodeSelector"], rendered["imagePullSecrets"]) == (
        {"pool": "cpu"},
        [{"name": "registry"}],
    )


@pytest.mark.parametrize(
    ("platform_default", "app_account", "pod_account", "expected"),
    [
        pytest.param("", None, None, None, id="nothing-anywhere"),
        pytest.param("", None, "from-pod", "from-pod", id="only-the-pod-template"),
        pytest.param("flyte-apps", None, "from-pod", "flyte-apps", id="platform-default-over-pod"),
        pytest.param("flyte-apps", "from-app", "from-pod", "from-app", id="app-over-everything"),
        pytest.param("", "from-app", None, "from-app", id="app-without-default"),
    ],
)
def test_service_account_rule_for_pod_payloads(
    platform_default: str, app_account: str | None, pod_account: str | None, expected: str | None
) -> None:
    """Reference (c)3: the app's service account, else the platform default, else the pod's own."""
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "x:1"}]}
    if pod_account:
        spec["serviceAccountName"] = pod_account
    config = pod_app(spec, **({"serviceAccount": app_account} if app_account else {}))
    rendered = pod_spec_of(with_platform(config, defaultServiceAccount=platform_default))
    assert rendered.get("serviceAccountName") == expected


def test_env_goes_into_containers_zero_defaults_first_then_its_own_then_flytes() -> None:
    spec = {
        "containers": [
            {
                "name": "app",
                "image": "x:1",
                "env": [{"name": "OWN", "value": "1"}],
                "ports": [{"containerPort": 80}],
            },
            {**SIDECAR, "env": [{"name": "SIDE", "value": "2"}]},
        ]
    }
    config = with_platform(pod_app(spec), defaultEnvVars=[{"Z": "z"}, {"A": "a"}])
    first, second = pod_spec_of(config)["containers"]
    assert first["env"] == [
        {"name": "Z", "value": "z"},
        {"name": "A", "value": "a"},
        {"name": "OWN", "value": "1"},
        *INJECTED,
    ]
    assert second["env"] == [{"name": "SIDE", "value": "2"}]


def test_timeout_seconds_is_written_as_for_a_container_payload() -> None:
    spec = {"containers": [{"name": "app", "image": "x:1"}]}
    assert pod_spec_of(pod_app(spec, timeouts={"request": "90s"}))["timeoutSeconds"] == 90


# --------------------------------------------------------------------------------------------------
# Merging `container` into the pod template, as Flyte's SDK does
# --------------------------------------------------------------------------------------------------

APP_CONTAINER: Final = {
    "image": "ghcr.io/acme/api:2.0",
    "command": ["serve"],
    "args": ["--port", "8080"],
    "env": {"FROM_APP": "1"},
    "ports": [{"containerPort": 8080, "name": "http1"}],
    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi", "gpu": 1}},
}


def merged(pod_container: dict[str, Any], *others: dict[str, Any], **app: Any) -> dict[str, Any]:
    """The rendered primary container of ``container`` (APP_CONTAINER unless given) merged into a pod
    template whose containers are ``pod_container`` and ``others``."""
    container = app.pop("container", APP_CONTAINER)
    config = pod_app({"containers": [pod_container, *others]}, container=copy.deepcopy(container), **app)
    first: dict[str, Any] = pod_spec_of(config)["containers"][0]
    return first


def test_the_pod_containers_own_image_wins_and_the_apps_fills_in() -> None:
    assert merged({"name": "app", "image": "own:1"})["image"] == "own:1"
    assert merged({"name": "app"})["image"] == "ghcr.io/acme/api:2.0"


def test_the_apps_command_and_args_replace_the_pod_containers() -> None:
    container = merged({"name": "app", "command": ["old"], "args": ["--old"]})
    assert (container["command"], container["args"]) == (["serve"], ["--port", "8080"])


def test_without_a_command_of_its_own_the_app_keeps_the_pod_containers() -> None:
    kept = merged({"name": "app", "command": ["own"], "args": ["--own"]}, container={"image": "x:1"})
    assert (kept["command"], kept["args"]) == (["own"], ["--own"])


def test_the_apps_env_and_ports_come_first_then_the_pod_containers() -> None:
    container = merged(
        {"name": "app", "env": [{"name": "FROM_POD", "value": "2"}], "ports": []},
    )
    assert container["env"] == [
        {"name": "FROM_APP", "value": "1"},
        {"name": "FROM_POD", "value": "2"},
        *INJECTED,
    ]
    assert container["ports"] == [{"containerPort": 8080, "name": "http1"}]


def test_resources_merge_key_by_key_and_the_app_wins() -> None:
    container = merged(
        {
            "name": "app",
            "resources": {
                "requests": {"cpu": "250m", "ephemeral-storage": "1Gi"},
                "limits": {"memory": "512Mi", "cpu": "2"},
            },
        }
    )
    assert container["resources"] == {
        "requests": {"cpu": "1", "ephemeral-storage": "1Gi", "memory": "1Gi", "nvidia.com/gpu": "1"},
        "limits": {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "1"},
    }


def test_gpu_renders_as_the_gpu_resource_name_never_as_gpu() -> None:
    config = with_platform(
        pod_app({"containers": [{"name": "app"}]}, container=APP_CONTAINER), gpuResourceName="amd.com/gpu"
    )
    resources = pod_spec_of(config)["containers"][0]["resources"]
    assert resources["limits"]["amd.com/gpu"] == "1"
    assert "gpu" not in resources["limits"] and "nvidia.com/gpu" not in resources["limits"]
    pod = spec_pod(config)
    limits = json_format.MessageToDict(pod.pod_spec)["containers"][0]["resources"]["limits"]
    assert limits == {"amd.com/gpu": "1", "memory": "2Gi"}


def test_a_primary_container_the_pod_template_does_not_list_is_added_first() -> None:
    """The SDK appends it; first is where Flyte's app service puts its env."""
    config = pod_app(
        {
            "containers": [{**SIDECAR, "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
            "volumes": [{"name": "v", "emptyDir": {}}],
        },
        container=APP_CONTAINER,
    )
    names = [container["name"] for container in pod_spec_of(config)["containers"]]
    assert names == ["app", "sidecar"]


def test_the_primary_container_can_be_named() -> None:
    config = pod_app({"containers": [{"name": "server"}, SIDECAR]}, container=APP_CONTAINER)
    config["flyte-apps:apps"][0]["pod"]["primaryContainerName"] = "server"
    first, second = pod_spec_of(config)["containers"]
    assert (first["name"], first["image"], second) == ("server", "ghcr.io/acme/api:2.0", SIDECAR)
    assert spec_pod(config).primary_container_name == "server"


# --------------------------------------------------------------------------------------------------
# The spec: spec.pod, deterministic
# --------------------------------------------------------------------------------------------------


def test_spec_carries_the_merged_pod_spec_and_metadata_and_no_container() -> None:
    config = pod_app({"containers": [{"name": "app"}, SIDECAR]}, container=APP_CONTAINER)
    config["flyte-apps:apps"][0]["pod"]["metadata"] = {"labels": {"team": "ml"}, "annotations": {"a/b": "c"}}
    spec = decode_spec(plan_stack(config).apps[0].blob.b64)
    assert spec.WhichOneof("app_payload") == "pod"
    assert not spec.HasField("container")
    assert dict(spec.pod.metadata.labels) == {"team": "ml"}
    assert dict(spec.pod.metadata.annotations) == {"a/b": "c"}
    assert spec.pod.primary_container_name == ""
    pod_spec = json_format.MessageToDict(spec.pod.pod_spec)
    assert pod_spec == {
        "containers": [
            {
                "name": "app",
                "image": "ghcr.io/acme/api:2.0",
                "command": ["serve"],
                "args": ["--port", "8080"],
                "ports": [{"containerPort": 8080.0, "name": "http1"}],
                "env": [{"name": "FROM_APP", "value": "1"}],
                "resources": {
                    "requests": {"cpu": "1", "memory": "1Gi"},
                    "limits": {"memory": "2Gi", "nvidia.com/gpu": "1"},
                },
            },
            SIDECAR,
        ]
    }


def test_spec_has_no_flyte_additions_only_what_the_app_says() -> None:
    """Default env, injected env, service account and shared memory are render-time additions."""
    config = with_platform(
        pod_app({"containers": [{"name": "app", "image": "x:1"}]}, sharedMemory="1Gi"),
        defaultEnvVars={"D": "1"},
        defaultServiceAccount="sa",
    )
    pod_spec = json_format.MessageToDict(spec_pod(config).pod_spec)
    assert pod_spec == {"containers": [{"name": "app", "image": "x:1"}]}


def test_metadata_given_empty_is_present_and_absent_metadata_is_absent() -> None:
    spec = {"containers": [{"name": "app", "image": "x:1"}]}
    empty = pod_app(spec)
    empty["flyte-apps:apps"][0]["pod"]["metadata"] = {}
    assert spec_pod(empty).HasField("metadata")
    assert not spec_pod(pod_app(spec)).HasField("metadata")


def test_struct_bytes_do_not_depend_on_key_order() -> None:
    """Upstream's Go marshals the Struct's map in random order ((j)6): a new revision for nothing."""
    first = {
        "containers": [{"name": "app", "image": "x:1", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
        "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1Gi", "medium": "Memory"}}],
        "nodeSelector": {"b": "2", "a": "1"},
    }
    second = {
        "nodeSelector": {"a": "1", "b": "2"},
        "volumes": [{"emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}, "name": "v"}],
        "containers": [{"volumeMounts": [{"mountPath": "/v", "name": "v"}], "image": "x:1", "name": "app"}],
    }
    blobs = [plan_stack(pod_app(spec)).apps[0].blob for spec in (first, second, first)]
    assert blobs[0] == blobs[1] == blobs[2]
    app = load_stack_config(pod_app(first)).apps[0]
    assert serialize(build_spec(app)).data == blobs[0].data


# --------------------------------------------------------------------------------------------------
# pod.metadata on the revision: only with applyPodMetadata
# --------------------------------------------------------------------------------------------------

METADATA: Final = {"labels": {"team": "ml"}, "annotations": {"sidecar.istio.io/inject": "false"}}


def with_metadata(*, apply: bool, **app: Any) -> dict[str, Any]:
    config = pod_app({"containers": [{"name": "app", "image": "x:1"}]}, **app)
    config["flyte-apps:apps"][0]["pod"]["metadata"] = METADATA
    return with_platform(config, applyPodMetadata=apply)


def test_pod_metadata_is_ignored_by_default_as_upstream_and_render_says_so() -> None:
    config = with_metadata(apply=False)
    assert revision(config)["metadata"] == {}
    (warning,) = plan_stack(config).warnings
    assert warning.startswith(
        "flyte-apps:apps[0].pod.metadata: kept in the app's spec but not put on its pods"
    )


def test_apply_pod_metadata_puts_labels_and_annotations_on_the_revision_template() -> None:
    config = with_metadata(apply=True, autoscaling={"maxReplicas": 2})
    assert revision(config)["metadata"] == {
        "labels": {"team": "ml"},
        "annotations": {
            c.ANNOTATION_MIN_SCALE: "0",
            c.ANNOTATION_MAX_SCALE: "2",
            "sidecar.istio.io/inject": "false",
        },
    }
    assert plan_stack(config).warnings == ()


def test_applied_pod_metadata_sits_beside_flytes_secret_labels() -> None:
    config = with_metadata(apply=True, secrets=[{"key": "token"}])
    metadata = revision(config)["metadata"]
    assert metadata["labels"] == {
        c.SECRET_LABEL_ORGANIZATION: c.SECRET_ORGANIZATION,
        c.SECRET_LABEL_PROJECT: "proj",
        c.SECRET_LABEL_DOMAIN: "dev",
        c.SECRET_LABEL_INJECT: "true",
        "team": "ml",
    }
    assert list(metadata["annotations"]) == [f"{c.ANNOTATION_SECRET_PREFIX}0", "sidecar.istio.io/inject"]


def test_pod_metadata_does_not_change_the_spec_whether_applied_or_not() -> None:
    blobs = {plan_stack(with_metadata(apply=apply)).apps[0].blob for apply in (True, False)}
    assert len(blobs) == 1
