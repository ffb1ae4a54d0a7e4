"""The Flyte manager and the Knative config patches: config validation and manifests (pure core)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from flyte_apps.core.config.models import PlatformConfig
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.knative_settings import KnativeConfig, build_knative_objects, load_knative_config
from flyte_apps.core.manager.load import load_manager_config
from flyte_apps.core.manager.models import ManagerConfig
from flyte_apps.core.manager.objects import build_manager_objects, manager_urls
from flyte_apps.core.objects import RenderedObject
from tests.support.config import KUBERNETES_VERSION, REPO_ROOT, SCHEMAS_DIR
from tests.support.manager import MANAGER_IMAGE as IMAGE
from tests.support.manager import platform

UPSTREAM_CRD = SCHEMAS_DIR / "flyte.org_taskactions.yaml"
LABELS = {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/name": "flyte-manager"}
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}
CRUD = ("create", "delete", "get", "list", "patch", "update", "watch")
POSTGRES = {
    "type": "postgres",
    "host": "db.example.internal",
    "dbname": "flyte",
    "username": "flyte",
    "passwordSecret": {"name": "flyte-db", "key": "password"},
}


def manager(raw: dict[str, Any] | None = None, on: PlatformConfig | None = None) -> ManagerConfig:
    problems: list[ConfigProblem] = []
    loaded = load_manager_config({"image": IMAGE, **(raw or {})}, on or platform(), problems)
    assert problems == []
    assert loaded is not None
    return loaded


def objects(raw: dict[str, Any] | None = None, on: PlatformConfig | None = None) -> list[RenderedObject]:
    settings = on or platform()
    return build_manager_objects(manager(raw, settings), settings)


def one(items: list[RenderedObject], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [obj.manifest for obj in items if obj.kind == kind and (name is None or obj.name == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def problems_of(raw: object, on: PlatformConfig | None = None) -> list[str]:
    problems: list[ConfigProblem] = []
    assert load_manager_config(raw, on or platform(), problems) is None
    return [str(problem) for problem in problems]


def config_file(items: list[RenderedObject]) -> dict[str, Any]:
    text = one(items, "ConfigMap", "flyte-manager-config")["data"]["config.yaml"]
    parsed = yaml.safe_load(text)
    assert isinstance(parsed, dict)
    return parsed


def container(items: list[RenderedObject]) -> dict[str, Any]:
    (only,) = one(items, "Deployment")["spec"]["template"]["spec"]["containers"]
    return only  # type: ignore[no-any-return]


def rule_set(items: list[RenderedObject]) -> set[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
    rules = one(items, "ClusterRole")["rules"]
    return {(tuple(r["apiGroups"]), tuple(r["resources"]), tuple(r["verbs"])) for r in rules}


# --------------------------------------------------------------------------------------------------
# Objects
# --------------------------------------------------------------------------------------------------


FULL_POSTGRES = {
    "database": POSTGRES,
    "replicas": 2,
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "flyte", "operator": "Equal", "value": "control", "effect": "NoSchedule"}],
    "resources": {"requests": {"cpu": 1}, "limits": {"cpu": None}},
    "installCrd": True,
}


@pytest.mark.parametrize(
    "raw",
    [{}, {"database": {"storage": {"size": "5Gi", "storageClass": "fast"}}}, FULL_POSTGRES],
    ids=["sqlite-defaults", "sqlite-storage-class", "postgres-everything"],
)
def test_every_manager_object_passes_strict_kubernetes_validation(raw: dict[str, Any]) -> None:
    items = objects(raw)
    assert items
    for obj in items:
        kubernetes_validate.validate(obj.manifest, KUBERNETES_VERSION, strict=True)


def test_sqlite_manager_objects_are_exactly_these() -> None:
    assert [(obj.kind, obj.name) for obj in objects()] == [
        ("ServiceAccount", "flyte-manager"),
        ("ClusterRole", "flyte-manager"),
        ("ClusterRoleBinding", "flyte-manager"),
        ("CustomResourceDefinition", "taskactions.flyte.org"),
        ("ConfigMap", "flyte-manager-config"),
        ("PersistentVolumeClaim", "flyte-manager-data"),
        ("Deployment", "flyte-manager"),
        ("Service", "flyte-manager-runs"),
        ("Service", "flyte-manager-queue"),
        ("Service", "flyte-manager-health"),
        ("Service", "flyte-pod-webhook"),
    ]
    assert not any(obj.patch for obj in objects())


def test_objects_are_labelled_and_namespaced_objects_live_in_the_platform_namespace() -> None:
    rendered = list(objects(on=platform(namespace="apps")))
    assert rendered, "the manager renders objects"
    for obj in rendered:
        assert obj.manifest["metadata"]["labels"] == LABELS, obj.name
        expected = "" if obj.kind in CLUSTER_SCOPED else "apps"
        assert obj.namespace == expected, f"{obj.kind} {obj.name}"


def test_install_crd_false_leaves_the_crd_out() -> None:
    assert "CustomResourceDefinition" not in {obj.kind for obj in objects({"installCrd": False})}


def test_binding_gives_the_cluster_role_to_the_manager_service_account() -> None:
    binding = one(objects(on=platform(namespace="apps")), "ClusterRoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "flyte-manager",
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "flyte-manager", "namespace": "apps"}]


# --------------------------------------------------------------------------------------------------
# RBAC
# --------------------------------------------------------------------------------------------------


def test_cluster_role_has_exactly_the_managers_rules() -> None:
    assert rule_set(objects()) == {
        (("",), ("namespaces",), ("create", "get", "list", "watch")),
        (("",), ("pods",), CRUD),
        (("",), ("pods/log",), ("get",)),
        (("",), ("podtemplates",), ("get", "list", "watch")),
        (("", "events.k8s.io"), ("events",), CRUD),
        (("flyte.org",), ("taskactions", "taskactions/status", "taskactions/finalizers"), CRUD),
        (
            ("admissionregistration.k8s.io",),
            ("mutatingwebhookconfigurations",),
            ("create", "get", "list", "patch", "update", "watch"),
        ),
        (("",), ("secrets",), CRUD),
        (("serving.knative.dev",), ("services", "revisions", "configurations", "routes"), CRUD),
    }
    assert len(one(objects(), "ClusterRole")["rules"]) == 9


@pytest.mark.parametrize("apps_enabled", [True, False])
def test_no_rbac_rule_holds_a_wildcard(apps_enabled: bool) -> None:
    rules = one(objects({"appsEnabled": apps_enabled}), "ClusterRole")["rules"]
    assert rules, "the ClusterRole has rules"
    for rule in rules:
        for key, values in rule.items():
            assert all("*" not in value for value in values), f"{key} of {rule}"


def test_knative_rules_are_absent_when_apps_are_disabled() -> None:
    items = objects({"appsEnabled": False})
    assert not any("serving.knative.dev" in groups for groups, _, _ in rule_set(items))
    assert len(rule_set(items)) == 8
    assert config_file(items)["internalApps"]["enabled"] is False


# --------------------------------------------------------------------------------------------------
# The TaskAction CRD
# --------------------------------------------------------------------------------------------------


def crd() -> dict[str, Any]:
    return one(objects(), "CustomResourceDefinition")


def task_action(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "runName": "rxp79l5qjpmmdd84qg7j",
        "actionName": "a0",
        "project": "flytesnacks",
        "domain": "development",
        "taskType": "python",
        "inputUri": "s3://flyte-data/metadata/rxp79l5qjpmmdd84qg7j/a0/inputs.pb",
        "runOutputBase": "s3://flyte-data/metadata/rxp79l5qjpmmdd84qg7j",
        "taskTemplate": "CgRweXRob24=",
        "envVars": {"LOG_LEVEL": "debug"},
        "interruptible": False,
    }
    body.update(spec)
    return {
        "apiVersion": "flyte.org/v1",
        "kind": "TaskAction",
        "metadata": {"name": "rxp79l5qjpmmdd84qg7j-a0", "namespace": "flyte"},
        "spec": {key: value for key, value in body.items() if value is not None},
        "status": {
            "attempts": 1,
            "conditions": [
                {
                    "type": "Progressing",
                    "status": "True",
                    "reason": "Executing",
                    "message": "",
                    "lastTransitionTime": "2026-08-21T10:00:00Z",
                }
            ],
            "phaseHistory": [{"phase": "Queued", "occurredAt": "2026-08-21T09:59:58Z"}],
            "pluginPhase": "Running",
        },
    }


def schema_validator() -> jsonschema.Draft7Validator:
    (version,) = crd()["spec"]["versions"]
    return jsonschema.Draft7Validator(version["schema"]["openAPIV3Schema"])


def test_crd_is_a_valid_apiextensions_v1_object() -> None:
    kubernetes_validate.validate(crd(), KUBERNETES_VERSION, strict=True)
    spec = crd()["spec"]
    assert spec["group"] == "flyte.org"
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "TaskAction",
        "listKind": "TaskActionList",
        "plural": "taskactions",
        "singular": "taskaction",
    }
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}
    columns = [
        (col["name"], col["jsonPath"], col.get("priority", 0)) for col in version["additionalPrinterColumns"]
    ]
    assert columns == [
        ("Run", ".spec.runName", 0),
        ("Action", ".spec.actionName", 0),
        ("TaskType", ".spec.taskType", 0),
        ("Status", ".status.conditions[?(@.type=='Progressing')].reason", 0),
        ("Age", ".metadata.creationTimestamp", 0),
        ("Progressing", ".status.conditions[?(@.type=='Progressing')].status", 1),
        ("Succeeded", ".status.conditions[?(@.type=='Succeeded')].status", 1),
        ("Failed", ".status.conditions[?(@.type=='Failed')].status", 1),
    ]


def test_crd_schema_accepts_a_realistic_task_action() -> None:
    errors = list(schema_validator().iter_errors(task_action()))
    assert errors == []


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ({"runName": None}, "'runName' is a required property"),
        ({"actionName": "a" * 31}, "is too long"),
        ({"actionType": "workflow"}, "is not one of ['task', 'condition']"),
        ({"envVars": {"N": 1}}, "is not of type 'string'"),
    ],
    ids=["missing-run-name", "action-name-over-30", "unknown-action-type", "non-string-env"],
)
def test_crd_schema_rejects_an_invalid_task_action(spec: dict[str, Any], complaint: str) -> None:
    messages = [error.message for error in schema_validator().iter_errors(task_action(**spec))]
    assert any(complaint in message for message in messages), messages


def test_crd_is_equivalent_to_flytes_published_crd() -> None:
    upstream = yaml.safe_load(UPSTREAM_CRD.read_text(encoding="utf-8"))
    ours = crd()
    assert (ours["apiVersion"], ours["kind"]) == (upstream["apiVersion"], upstream["kind"])
    assert ours["metadata"]["name"] == upstream["metadata"]["name"]
    for key in ("group", "names", "scope"):
        assert ours["spec"][key] == upstream["spec"][key], key
    (version,) = ours["spec"]["versions"]
    (expected,) = upstream["spec"]["versions"]
    for key in ("name", "served", "storage", "subresources", "additionalPrinterColumns"):
        assert version[key] == expected[key], key
    schema = version["schema"]["openAPIV3Schema"]
    upstream_schema = expected["schema"]["openAPIV3Schema"]
    assert schema["properties"]["spec"] == upstream_schema["properties"]["spec"]
    assert schema["properties"]["status"] == upstream_schema["properties"]["status"]
    assert ours["spec"] == upstream["spec"]


# --------------------------------------------------------------------------------------------------
# The config file
# --------------------------------------------------------------------------------------------------


DEV_PLATFORM = {
    "namespace": "flyte",
    "baseDomain": "localhost",
    "scheme": "http",
    "ingressAppsPort": 30081,
    "defaultRequestTimeout": "300s",
    "maxRequestTimeout": "600s",
    "defaultEnvVars": [
        {"FLYTE_AWS_ENDPOINT": "http://rustfs-svc.flyte.svc.cluster.local:9000"},
        {"_U_EP_OVERRIDE": "flyte-manager-runs.flyte:8090"},
        {"_U_INSECURE": "true"},
    ],
    "defaultServiceAccount": "apps",
    "watchBufferSize": 50,
}


def test_config_file_carries_the_seeds_keys() -> None:
    config = config_file(objects(on=platform(namespace="apps")))
    assert config["manager"] == {
        "runsService": {"host": "0.0.0.0", "port": 8090},
        "queueService": {"host": "0.0.0.0", "port": 8089},
        "executor": {"healthProbePort": 8081},
        "kubernetes": {"namespace": "apps"},
    }
    assert config["database"] == {"type": "sqlite", "sqlite": {"file": "/var/lib/flyte/flyte.db"}}
    assert config["logger"] == {"level": 4}


def test_config_file_carries_current_mains_keys() -> None:
    config = config_file(objects({"database": POSTGRES, "logLevel": "debug"}, on=platform(namespace="apps")))
    assert config["runs"] == {
        "server": {"host": "0.0.0.0", "port": 8090},
        "database": {
            "postgres": {
                "host": "db.example.internal",
                "port": 5432,
                "dbname": "flyte",
                "username": "flyte",
                "passwordPath": "/etc/flyte/secrets/database/password",
            }
        },
    }
    assert config["executor"] == {"healthProbeBindAddress": ":8081"}
    assert config["actions"] == {"kubernetes": {"namespace": "apps"}}
    assert config["webhook"]["listenPort"] == 9443
    assert config["webhook"]["serviceName"] == "flyte-pod-webhook"
    assert config["webhook"]["servicePort"] == 443
    assert config["logger"] == {"level": 5}
    assert "database" not in config  # the seed's SQLite section goes with SQLite only


def test_config_file_internal_apps_come_from_the_platform_settings() -> None:
    config = config_file(objects(on=platform(**DEV_PLATFORM)))
    assert config["internalApps"] == {
        "enabled": True,
        "baseDomain": "localhost",
        "scheme": "http",
        "ingressAppsPort": 30081,
        "defaultRequestTimeout": "5m0s",
        "maxRequestTimeout": "10m0s",
        "namespacedNameSuffixTemplate": "{{ project }}-{{ domain }}",
        "defaultEnvVars": [
            {"FLYTE_AWS_ENDPOINT": "http://rustfs-svc.flyte.svc.cluster.local:9000"},
            {"_U_EP_OVERRIDE": "flyte-manager-runs.flyte:8090"},
            {"_U_INSECURE": "true"},
        ],
        "watchBufferSize": 50,
        "defaultServiceAccount": "apps",
    }


def test_config_file_places_task_gpus_with_the_apps_platform_settings() -> None:
    gpus = {
        "gpuResourceName": "amd.com/gpu",
        "gpuDeviceNodeLabel": "example.com/gpu-model",
        "gpuPartitionSizeNodeLabel": "example.com/gpu-slice",
    }
    config = config_file(objects(on=platform(**DEV_PLATFORM, **gpus)))
    assert config["plugins"] == {
        "k8s": {
            "gpu-resource-name": "amd.com/gpu",
            "gpu-device-node-label": "example.com/gpu-model",
            "gpu-partition-size-node-label": "example.com/gpu-slice",
        }
    }


def test_config_file_carries_every_placement_setting_the_apps_are_placed_with() -> None:
    toleration = {"key": "flyte/gpu", "operator": "Exists", "effect": "NoSchedule"}
    settings = {
        "acceleratorDeviceClasses": {"google_tpu": {"resourceName": "google.com/tpu"}},
        "resourceTolerations": {"nvidia.com/gpu": [toleration]},
        "defaultTolerations": [toleration],
        "gpuUnpartitionedToleration": toleration,
        "gpuUnpartitionedNodeSelectorRequirement": {"key": "whole", "operator": "Exists"},
        "addTolerationsForExtendedResources": ["nvidia.com/gpu"],
        "defaultNodeSelector": {"pool": "flyte"},
        "schedulerName": "flyte-scheduler",
    }
    k8s = config_file(objects(on=platform(**DEV_PLATFORM, **settings)))["plugins"]["k8s"]
    assert {
        key: value for key, value in k8s.items() if not key.startswith("gpu-") or "unpartitioned" in key
    } == {
        "accelerator-device-classes": {"GOOGLE_TPU": {"resource-name": "google.com/tpu"}},
        "resource-tolerations": {"nvidia.com/gpu": [toleration]},
        "default-tolerations": [toleration],
        "gpu-unpartitioned-toleration": toleration,
        "gpu-unpartitioned-node-selector-requirement": {"key": "whole", "operator": "Exists"},
        "add-tolerations-for-extended-resources": ["nvidia.com/gpu"],
        "default-node-selector": {"pool": "flyte"},
        "scheduler-name": "flyte-scheduler",
    }


def test_config_file_is_sorted_yaml_and_the_checksum_is_its_sha256() -> None:
    items = objects(on=platform(**DEV_PLATFORM))
    text = one(items, "ConfigMap")["data"]["config.yaml"]
    assert list(yaml.safe_load(text)) == sorted(yaml.safe_load(text))
    annotations = one(items, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"flyte.org/config-sha256": hashlib.sha256(text.encode()).hexdigest()}
    assert objects(on=platform(**DEV_PLATFORM)) == items  # deterministic


@pytest.mark.parametrize(
    "change",
    [
        {"baseDomain": "apps.example.com"},
        {"maxRequestTimeout": "900s"},
        {"defaultEnvVars": [{"_U_INSECURE": "true"}]},
        {"namespace": "apps"},
    ],
    ids=lambda change: next(iter(change)),
)
def test_changing_a_platform_setting_changes_the_checksum_annotation(change: dict[str, Any]) -> None:
    def checksum(settings: dict[str, Any]) -> str:
        template = one(objects(on=platform(**settings)), "Deployment")["spec"]["template"]
        return str(template["metadata"]["annotations"]["flyte.org/config-sha256"])

    assert checksum({**DEV_PLATFORM, **change}) != checksum(DEV_PLATFORM)


def test_extra_config_is_deep_merged_last() -> None:
    extra = {
        "runs": {"storagePrefix": "s3://flyte-data"},
        "storage": {"type": "minio", "container": "flyte-data"},
        "webhook": {"certDir": "/etc/webhook/certs", "localCert": False},
    }
    config = config_file(objects({"extraConfig": extra}))
    assert config["runs"]["storagePrefix"] == "s3://flyte-data"
    assert config["runs"]["server"] == {"host": "0.0.0.0", "port": 8090}
    assert config["storage"] == {"type": "minio", "container": "flyte-data"}
    assert config["webhook"]["certDir"] == "/etc/webhook/certs"
    assert config["webhook"]["localCert"] is False
    assert config["webhook"]["listenPort"] == 9443


def test_extra_config_restating_a_generated_value_is_fine() -> None:
    config = config_file(objects({"extraConfig": {"runs": {"server": {"port": 8090}}}}))
    assert config["runs"]["server"]["port"] == 8090


# --------------------------------------------------------------------------------------------------
# The Deployment and the Services
# --------------------------------------------------------------------------------------------------


def test_deployment_runs_the_manager_with_the_generated_config() -> None:
    items = objects()
    deployment = one(items, "Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 1
    assert spec["selector"] == {"matchLabels": {"app.kubernetes.io/name": "flyte-manager"}}
    assert spec["template"]["metadata"]["labels"] == LABELS
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "flyte-manager"
    main = container(items)
    assert main["image"] == IMAGE
    assert main["args"] == ["--config", "/etc/flyte/config/config.yaml"]
    assert {"name": "config", "configMap": {"name": "flyte-manager-config"}} in pod["volumes"]
    assert {"name": "config", "mountPath": "/etc/flyte/config", "readOnly": True} in main["volumeMounts"]


def test_container_exposes_every_port_and_probes_the_runs_port() -> None:
    main = container(objects({"ports": {"runs": 9090}}))
    assert main["ports"] == [
        {"name": "runs", "containerPort": 9090, "protocol": "TCP"},
        {"name": "queue", "containerPort": 8089, "protocol": "TCP"},
        {"name": "health", "containerPort": 8081, "protocol": "TCP"},
        {"name": "webhook", "containerPort": 9443, "protocol": "TCP"},
    ]
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 9090}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 9090}
    assert main["startupProbe"]["httpGet"] == {"path": "/healthz", "port": 9090}


def test_pod_name_and_namespace_come_from_the_downward_api() -> None:
    assert container(objects())["env"] == [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    ]


def test_container_runs_restricted() -> None:
    items = objects()
    context = container(items)["securityContext"]
    assert context["runAsNonRoot"] is True
    assert context["runAsUser"] == 65532
    assert context["allowPrivilegeEscalation"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    pod = one(items, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert {"name": "tmp", "emptyDir": {}} in pod["volumes"]
    assert {"name": "tmp", "mountPath": "/tmp"} in container(items)["volumeMounts"]


def test_sqlite_state_lives_on_a_claim_and_the_deployment_recreates() -> None:
    items = objects({"database": {"storage": {"size": "5Gi", "storageClass": "fast"}}})
    claim = one(items, "PersistentVolumeClaim", "flyte-manager-data")
    assert claim["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "5Gi"}},
        "storageClassName": "fast",
    }
    deployment = one(items, "Deployment")
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "flyte-manager-data"}} in volumes
    assert {"name": "data", "mountPath": "/var/lib/flyte"} in container(items)["volumeMounts"]


def test_sqlite_claim_defaults_to_one_gibibyte_and_the_cluster_default_class() -> None:
    assert one(objects(), "PersistentVolumeClaim")["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
    }


def test_postgres_password_is_a_read_only_file_from_the_named_secret() -> None:
    items = objects({"database": POSTGRES, "replicas": 3})
    assert "PersistentVolumeClaim" not in {obj.kind for obj in items}
    deployment = one(items, "Deployment")
    assert deployment["spec"]["replicas"] == 3
    assert "strategy" not in deployment["spec"]
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert {
        "name": "database-password",
        "secret": {
            "secretName": "flyte-db",
            "items": [{"key": "password", "path": "password"}],
            "defaultMode": 0o440,
        },
    } in volumes
    mount = {"name": "database-password", "mountPath": "/etc/flyte/secrets/database", "readOnly": True}
    assert mount in container(items)["volumeMounts"]
    path = config_file(items)["runs"]["database"]["postgres"]["passwordPath"]
    assert path == f"{mount['mountPath']}/password"


def test_resources_have_defaults_that_can_be_changed_or_dropped() -> None:
    assert container(objects())["resources"] == {
        "requests": {"cpu": "250m", "memory": "512Mi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }
    changed = container(objects({"resources": {"requests": {"memory": "1Gi"}, "limits": {"cpu": None}}}))
    assert changed["resources"] == {
        "requests": {"cpu": "250m", "memory": "1Gi"},
        "limits": {"memory": "1Gi"},
    }


def test_node_selector_and_tolerations_are_set_only_when_given() -> None:
    pod = one(objects(), "Deployment")["spec"]["template"]["spec"]
    assert "nodeSelector" not in pod
    assert "tolerations" not in pod
    pod = one(objects(FULL_POSTGRES), "Deployment")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["tolerations"] == [
        {"key": "flyte", "operator": "Equal", "value": "control", "effect": "NoSchedule"}
    ]


def test_services_route_to_the_named_container_ports() -> None:
    items = objects(on=platform(namespace="apps"))
    routes = {}
    for name in ("flyte-manager-runs", "flyte-manager-queue", "flyte-manager-health", "flyte-pod-webhook"):
        service = one(items, "Service", name)
        assert service["spec"]["selector"] == {"app.kubernetes.io/name": "flyte-manager"}
        (port,) = service["spec"]["ports"]
        routes[name] = (port["port"], port["targetPort"])
    assert routes == {
        "flyte-manager-runs": (8090, "runs"),
        "flyte-manager-queue": (8089, "queue"),
        "flyte-manager-health": (8081, "health"),
        "flyte-pod-webhook": (443, "webhook"),
    }
    container_ports = {port["name"]: port["containerPort"] for port in container(items)["ports"]}
    assert container_ports["webhook"] == 9443


def test_manager_urls_are_the_in_cluster_service_urls() -> None:
    urls = manager_urls(objects(on=platform(namespace="apps")))
    assert urls.runs == "http://flyte-manager-runs.apps.svc.cluster.local:8090"
    assert urls.queue == "http://flyte-manager-queue.apps.svc.cluster.local:8089"


# --------------------------------------------------------------------------------------------------
# Config validation
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"image": IMAGE, "replicas": 2},
            [
                "flyte-apps:manager.replicas: 2 replicas cannot share one SQLite file (SQLite has one "
                "writer); use 1 replica, or a postgres database"
            ],
        ),
        ({}, ["flyte-apps:manager.image: is required when the manager is enabled"]),
        ({"image": "  "}, ["flyte-apps:manager.image: is required when the manager is enabled"]),
        (
            {"image": IMAGE, "database": {k: v for k, v in POSTGRES.items() if k != "passwordSecret"}},
            ["flyte-apps:manager.database.passwordSecret: is required for a postgres database"],
        ),
        (
            {"image": IMAGE, "imag": "x"},
            ["flyte-apps:manager.imag: unknown key 'imag'; did you mean 'image'?"],
        ),
        (
            {"image": IMAGE, "database": {"type": "postgres"}},
            [
                "flyte-apps:manager.database.host: is required for a postgres database",
                "flyte-apps:manager.database.dbname: is required for a postgres database",
                "flyte-apps:manager.database.username: is required for a postgres database",
                "flyte-apps:manager.database.passwordSecret: is required for a postgres database",
            ],
        ),
        (
            {"image": IMAGE, "database": {"host": "db", "storage": {"size": "2Gi"}}},
            ["flyte-apps:manager.database.host: applies only to a postgres database"],
        ),
        (
            {"image": IMAGE, "database": {**POSTGRES, "storage": {"size": "2Gi"}}},
            ["flyte-apps:manager.database.storage: applies only to a sqlite database"],
        ),
        (
            {
                "image": IMAGE,
                "database": {**POSTGRES, "passwordSecret": {"name": "Flyte_DB", "key": "pass word"}},
            },
            [
                "flyte-apps:manager.database.passwordSecret.name: 'Flyte_DB' is not a valid "
                "Kubernetes Secret name",
                "flyte-apps:manager.database.passwordSecret.key: 'pass word' is not a valid Secret key "
                "(letters, digits, '-', '_' or '.')",
            ],
        ),
        (
            {"image": IMAGE, "database": {"type": "mysql"}},
            ["flyte-apps:manager.database.type: input should be 'sqlite' or 'postgres' (got 'mysql')"],
        ),
        (
            {"image": IMAGE, "ports": {"queue": 8090, "webhook": 70000}},
            ["flyte-apps:manager.ports.webhook: input should be less than or equal to 65535 (got 70000)"],
        ),
        (
            {"image": IMAGE, "ports": {"health": 8090}},
            ["flyte-apps:manager.ports.health: port 8090 is already used by ports.runs"],
        ),
        (
            {"image": IMAGE, "resources": {"limits": {"memory": "lots"}}},
            ["flyte-apps:manager.resources.limits.memory: 'lots' is not a Kubernetes quantity"],
        ),
        (
            {"image": IMAGE, "logLevel": "verbose"},
            [
                "flyte-apps:manager.logLevel: input should be 'error', 'warn', 'info' or 'debug' "
                "(got 'verbose')"
            ],
        ),
        (
            {"image": IMAGE, "tolerations": [{"effect": "Never"}]},
            [
                "flyte-apps:manager.tolerations[0].effect: input should be 'NoSchedule', "
                "'PreferNoSchedule' or 'NoExecute' (got 'Never')"
            ],
        ),
    ],
    ids=[
        "sqlite-two-replicas",
        "missing-image",
        "blank-image",
        "postgres-without-password-secret",
        "unknown-key",
        "postgres-without-anything",
        "postgres-key-on-sqlite",
        "sqlite-key-on-postgres",
        "bad-secret-reference",
        "unknown-database-type",
        "port-out-of-range",
        "port-used-twice",
        "bad-quantity",
        "unknown-log-level",
        "unknown-toleration-effect",
    ],
)
def test_bad_manager_config_is_reported_with_its_key_path(raw: dict[str, Any], expected: list[str]) -> None:
    assert problems_of(raw) == expected


def test_every_problem_is_reported_in_one_pass() -> None:
    raw = {"replicas": 2, "ports": {"queue": 8090}}
    assert problems_of(raw) == [
        "flyte-apps:manager.image: is required when the manager is enabled",
        "flyte-apps:manager.replicas: 2 replicas cannot share one SQLite file (SQLite has one "
        "writer); use 1 replica, or a postgres database",
        "flyte-apps:manager.ports.queue: port 8090 is already used by ports.runs",
    ]


@pytest.mark.parametrize(
    ("extra", "path"),
    [
        ({"internalApps": {"baseDomain": "other.example.com"}}, "internalApps.baseDomain"),
        ({"actions": {"kubernetes": {"namespace": "elsewhere"}}}, "actions.kubernetes.namespace"),
        ({"runs": {"server": {"port": 9999}}}, "runs.server.port"),
        ({"database": {"sqlite": {"file": "/tmp/x.db"}}}, "database.sqlite.file"),
        ({"internalApps": "off"}, "internalApps"),
        ({"plugins": {"k8s": {"gpu-resource-name": "amd.com/gpu"}}}, "plugins.k8s.gpu-resource-name"),
    ],
)
def test_extra_config_cannot_override_what_objects_or_apps_depend_on(
    extra: dict[str, Any], path: str
) -> None:
    (problem,) = problems_of({"image": IMAGE, "extraConfig": extra})
    assert problem.startswith(f"flyte-apps:manager.extraConfig.{path}: would override the generated ")


def test_extra_config_cannot_place_tasks_where_apps_are_not_placed() -> None:
    (problem,) = problems_of(
        {"image": IMAGE, "extraConfig": {"plugins": {"k8s": {"scheduler-name": "mine"}}}}
    )
    assert problem == (
        "flyte-apps:manager.extraConfig.plugins.k8s.scheduler-name: would place tasks where apps are not "
        "placed; set flyte-apps:platform.schedulerName instead (the apps and this config both get it)"
    )


def test_absent_or_disabled_manager_deploys_nothing() -> None:
    problems: list[ConfigProblem] = []
    assert load_manager_config(None, platform(), problems) is None
    assert load_manager_config({"enabled": False}, platform(), problems) is None
    assert problems == []


def test_disabled_manager_still_reports_misspelled_keys() -> None:
    assert problems_of({"enabled": False, "replica": 2}) == [
        "flyte-apps:manager.replica: unknown key 'replica'; did you mean 'replicas'?"
    ]


def test_manager_without_a_valid_platform_is_validated_but_not_built() -> None:
    problems: list[ConfigProblem] = []
    assert load_manager_config({"image": IMAGE}, None, problems) is None
    assert problems == []
    assert load_manager_config({"image": IMAGE, "replicas": 2}, None, problems) is None
    assert [problem.path for problem in problems] == ["flyte-apps:manager.replicas"]


# --------------------------------------------------------------------------------------------------
# Knative
# --------------------------------------------------------------------------------------------------


def knative(raw: object) -> KnativeConfig | None:
    problems: list[ConfigProblem] = []
    loaded = load_knative_config(raw, problems)
    assert problems == []
    return loaded


def test_knative_config_is_left_alone_unless_managed() -> None:
    assert knative(None) is None
    assert knative({}) is None
    assert knative({"manageConfig": False, "namespace": "knative"}) is None


def test_managed_knative_config_is_four_patches_of_only_the_keys_flyte_needs() -> None:
    loaded = knative({"manageConfig": True})
    assert loaded == KnativeConfig(namespace="knative-serving")
    patches = build_knative_objects(loaded, platform(**DEV_PLATFORM))
    assert all(obj.patch for obj in patches)
    assert {obj.name: (obj.namespace, obj.manifest["data"]) for obj in patches} == {
        "config-autoscaler": ("knative-serving", {"allow-zero-initial-scale": "true"}),
        "config-network": ("knative-serving", {"domain-template": "{{.Name}}.{{.Domain}}"}),
        "config-domain": ("knative-serving", {"localhost": ""}),
        "config-defaults": (
            "knative-serving",
            {"max-revision-timeout-seconds": "600", "revision-timeout-seconds": "300"},
        ),
    }
    for obj in patches:
        assert (obj.manifest["apiVersion"], obj.kind) == ("v1", "ConfigMap")
        assert set(obj.manifest) == {"apiVersion", "kind", "metadata", "data"}
        assert obj.manifest["metadata"]["annotations"] == {"pulumi.com/patchForce": "true"}
        kubernetes_validate.validate(obj.manifest, KUBERNETES_VERSION, strict=True)


def test_knative_timeouts_are_whole_seconds_of_the_platform_timeouts() -> None:
    loaded = KnativeConfig(namespace="serving")
    patches = build_knative_objects(loaded, platform(defaultRequestTimeout="90.5s", maxRequestTimeout="1h"))
    (defaults,) = [obj for obj in patches if obj.name == "config-defaults"]
    assert defaults.namespace == "serving"
    assert defaults.manifest["data"] == {
        "max-revision-timeout-seconds": "3600",
        "revision-timeout-seconds": "90",
    }


def test_config_domain_is_skipped_without_a_base_domain() -> None:
    patches = build_knative_objects(KnativeConfig(namespace="knative-serving"), platform())
    assert sorted(obj.name for obj in patches) == ["config-autoscaler", "config-defaults", "config-network"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"manageConfig": True, "namespace": "Knative_Serving"},
            "flyte-apps:knative.namespace: 'Knative_Serving' is not a DNS-1123 label "
            "(lower-case letters, digits and '-', at most 63 characters)",
        ),
        (
            {"manageconfig": True},
            "flyte-apps:knative.manageconfig: unknown key 'manageconfig'; did you mean 'manageConfig'?",
        ),
        ("yes", "flyte-apps:knative: must be a map of keys, not 'yes'"),
    ],
)
def test_bad_knative_config_is_reported_with_its_key_path(raw: object, expected: str) -> None:
    problems: list[ConfigProblem] = []
    assert load_knative_config(raw, problems) is None
    assert [str(problem) for problem in problems] == [expected]


# --------------------------------------------------------------------------------------------------
# Layering
# --------------------------------------------------------------------------------------------------


def test_pure_modules_import_neither_pulumi_nor_kubernetes() -> None:
    script = (
        "import sys, flyte_apps.core.manager, flyte_apps.core.manager.crd\n"
        "layers = ('pulumi', 'pulumi_kubernetes', 'kubernetes')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in layers)\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=Path(REPO_ROOT), capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_manager_quantities_are_written_as_the_api_server_writes_them_back() -> None:
    """A Deployment and a PersistentVolumeClaim are typed objects: the API server stores ``1Gi`` for
    ``1024Mi``, and a render that kept ``1024Mi`` would be a change on every `pulumi up`."""
    items = objects(
        {
            "resources": {
                "requests": {"cpu": "0.5", "memory": "1024Mi"},
                "limits": {"cpu": "2000m", "memory": "2048Mi"},
            },
            "database": {"storage": {"size": "10240Mi"}},
        }
    )
    assert container(items)["resources"] == {
        "requests": {"cpu": "500m", "memory": "1Gi"},
        "limits": {"cpu": "2", "memory": "2Gi"},
    }
    claim = one(items, "PersistentVolumeClaim")
    assert claim["spec"]["resources"] == {"requests": {"storage": "10Gi"}}
