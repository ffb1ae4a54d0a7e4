"""Knative feature flags: the field -> flag map is the one Knative's CRD notes, the flags an app's pod
spec needs are found wherever they are, ``config-features`` enables exactly those (never disabling
any), and a stack that does not manage Knative's config is warned which flags the cluster needs."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

import kubernetes_validate
import pytest
import yaml

from flyte_apps.core import constants as c
from flyte_apps.core.knative_features import (
    ENABLED_BY_DEFAULT,
    FEATURE_GATES,
    LIST_ITEMS,
    FlagUse,
    flags_used,
)
from flyte_apps.core.plan import StackPlan, plan_stack
from flyte_apps.core.pod_schema import load_knative_crd, revision_spec_schema, service_schema
from tests.support.config import KUBERNETES_VERSION, SCHEMAS_DIR, minimal_config

UPSTREAM_CRD: Final = SCHEMAS_DIR / "knative-serving-v1-service-crd.yaml"
NOTE: Final = re.compile(r"This is accessible behind a feature flag - (\S+)")
FEATURES: Final = "config-features"
GPU_APP: Final = {
    "container": {"image": "vllm/vllm-openai:v0.6.3", "resources": {"limits": {"gpu": 1}}},
    "accelerator": {"device": "nvidia-tesla-a100"},
    "sharedMemory": "1Gi",
}


# --------------------------------------------------------------------------------------------------
# The map and Knative's CRD
# --------------------------------------------------------------------------------------------------


def noted_gates(schema: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, str]]:
    """(path, flag) for every field of ``schema`` whose description carries Knative's feature-flag
    note, skipping a list's items when the list itself carries the same note."""
    note = NOTE.search(schema.get("description", ""))
    if note and path:
        yield path, note.group(1)
    for name, child in (schema.get("properties") or {}).items():
        yield from noted_gates(child, f"{path}.{name}" if path else name)
    items = schema.get("items")
    if isinstance(items, Mapping):
        for where, flag in noted_gates(items, f"{path}{LIST_ITEMS}"):
            if not (note and flag == note.group(1) and where == f"{path}{LIST_ITEMS}"):
                yield where, flag


def crd_gates(crd: Mapping[str, Any]) -> set[tuple[str, str]]:
    return set(noted_gates(revision_spec_schema(service_schema(crd))))


def test_the_map_is_the_shipped_crds_feature_flag_notes() -> None:
    assert {(gate.path, gate.flag) for gate in FEATURE_GATES} == crd_gates(load_knative_crd())


def test_the_map_is_knatives_published_crds_feature_flag_notes() -> None:
    upstream = yaml.safe_load(UPSTREAM_CRD.read_text(encoding="utf-8"))
    assert {(gate.path, gate.flag) for gate in FEATURE_GATES} == crd_gates(upstream)


def test_the_crd_notes_are_found_at_all() -> None:
    """Guards the comparison above against a walk that finds nothing on both sides."""
    gates = crd_gates(load_knative_crd())
    assert ("affinity", c.FLAG_AFFINITY) in gates
    assert ("containers[].env[].valueFrom.fieldRef", c.FLAG_FIELDREF) in gates
    assert len(gates) == len(FEATURE_GATES) > 20


def test_every_flag_name_is_a_named_constant() -> None:
    constants = {value for name, value in vars(c).items() if name.startswith("FLAG_")}
    assert {gate.flag for gate in FEATURE_GATES} | ENABLED_BY_DEFAULT | {c.FLAG_PVC_WRITE} <= constants


# --------------------------------------------------------------------------------------------------
# Which flags a pod spec needs
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param({"containers": [{"name": "app"}]}, (), id="plain-container"),
        pytest.param(
            {"containers": [{"name": "app"}], "affinity": {}, "tolerations": []},
            (FlagUse(c.FLAG_AFFINITY, ("affinity",)), FlagUse(c.FLAG_TOLERATIONS, ("tolerations",))),
            id="empty-map-and-list-are-set",
        ),
        pytest.param(
            {
                "containers": [{"name": "app"}],
                "hostNetwork": False,
                "dnsPolicy": "",
                "priorityClassName": None,
            },
            (),
            id="go-zero-values-are-unset",
        ),
        pytest.param(
            {
                "containers": [
                    {"name": "app"},
                    {
                        "name": "side",
                        "env": [
                            {"name": "A", "value": "1"},
                            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        ],
                        "volumeMounts": [
                            {"name": "v", "mountPath": "/v", "mountPropagation": "HostToContainer"}
                        ],
                    },
                ]
            },
            (
                FlagUse(c.FLAG_FIELDREF, ("containers[1].env[1].valueFrom.fieldRef",)),
                FlagUse(c.FLAG_MOUNT_PROPAGATION, ("containers[1].volumeMounts[0].mountPropagation",)),
            ),
            id="nested-in-list-items",
        ),
        pytest.param(
            {
                "containers": [{"name": "app"}],
                "volumes": [
                    {"name": "a", "emptyDir": {}},
                    {"name": "b", "persistentVolumeClaim": {"claimName": "b", "readOnly": True}},
                    {"name": "c", "persistentVolumeClaim": {"claimName": "c"}},
                ],
            },
            (
                FlagUse(c.FLAG_PVC, ("volumes[1].persistentVolumeClaim", "volumes[2].persistentVolumeClaim")),
                FlagUse(c.FLAG_PVC_WRITE, ("volumes[2].persistentVolumeClaim.readOnly",)),
                FlagUse(c.FLAG_VOLUMES_EMPTYDIR, ("volumes[0].emptyDir",)),
            ),
            id="volumes-and-a-writable-claim",
        ),
    ],
)
def test_flags_used_finds_every_gated_field_in_spec_order(
    pod: dict[str, Any], expected: tuple[FlagUse, ...]
) -> None:
    assert flags_used(pod) == expected


