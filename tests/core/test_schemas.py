"""Rendered manifests are objects the API server would accept.

KServices are checked against the schema Knative Serving publishes in its ``services.serving.knative.dev``
CRD, made strict (unknown fields rejected, as the API server prunes or refuses them), so a misspelled
or mistyped field fails here instead of at ``pulumi up``; their pod specs (pod templates, GPUs,
accelerators and shared memory included) also against Kubernetes' own PodSpec schema. Core objects
(the namespace) are checked with ``kubernetes-validate`` in strict mode for a pinned Kubernetes version.

The CRD read here is the one in ``tests/fixtures/schemas/`` (test data that ships with the repository).
The strict reading of it is the product's own (``flyte_apps.core.pod_schema``), which
the tests below show has teeth.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import jsonschema
import kubernetes_validate
import pytest
import yaml

from flyte_apps.cli.stackfile import read_stack_config
from flyte_apps.core import constants as c
from flyte_apps.core.objects import Manifest
from flyte_apps.core.plan import StackPlan, plan_stack
from flyte_apps.core.pod_schema import service_schema, strict_schema
from tests.support.config import KUBERNETES_VERSION, REPO_ROOT, SCHEMAS_DIR

KNATIVE_SERVICE_CRD: Final = SCHEMAS_DIR / "knative-serving-v1-service-crd.yaml"

Validator = Any
"""A jsonschema validator (the package ships no type information)."""


# --------------------------------------------------------------------------------------------------
# The strict Knative Service schema
# --------------------------------------------------------------------------------------------------


def load_crd_schema(path: Path) -> dict[str, Any]:
    """The v1 ``openAPIV3Schema`` of the CRD at ``path``."""
    return service_schema(yaml.safe_load(path.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def kservice_validator() -> Validator:
    schema = strict_schema(load_crd_schema(KNATIVE_SERVICE_CRD))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_errors(validator: Validator, manifest: Mapping[str, Any]) -> list[str]:
    """Every violation as ``<json path>: <message>``, so a failure lists them all."""
    return sorted(f"{error.json_path}: {error.message}" for error in validator.iter_errors(manifest))


# --------------------------------------------------------------------------------------------------
# What gets rendered: the example stack and a few configs that exercise every KService branch
# --------------------------------------------------------------------------------------------------

PROJECT_DEFAULTS: Final = {"flyte-apps:project": "team", "flyte-apps:domain": "prod"}

STOPPED_APP: Final = {
    **PROJECT_DEFAULTS,
    "flyte-apps:apps": [
        {
            "name": "paused",
            "stopped": True,
            "container": {"image": "nginx:1.27", "ports": [{"containerPort": 8080}]},
            "autoscaling": {"minReplicas": 1, "maxReplicas": 3},
        }
    ],
}

CLUSTER_LOCAL_APP: Final = {
    **PROJECT_DEFAULTS,
    "flyte-apps:platform": {"baseDomain": "apps.example.com"},
    "flyte-apps:apps": [
        {"name": "internal", "visibility": "cluster-local", "container": {"image": "nginx:1.27"}}
    ],
}

EVERYTHING_SET: Final = {
    **PROJECT_DEFAULTS,
    "flyte-apps:platform": {
        "namespace": "apps",
        "baseDomain": "apps.example.com",
        "scheme": "https",
        "ingressAppsPort": 8443,
        "defaultRequestTimeout": "60s",
        "maxRequestTimeout": "900s",
        "defaultEnvVars": [{"REGION": "eu-west-1"}, {"TRACING": "on"}],
        "defaultServiceAccount": "flyte-apps",
        "adoptNamespace": True,
    },
    "flyte-apps:apps": [
        {
            "name": "everything",
            "org": "acme",
            "project": "ml",
            "domain": "staging",
            "container": {
                "image": "ghcr.io/example/everything:1.0.0",
                "command": ["python", "-m", "server"],
                "args": ["--port", "9000"],
                "env": [{"name": "WORKERS", "value": "4"}, {"name": "MODE", "value": "fast"}],
                "ports": [{"containerPort": 9000, "name": "h2c"}],
                "resources": {
                    "requests": {"cpu": "250m", "memory": "256Mi", "ephemeral-storage": "1Gi"},
                    "limits": {"cpu": 2, "memory": "1Gi"},
                },
            },
            "autoscaling": {
                "minReplicas": 1,
                "maxReplicas": 4,
                "metric": "concurrency",
                "target": 10,
                "scaledownPeriod": "2m30s",
            },
            "timeouts": {"request": "900s"},
            "serviceAccount": "runner",
        },
        {
            "name": "defaults",
            "container": {"image": "nginx:1.27", "env": {"B": "2", "A": "1"}},
            "autoscaling": {"metric": "rps", "target": 100},
        },
    ],
}


POD_PAYLOADS: Final = {
    **PROJECT_DEFAULTS,
    "flyte-apps:platform": {"applyPodMetadata": True, "defaultServiceAccount": "apps"},
    "flyte-apps:apps": [
        {
            "name": "pod-only",
            "pod": {
                "metadata": {"labels": {"team": "ml"}, "annotations": {"example.com/owner": "ml"}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "ghcr.io/acme/cache:1.2",
                            "ports": [{"containerPort": 8080, "name": "http1"}],
                            "volumeMounts": [
                                {"name": "cache", "mountPath": "/cache"},
                                {"name": "config", "mountPath": "/etc/cache", "readOnly": True},
                            ],
                            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}},
                        },
                        {"name": "sidecar", "image": "busybox:1.36", "args": ["sleep", "infinity"]},
                    ],
                    "volumes": [
                        {"name": "cache", "emptyDir": {}},
                        {"name": "config", "configMap": {"name": "cache-config"}},
                    ],
                    "nodeSelector": {"pool": "cpu"},
                    "enableServiceLinks": True,
                },
            },
        },
        {
            "name": "merged",
            "container": {
                "image": "ghcr.io/acme/api:2.0",
                "command": ["serve"],
                "env": {"MODE": "fast"},
                "ports": [{"containerPort": 9000, "name": "h2c"}],
                "resources": {"requests": {"cpu": "1", "gpu": 1}, "limits": {"memory": "2Gi"}},
            },
            "pod": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "env": [
                                {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
                            ],
                            "volumeMounts": [{"name": "logs", "mountPath": "/logs"}],
                        },
                        {
                            "name": "log-shipper",
                            "image": "fluent/fluent-bit:3.1",
                            "volumeMounts": [{"name": "logs", "mountPath": "/logs", "readOnly": True}],
                        },
                    ],
                    "volumes": [{"name": "logs", "emptyDir": {"sizeLimit": "1Gi"}}],
                    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                                ]
                            }
                        }
                    },
                }
            },
            "accelerator": {"device": "nvidia-l4", "unpartitioned": True},
            "sharedMemory": {"sizeLimit": "auto", "mountPath": "/dev/shm", "mountName": "shm"},
        },
        {
            "name": "llm",
            "container": {
                "image": "vllm/vllm-openai:v0.6.3",
                "resources": {"requests": {"gpu": 2}, "limits": {"gpu": 2, "memory": "24Gi"}},
            },
            "accelerator": {"device": "nvidia-tesla-a100", "partitionSize": "1g.5gb"},
            "sharedMemory": "2Gi",
            "secrets": [{"key": "hf-token", "mountRequirement": "ENV_VAR", "envVar": "HF_TOKEN"}],
        },
    ],
}


def dev_stack_plan() -> StackPlan:
    return plan_stack(read_stack_config(project_dir=REPO_ROOT, stack="dev"))


STACKS: Final[dict[str, Callable[[], StackPlan]]] = {
    "dev-stack": dev_stack_plan,
    "stopped-app": lambda: plan_stack(STOPPED_APP),
    "cluster-local-app": lambda: plan_stack(CLUSTER_LOCAL_APP),
    "everything-set": lambda: plan_stack(EVERYTHING_SET),
    "pod-payloads-and-gpus": lambda: plan_stack(POD_PAYLOADS),
}


def kservices(plan: StackPlan) -> list[Manifest]:
    return [
        obj.manifest
        for obj in plan.objects()
        if obj.manifest["apiVersion"] == c.KNATIVE_API_VERSION and obj.kind == c.KSERVICE_KIND
    ]


def core_objects(plan: StackPlan) -> list[Manifest]:
    """Objects in Kubernetes' own API groups (``v1``, ``apps/v1``, …: no dotted group)."""
    return [
        obj.manifest for obj in plan.objects() if "." not in str(obj.manifest["apiVersion"]).split("/")[0]
    ]


