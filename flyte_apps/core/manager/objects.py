"""The manager's Kubernetes objects: the TaskAction CRD, RBAC, config, volume, Deployment and
Services, and the URLs of its services."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flyte_apps.core import constants as c
from flyte_apps.core.config.models import PlatformConfig
from flyte_apps.core.manager.config_file import config_checksum, render_config_file
from flyte_apps.core.manager.crd import GROUP as FLYTE_GROUP
from flyte_apps.core.manager.crd import PLURAL as TASKACTIONS
from flyte_apps.core.manager.crd import build_taskaction_crd
from flyte_apps.core.manager.layout import (
    CONFIG_DIR,
    CONFIG_FILE_KEY,
    CONFIG_MAP_NAME,
    CONFIG_PATH,
    CONTAINER_NAME,
    DATA_CLAIM_NAME,
    DATA_DIR,
    DB_PASSWORD_DIR,
    DB_PASSWORD_FILE,
    HEALTH_PATH,
    HEALTH_SERVICE_NAME,
    MANAGER_NAME,
    NONROOT_UID,
    PORT_KEYS,
    QUEUE_SERVICE_NAME,
    READY_PATH,
    RUNS_SERVICE_NAME,
    SECRET_FILE_MODE,
    TMP_DIR,
    WEBHOOK_SERVICE_NAME,
    WEBHOOK_SERVICE_PORT,
)
from flyte_apps.core.manager.models import ManagerConfig, ManagerResources
from flyte_apps.core.objects import Manifest, RenderedObject
from flyte_apps.core.pod_quantities import canonical_pod_quantities
from flyte_apps.core.quantities import canonical_quantity


@dataclass(frozen=True)
class ManagerUrls:
    """In-cluster URLs of the manager's Runs and Queue services."""

    runs: str
    queue: str


def manager_labels() -> dict[str, str]:
    return {c.LABEL_MANAGED_BY: c.MANAGED_BY_PULUMI, c.LABEL_NAME: MANAGER_NAME}


def cluster_role_rules(*, apps_enabled: bool) -> list[Manifest]:
    """What the unified manager needs (the flyte-binary chart's ClusterRole, reference (h)), without
    the chart's wildcard extras; the Knative rules only when the apps subsystem runs."""
    crud = ["create", "delete", "get", "list", "patch", "update", "watch"]
    rules: list[Manifest] = [
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["create", "get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": list(crud)},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["podtemplates"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": list(crud)},
        {
            "apiGroups": [FLYTE_GROUP],
            "resources": [TASKACTIONS, f"{TASKACTIONS}/status", f"{TASKACTIONS}/finalizers"],
            "verbs": list(crud),
        },
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["mutatingwebhookconfigurations"],
            "verbs": ["create", "get", "list", "patch", "update", "watch"],
        },
        {"apiGroups": [""], "resources": ["secrets"], "verbs": list(crud)},
    ]
    if apps_enabled:
        rules.append(
            {
                "apiGroups": [c.KNATIVE_GROUP],
                "resources": ["services", "revisions", "configurations", "routes"],
                "verbs": list(crud),
            }
        )
    return rules


def build_manager_objects(manager: ManagerConfig, platform: PlatformConfig) -> list[RenderedObject]:
    """Every object of the manager: RBAC, the CRD (unless ``installCrd: false``), its config, its
    SQLite volume claim, the Deployment and the Services."""
    # Imported here: flyte_apps.core.plan imports this module to plan the stack.
    namespace = platform.settings.namespace
    config_text = render_config_file(manager, platform)
    manifests: list[Manifest] = [
        _object("v1", "ServiceAccount", MANAGER_NAME, namespace),
        {
            **_object("rbac.authorization.k8s.io/v1", "ClusterRole", MANAGER_NAME),
            "rules": cluster_role_rules(apps_enabled=manager.input.apps_enabled),
        },
        {
            **_object("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", MANAGER_NAME),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": MANAGER_NAME},
            "subjects": [{"kind": "ServiceAccount", "name": MANAGER_NAME, "namespace": namespace}],
        },
    ]
    if manager.input.install_crd:
        manifests.append(build_taskaction_crd(manager_labels()))
    manifests.append(
        {
            **_object("v1", "ConfigMap", CONFIG_MAP_NAME, namespace),
            "data": {CONFIG_FILE_KEY: config_text},
        }
    )
    if manager.sqlite:
        manifests.append(_data_claim(manager, namespace))
    manifests.append(_deployment(manager, namespace, config_checksum(config_text)))
    ports = manager.input.ports
    manifests.extend(
        [
            _service(RUNS_SERVICE_NAME, namespace, "http", ports.runs, "runs"),
            _service(QUEUE_SERVICE_NAME, namespace, "http", ports.queue, "queue"),
            _service(HEALTH_SERVICE_NAME, namespace, "http", ports.health, "health"),
            _service(WEBHOOK_SERVICE_NAME, namespace, "https", WEBHOOK_SERVICE_PORT, "webhook"),
        ]
    )
    return [RenderedObject(manifest) for manifest in manifests]