def test_the_fields_of_one_flag_are_listed_by_gate_then_in_spec_order() -> None:
    """One walk serves every gate: a flag's fields still come gate by gate (``FEATURE_GATES``' order)."""
    env = [
        {"name": "a", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
        {"name": "b", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "c", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
    ]
    assert flags_used({"containers": [{"name": "app", "env": env}]}) == (
        FlagUse(
            c.FLAG_FIELDREF,
            (
                "containers[0].env[1].valueFrom.fieldRef",
                "containers[0].env[0].valueFrom.resourceFieldRef",
                "containers[0].env[2].valueFrom.resourceFieldRef",
            ),
        ),
    )


def test_a_value_of_an_unknown_kind_is_not_judged() -> None:
    """During ``pulumi preview`` the policy pack sees markers for unknown values: never a flag."""
    marker = object()
    assert flags_used({"containers": [{"name": "app"}], "affinity": marker, "volumes": marker}) == ()


# --------------------------------------------------------------------------------------------------
# config-features: enables exactly what the stack's apps use
# --------------------------------------------------------------------------------------------------


def managed(*apps: dict[str, Any]) -> StackPlan:
    config = minimal_config()
    config["flyte-apps:apps"] = [{"name": f"app{index}", **app} for index, app in enumerate(apps)]
    config["flyte-apps:knative"] = {"manageConfig": True}
    return plan_stack(config)


def features_patch(plan: StackPlan) -> dict[str, Any] | None:
    found = [obj for obj in plan.knative if obj.name == FEATURES]
    assert len(found) <= 1
    return found[0].manifest if found else None


def test_config_features_enables_the_flags_of_every_app_once_each_and_nothing_else() -> None:
    plain = {"container": {"image": "nginx:1.27"}}
    pod = {
        "pod": {
            "spec": {
                "containers": [{"name": "app", "image": "nginx:1.27"}],
                "nodeSelector": {"pool": "cpu"},
                "tolerations": [{"key": "pool", "operator": "Exists"}],
            }
        }
    }
    manifest = features_patch(managed(plain, GPU_APP, pod))
    assert manifest is not None
    assert manifest["data"] == {
        c.FLAG_AFFINITY: "enabled",
        c.FLAG_NODE_SELECTOR: "enabled",
        c.FLAG_TOLERATIONS: "enabled",
        c.FLAG_VOLUMES_EMPTYDIR: "enabled",
    }
    assert list(manifest["data"]) == sorted(manifest["data"])


def test_config_features_never_disables_a_flag() -> None:
    """Only the flags the apps use, only ever as ``enabled``: another team's flag is left alone."""
    manifest = features_patch(managed(GPU_APP))
    assert manifest is not None
    assert set(manifest["data"].values()) == {c.KNATIVE_FEATURE_ENABLED}
    assert c.FLAG_HOST_NETWORK not in manifest["data"]


def test_no_flags_no_config_features_patch() -> None:
    assert features_patch(managed({"container": {"image": "nginx:1.27"}})) is None


def test_config_features_is_a_server_side_apply_patch_of_knatives_configmap() -> None:
    plan = managed(GPU_APP)
    (obj,) = [obj for obj in plan.knative if obj.name == FEATURES]
    assert obj.patch
    assert (obj.namespace, obj.manifest["metadata"]["annotations"]) == (
        "knative-serving",
        {c.ANNOTATION_PATCH_FORCE: "true"},
    )
    kubernetes_validate.validate(obj.manifest, KUBERNETES_VERSION, strict=True)


def test_knative_patches_come_before_the_kservices_in_apply_order() -> None:
    kinds = [obj.kind for obj in managed(GPU_APP).objects()]
    assert kinds.index("Service") > max(index for index, kind in enumerate(kinds) if kind == "ConfigMap")


# --------------------------------------------------------------------------------------------------
# Without manageConfig: a warning per app that needs flags
# --------------------------------------------------------------------------------------------------


def unmanaged(app: dict[str, Any], knative: dict[str, Any] | None = None) -> StackPlan:
    config = minimal_config(**app)
    if knative is not None:
        config["flyte-apps:knative"] = knative
    return plan_stack(config)


@pytest.mark.parametrize(
    "knative", [None, {"manageConfig": False}], ids=["no-knative-key", "manage-config-off"]
)
def test_without_manage_config_render_warns_which_flags_the_cluster_needs(
    knative: dict[str, Any] | None,
) -> None:
    plan = unmanaged(GPU_APP, knative)
    assert plan.knative == ()
    (warning,) = [w for w in plan.warnings if "feature flags" in w]  # beside the GPU probe warning
    assert warning == (
        "flyte-apps:apps[0]: app proj/dev/myapp uses pod-spec fields Knative accepts only behind feature "
        f"flags: {c.FLAG_AFFINITY} (affinity); {c.FLAG_TOLERATIONS} (tolerations). Knative's "
        "config-features must enable them, or set flyte-apps:knative.manageConfig: true to have this "
        "program enable them"
    )


def test_a_flag_knative_enables_by_default_needs_no_warning() -> None:
    """Shared memory is an emptyDir, which Knative allows unless a cluster turned it off."""
    plan = unmanaged({"sharedMemory": "1Gi"})
    assert plan.apps[0].feature_flags == (FlagUse(c.FLAG_VOLUMES_EMPTYDIR, ("volumes[0].emptyDir",)),)
    assert plan.warnings == ()


def test_an_app_without_gated_fields_gets_no_warning() -> None:
    assert unmanaged({}).warnings == ()