def pod_spec(kservice: Mapping[str, Any]) -> Manifest:
    spec: Manifest = kservice["spec"]["template"]["spec"]
    return spec


# --------------------------------------------------------------------------------------------------
# KServices against Knative's schema
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", list(STACKS))
def test_every_rendered_kservice_matches_knatives_strict_schema(
    kservice_validator: Validator, stack: str
) -> None:
    plan = STACKS[stack]()
    rendered = kservices(plan)
    assert len(rendered) == len(plan.apps) > 0
    errors = {item["metadata"]["name"]: schema_errors(kservice_validator, item) for item in rendered}
    assert errors == {name: [] for name in errors}


def test_stacks_exercise_the_optional_kservice_fields() -> None:
    """The schema test is only as good as its inputs: together they must render every optional field."""
    pods = [pod_spec(item) for make in STACKS.values() for item in kservices(make())]
    container_fields = {key for pod in pods for key in pod["containers"][0]}
    pod_fields = {key for pod in pods for key in pod}
    assert container_fields >= {"name", "image", "command", "args", "env", "ports", "resources"}
    assert pod_fields >= {
        "containers",
        "enableServiceLinks",
        "serviceAccountName",
        "timeoutSeconds",
        "volumes",
        "affinity",
        "tolerations",
        "nodeSelector",
    }
    assert container_fields >= {"volumeMounts"}
    assert len({len(pod["containers"]) for pod in pods}) > 1, "one-container and multi-container pods"
    templates = [
        item["spec"]["template"]["metadata"] for make in STACKS.values() for item in kservices(make())
    ]
    annotations = {key for template in templates for key in template.get("annotations", {})}
    assert {key for template in templates for key in template.get("labels", {})} >= {"team"}
    assert annotations >= {
        "example.com/owner",
        c.ANNOTATION_MIN_SCALE,
        c.ANNOTATION_MAX_SCALE,
        c.ANNOTATION_INITIAL_SCALE,
        c.ANNOTATION_METRIC,
        c.ANNOTATION_TARGET,
        c.ANNOTATION_WINDOW,
    }