def manager_urls(objects: Sequence[RenderedObject]) -> ManagerUrls:
    """The in-cluster URLs of the Runs and Queue Services among ``objects``."""
    services = {
        obj.name: obj for obj in objects if obj.kind == "Service" and obj.manifest["apiVersion"] == "v1"
    }
    urls = []
    for name in (RUNS_SERVICE_NAME, QUEUE_SERVICE_NAME):
        service = services.get(name)
        if service is None:
            msg = f"the manager's objects have no Service '{name}'"
            raise ValueError(msg)
        port = service.manifest["spec"]["ports"][0]["port"]
        urls.append(f"http://{name}.{service.namespace}.svc.cluster.local:{port}")
    return ManagerUrls(runs=urls[0], queue=urls[1])


def _object(api_version: str, kind: str, name: str, namespace: str | None = None) -> Manifest:
    metadata: Manifest = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = manager_labels()
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


def _data_claim(manager: ManagerConfig, namespace: str) -> Manifest:
    storage = manager.input.database.storage
    size = canonical_quantity(storage.size)  # as the API server writes it back
    spec: Manifest = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage.storage_class:
        spec["storageClassName"] = storage.storage_class
    return {**_object("v1", "PersistentVolumeClaim", DATA_CLAIM_NAME, namespace), "spec": spec}


def _service(name: str, namespace: str, port_name: str, port: int, target: str) -> Manifest:
    return {
        **_object("v1", "Service", name, namespace),
        "spec": {
            "type": "ClusterIP",
            "selector": {c.LABEL_NAME: MANAGER_NAME},
            "ports": [{"name": port_name, "port": port, "targetPort": target, "protocol": "TCP"}],
        },
    }


def _deployment(manager: ManagerConfig, namespace: str, checksum: str) -> Manifest:
    given = manager.input
    spec: Manifest = {
        "replicas": given.replicas,
        "selector": {"matchLabels": {c.LABEL_NAME: MANAGER_NAME}},
        "template": {
            "metadata": {"labels": manager_labels(), "annotations": {c.ANNOTATION_CONFIG_SHA: checksum}},
            "spec": _pod_spec(manager),
        },
    }
    if manager.sqlite:
        # One writer: the old pod must let go of the SQLite file (and its ReadWriteOnce volume)
        # before the new one starts.
        spec["strategy"] = {"type": "Recreate"}
    return {**_object("apps/v1", "Deployment", MANAGER_NAME, namespace), "spec": spec}


def _pod_spec(manager: ManagerConfig) -> Manifest:
    given = manager.input
    ports = given.ports
    volumes: list[Manifest] = [
        {"name": "config", "configMap": {"name": CONFIG_MAP_NAME}},
        {"name": "tmp", "emptyDir": {}},
    ]
    mounts: list[Manifest] = [
        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
        {"name": "tmp", "mountPath": TMP_DIR},
    ]
    if manager.sqlite:
        volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": DATA_CLAIM_NAME}})
        mounts.append({"name": "data", "mountPath": DATA_DIR})
    secret = given.database.password_secret
    if not manager.sqlite and secret is not None:
        volumes.append(
            {
                "name": "database-password",
                "secret": {
                    "secretName": secret.name,
                    "items": [{"key": secret.key, "path": DB_PASSWORD_FILE}],
                    "defaultMode": SECRET_FILE_MODE,
                },
            }
        )
        mounts.append({"name": "database-password", "mountPath": DB_PASSWORD_DIR, "readOnly": True})
    container: Manifest = {
        "name": CONTAINER_NAME,
        "image": manager.image,
        "args": ["--config", CONFIG_PATH],
        "env": [
            {"name": c.ENV_POD_NAME, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": c.ENV_POD_NAMESPACE, "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        ],
        "ports": [
            {"name": key, "containerPort": getattr(ports, key), "protocol": "TCP"} for key in PORT_KEYS
        ],
        # Startup runs database migrations: give it a minute before liveness counts.
        "startupProbe": _http_probe(HEALTH_PATH, ports.runs, period=2, failures=30),
        "livenessProbe": _http_probe(HEALTH_PATH, ports.runs, period=10, failures=3),
        "readinessProbe": _http_probe(READY_PATH, ports.runs, period=5, failures=3),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": NONROOT_UID,
            "runAsGroup": NONROOT_UID,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": mounts,
    }
    resources = _resources(given.resources)
    if resources:
        container["resources"] = resources
    pod: Manifest = {
        "serviceAccountName": MANAGER_NAME,
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": NONROOT_UID,
            "runAsGroup": NONROOT_UID,
            "fsGroup": NONROOT_UID,  # makes the data volume and the password file readable
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "volumes": volumes,
    }
    if given.node_selector:
        pod["nodeSelector"] = dict(given.node_selector)
    if given.tolerations:
        pod["tolerations"] = [
            toleration.model_dump(by_alias=True, exclude_none=True) for toleration in given.tolerations
        ]
    return canonical_pod_quantities(pod)  # as the API server writes them back: no diff on the next `up`


def _http_probe(path: str, port: int, *, period: int, failures: int) -> Manifest:
    return {
        "httpGet": {"path": path, "port": port},
        "periodSeconds": period,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


def _resources(resources: ManagerResources) -> Manifest:
    found: Manifest = {}
    for key, values in (("requests", resources.requests), ("limits", resources.limits)):
        entries = {name: value for name, value in (("cpu", values.cpu), ("memory", values.memory)) if value}
        if entries:
            found[key] = entries
    return found