def minimal_kservice() -> Manifest:
    return kservices(
        plan_stack({**PROJECT_DEFAULTS, "flyte-apps:apps": [{"name": "a", "container": {"image": "x"}}]})
    )[0]


def changed_kservice(change: Callable[[Manifest], None]) -> Manifest:
    manifest = minimal_kservice()
    change(manifest)
    return manifest


@pytest.mark.parametrize(
    ("manifest_change", "expected"),
    [
        pytest.param(
            lambda m: pod_spec(m).update(timeoutSecond=pod_spec(m).pop("timeoutSeconds")),
            "$.spec.template.spec: Additional properties are not allowed ('timeoutSecond' was unexpected)",
            id="misspelled-timeout-seconds",
        ),
        pytest.param(
            lambda m: pod_spec(m).update(timeoutSeconds="300"),
            "$.spec.template.spec.timeoutSeconds: '300' is not of type 'integer'",
            id="string-timeout-seconds",
        ),
        pytest.param(
            lambda m: pod_spec(m)["containers"][0].update(ports=[{"containerPort": "8080"}]),
            "$.spec.template.spec.containers[0].ports[0].containerPort: '8080' is not of type 'integer'",
            id="string-container-port",
        ),
        pytest.param(
            lambda m: pod_spec(m)["containers"][0].update(imagePulPolicy="Always"),
            "$.spec.template.spec.containers[0]: "
            "Additional properties are not allowed ('imagePulPolicy' was unexpected)",
            id="misspelled-container-field",
        ),
        pytest.param(
            lambda m: m["spec"].update(traffic=[{"percent": 100, "latestRevison": True}]),
            "$.spec.traffic[0]: Additional properties are not allowed ('latestRevison' was unexpected)",
            id="misspelled-traffic-field",
        ),
        pytest.param(
            lambda m: pod_spec(m).pop("containers"),
            "$.spec.template.spec: 'containers' is a required property",
            id="missing-containers",
        ),
        pytest.param(
            lambda m: pod_spec(m)["containers"][0].update(resources={"limits": {"cpu": True}}),
            "$.spec.template.spec.containers[0].resources.limits.cpu: "
            "True is not valid under any of the given schemas",
            id="boolean-quantity",
        ),
    ],
)
def test_strict_schema_catches_a_broken_kservice(
    kservice_validator: Validator, manifest_change: Callable[[Manifest], None], expected: str
) -> None:
    """Proves the validation has teeth: each break is reported at its path."""
    errors = schema_errors(kservice_validator, changed_kservice(manifest_change))
    assert expected in errors, errors


def test_int_or_string_fields_take_integers_and_strings(kservice_validator: Validator) -> None:
    def probe_and_quantities(manifest: Manifest) -> None:
        main = pod_spec(manifest)["containers"][0]
        main["resources"] = {"requests": {"cpu": 1, "memory": "1Gi"}}
        main["readinessProbe"] = {"httpGet": {"path": "/healthz", "port": 8080}}
        main["livenessProbe"] = {"tcpSocket": {"port": "http1"}}

    assert schema_errors(kservice_validator, changed_kservice(probe_and_quantities)) == []


def test_strict_schema_leaves_preserved_objects_open(kservice_validator: Validator) -> None:
    """Template metadata preserves unknown fields in Knative's CRD; strictness must not close it."""
    manifest = changed_kservice(lambda m: m["spec"]["template"]["metadata"].update(generateName="a-"))
    assert schema_errors(kservice_validator, manifest) == []


# --------------------------------------------------------------------------------------------------
# Pod specs against Kubernetes' own schema
# --------------------------------------------------------------------------------------------------

KNATIVE_REVISION_FIELDS: Final = ("timeoutSeconds", "containerConcurrency", "idleTimeoutSeconds")
"""Knative's own fields of a revision's pod spec: not Kubernetes PodSpec fields."""


def as_pod(kservice: Mapping[str, Any]) -> Manifest:
    """The revision's pod spec as the Pod Knative makes of it (without Knative's own fields)."""
    spec = {key: value for key, value in pod_spec(kservice).items() if key not in KNATIVE_REVISION_FIELDS}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "revision-pod"}, "spec": spec}


@pytest.mark.parametrize("stack", list(STACKS))
def test_every_rendered_pod_spec_is_a_valid_kubernetes_pod_spec(stack: str) -> None:
    items = list(kservices(STACKS[stack]()))
    assert items, stack
    for item in items:
        validated = kubernetes_validate.validate(as_pod(item), KUBERNETES_VERSION, strict=True)
        assert validated == kubernetes_validate.utils.major_minor(KUBERNETES_VERSION)


def test_the_pod_schema_check_would_catch_a_broken_toleration() -> None:
    """The Kubernetes check has teeth where Knative's CRD leaves objects open (tolerations)."""
    item = kservices(plan_stack(POD_PAYLOADS))[1]
    pod_spec(item)["tolerations"][0]["tolerationSecond"] = 5
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(as_pod(item), KUBERNETES_VERSION, strict=True)


# --------------------------------------------------------------------------------------------------
# Core objects with kubernetes-validate
# --------------------------------------------------------------------------------------------------


def test_pinned_kubernetes_version_is_shipped_by_kubernetes_validate() -> None:
    assert KUBERNETES_VERSION in kubernetes_validate.utils.all_versions()


@pytest.mark.parametrize("stack", list(STACKS))
def test_core_objects_validate_strictly_for_the_pinned_kubernetes_version(stack: str) -> None:
    objects = core_objects(STACKS[stack]())
    assert "Namespace" in [item["kind"] for item in objects]
    for item in objects:
        validated = kubernetes_validate.validate(item, KUBERNETES_VERSION, strict=True)
        assert validated == kubernetes_validate.utils.major_minor(KUBERNETES_VERSION)


def test_kservice_metadata_is_a_valid_object_meta() -> None:
    """Knative's CRD leaves top-level metadata as a bare object; check it as Kubernetes' ObjectMeta by
    carrying it on a ConfigMap, which kubernetes-validate knows."""
    checked = 0
    for make in STACKS.values():
        for item in kservices(make()):
            carrier = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": item["metadata"]}
            kubernetes_validate.validate(carrier, KUBERNETES_VERSION, strict=True)
            checked += 1
    # Regression: the loop once passed on stacks that rendered no KService at all.
    assert checked >= len(STACKS)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda ns: ns["metadata"].update(nmae="flyte"), id="unknown-metadata-field"),
        pytest.param(lambda ns: ns.update(spec={"finalizerz": ["kubernetes"]}), id="unknown-spec-field"),
        pytest.param(lambda ns: ns["metadata"]["labels"].update(ready=True), id="boolean-label-value"),
    ],
)
def test_strict_validation_rejects_a_broken_namespace(change: Callable[[Manifest], None]) -> None:
    namespace = core_objects(plan_stack({**PROJECT_DEFAULTS, "flyte-apps:apps": []}))[0]
    change(namespace)
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(namespace, KUBERNETES_VERSION, strict=True)
