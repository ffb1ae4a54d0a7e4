"""Pure: the Flyte manager, and the Knative settings Flyte's apps rely on, from the stack config keys
``flyte-apps:manager`` and ``flyte-apps:knative``.

Two generations of the manager image exist, and one generated ``config.yaml`` serves both, because
the manager's config loader (flytestdlib on viper) ignores keys it does not know:

* the seed's manager: Runs service on 8090, Queue service on 8089, executor health on 8081, and all
  state in one SQLite file (keys ``manager.*``, ``database.*``, ``logger``);
* Flyte's current main: every service on ``runs.server.port``, executor health on
  ``executor.healthProbeBindAddress``, PostgreSQL only (``runs.database.postgres``), a pod webhook
  (``webhook.*``) and the apps subsystem (``internalApps.*``, generated from ``flyte-apps:platform``
  so that the manager and this program's KServices agree).

Like ``components.config``, loading collects every problem, each with its key path, instead of
raising at the first one.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import yaml
from pydantic import Field

from components import constants as c
from components.config import (
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    MAX_LABEL_LEN,
    MAX_PORT,
    MAX_SUBDOMAIN_LEN,
    PREFIX,
    PlatformConfig,
    Quantity,
    _Model,
    _validate,
)
from components.crd import GROUP as FLYTE_GROUP
from components.crd import PLURAL as TASKACTIONS
from components.crd import build_taskaction_crd
from components.durations import NANOS_PER_SECOND, format_duration
from components.errors import ConfigProblem
from components.knative import Manifest
from components.objects import RenderedObject

KEY_MANAGER: Final = "manager"
KEY_KNATIVE: Final = "knative"

# --- Names of the manager's objects ---------------------------------------------------------------
MANAGER_NAME: Final = "flyte-manager"
"""ServiceAccount, ClusterRole, ClusterRoleBinding and Deployment."""
CONFIG_MAP_NAME: Final = "flyte-manager-config"
DATA_CLAIM_NAME: Final = "flyte-manager-data"
RUNS_SERVICE_NAME: Final = "flyte-manager-runs"
QUEUE_SERVICE_NAME: Final = "flyte-manager-queue"
HEALTH_SERVICE_NAME: Final = "flyte-manager-health"
# Flyte's webhook.serviceName default: the MutatingWebhookConfiguration the manager writes at startup
# points the API server at this Service, on WEBHOOK_SERVICE_PORT.
WEBHOOK_SERVICE_NAME: Final = "flyte-pod-webhook"
WEBHOOK_SERVICE_PORT: Final = 443
CONTAINER_NAME: Final = "manager"


# --- Files in the manager's container (the root filesystem is read-only) -----------------------------
CONFIG_FILE_KEY: Final = "config.yaml"
CONFIG_DIR: Final = "/etc/flyte/config"
CONFIG_PATH: Final = f"{CONFIG_DIR}/{CONFIG_FILE_KEY}"
DATA_DIR: Final = "/var/lib/flyte"
SQLITE_FILE: Final = f"{DATA_DIR}/flyte.db"
TMP_DIR: Final = "/tmp"  # an emptyDir of the pod's own
WEBHOOK_CERT_DIR: Final = f"{TMP_DIR}/flyte/webhook/certs"
DB_PASSWORD_DIR: Final = "/etc/flyte/secrets/database"
DB_PASSWORD_FILE: Final = "password"
DB_PASSWORD_PATH: Final = f"{DB_PASSWORD_DIR}/{DB_PASSWORD_FILE}"

HEALTH_PATH: Final = "/healthz"
READY_PATH: Final = "/readyz"
ANY_HOST: Final = "0.0.0.0"  # listen on every interface: the Services reach the pod by its IP
NONROOT_UID: Final = 65532  # distroless' "nonroot"; any non-zero id works with the upstream image
SECRET_FILE_MODE: Final = 0o440  # owner and fsGroup may read the password file, nobody else

PORT_KEYS: Final = ("runs", "queue", "health", "webhook")

# flytestdlib's logger.level is a logrus level number.
LOG_LEVELS: Final = {"error": 2, "warn": 3, "info": 4, "debug": 5}

# extraConfig may change these generated keys; every other generated key is something the objects
# below (Services, probes, mounts) or the apps' KServices depend on.
EXTRA_CONFIG_OVERRIDABLE: Final = (("webhook", "localCert"), ("webhook", "certDir"))

# --- Knative Serving's ConfigMaps (reference (i)) -----------------------------------------------
KNATIVE_NAMESPACE: Final = "knative-serving"
KNATIVE_CONFIG_AUTOSCALER: Final = "config-autoscaler"
KNATIVE_CONFIG_DEFAULTS: Final = "config-defaults"
KNATIVE_CONFIG_DOMAIN: Final = "config-domain"
KNATIVE_CONFIG_NETWORK: Final = "config-network"
KNATIVE_ALLOW_ZERO_INITIAL_SCALE: Final = "allow-zero-initial-scale"  # Stop writes initial-scale "0"
KNATIVE_DOMAIN_TEMPLATE: Final = "domain-template"
# Flyte's public URLs are <ksvc>.<baseDomain>: Knative's default template puts the namespace in too.
DOMAIN_TEMPLATE: Final = "{{.Name}}.{{.Domain}}"
KNATIVE_MAX_REVISION_TIMEOUT: Final = "max-revision-timeout-seconds"
KNATIVE_REVISION_TIMEOUT: Final = "revision-timeout-seconds"

LogLevel = Literal["error", "warn", "info", "debug"]


# --------------------------------------------------------------------------------------------------
# Config models
# --------------------------------------------------------------------------------------------------


class ManagerPorts(_Model):
    runs: int = Field(default=8090, ge=1, le=MAX_PORT)
    queue: int = Field(default=8089, ge=1, le=MAX_PORT)
    health: int = Field(default=8081, ge=1, le=MAX_PORT)
    webhook: int = Field(default=9443, ge=1, le=MAX_PORT)


class SqliteStorage(_Model):
    size: Quantity = "1Gi"
    storage_class: str | None = None


class SecretKeyRef(_Model):
    """A key of an existing Kubernetes Secret in the platform namespace."""

    name: str
    key: str


class Database(_Model):
    """``type: sqlite`` (the seed's manager) or ``type: postgres`` (Flyte's current main)."""

    type: Literal["sqlite", "postgres"] = "sqlite"
    storage: SqliteStorage = Field(default_factory=SqliteStorage)
    host: str | None = None
    port: int = Field(default=5432, ge=1, le=MAX_PORT)
    dbname: str | None = None
    username: str | None = None
    password_secret: SecretKeyRef | None = None


class ManagerRequests(_Model):
    cpu: Quantity | None = "250m"
    memory: Quantity | None = "512Mi"


class ManagerLimits(_Model):
    cpu: Quantity | None = "1"
    memory: Quantity | None = "1Gi"


class ManagerResources(_Model):
    """Each value has a default; ``null`` drops it."""

    requests: ManagerRequests = Field(default_factory=ManagerRequests)
    limits: ManagerLimits = Field(default_factory=ManagerLimits)


class Toleration(_Model):
    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None


class ManagerInput(_Model):
    """``flyte-apps:manager`` as written in the stack config."""

    enabled: bool = True
    """Writing the block enables the manager; ``enabled: false`` keeps the block but deploys nothing."""
    image: str | None = None
    replicas: int = Field(default=1, ge=0)
    ports: ManagerPorts = Field(default_factory=ManagerPorts)
    database: Database = Field(default_factory=Database)
    apps_enabled: bool = True
    resources: ManagerResources = Field(default_factory=ManagerResources)
    log_level: LogLevel = "info"
    extra_config: dict[str, Any] = Field(default_factory=dict)
    node_selector: dict[str, str] | None = None
    tolerations: tuple[Toleration, ...] = ()
    install_crd: bool = True


class KnativeInput(_Model):
    """``flyte-apps:knative`` as written in the stack config."""

    manage_config: bool = False
    namespace: str = KNATIVE_NAMESPACE


@dataclass(frozen=True)
class ManagerConfig:
    """A validated, enabled manager."""

    input: ManagerInput
    image: str

    @property
    def sqlite(self) -> bool:
        return self.input.database.type == "sqlite"


@dataclass(frozen=True)
class KnativeConfig:
    """Knative Serving's config, to be patched: exists only when ``manageConfig`` is true."""

    namespace: str


@dataclass(frozen=True)
class ManagerUrls:
    """In-cluster URLs of the manager's Runs and Queue services."""

    runs: str
    queue: str


# --------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------


def load_manager_config(
    raw: object, platform: PlatformConfig | None, problems: list[ConfigProblem]
) -> ManagerConfig | None:
    """Validate ``flyte-apps:manager`` (``raw`` is None when the key is absent), appending problems.

    Returns None when the key is absent, ``enabled: false``, invalid, or ``platform`` is None (an
    invalid platform, whose problems are reported where it is loaded). A disabled block is still
    checked for structure, so a misspelled key is reported before someone enables it.
    """
    if raw is None:
        return None
    path = PREFIX + KEY_MANAGER
    manager = _validate(ManagerInput, raw, path, problems)
    if manager is None or not manager.enabled:
        return None
    before = len(problems)
    image = manager.image.strip() if manager.image else ""
    if not image:
        problems.append(ConfigProblem(f"{path}.image", "is required when the manager is enabled"))
    problems.extend(_database_problems(manager, path))
    problems.extend(_duplicate_port_problems(manager.ports, f"{path}.ports"))
    if platform is not None:
        problems.extend(_extra_config_problems(manager, platform, f"{path}.extraConfig"))
    if len(problems) > before or platform is None:
        return None
    return ManagerConfig(input=manager, image=image)


def load_knative_config(raw: object, problems: list[ConfigProblem]) -> KnativeConfig | None:
    """Validate ``flyte-apps:knative``; returns a config only when ``manageConfig`` is true."""
    if raw is None:
        return None
    path = PREFIX + KEY_KNATIVE
    knative = _validate(KnativeInput, raw, path, problems)
    if knative is None:
        return None
    if not DNS1123_LABEL.match(knative.namespace) or len(knative.namespace) > MAX_LABEL_LEN:
        problems.append(
            ConfigProblem(
                f"{path}.namespace",
                f"'{knative.namespace}' is not a DNS-1123 label "
                "(lower-case letters, digits and '-', at most 63 characters)",
            )
        )
        return None
    if not knative.manage_config:
        return None
    return KnativeConfig(namespace=knative.namespace)


def _database_problems(manager: ManagerInput, path: str) -> list[ConfigProblem]:
    database = manager.database
    db_path = f"{path}.database"
    given = {Database.model_fields[name].alias or name for name in database.model_fields_set}
    found: list[ConfigProblem] = []
    if database.type == "sqlite":
        if manager.replicas > 1:
            found.append(
                ConfigProblem(
                    f"{path}.replicas",
                    f"{manager.replicas} replicas cannot share one SQLite file (SQLite has one "
                    "writer); use 1 replica, or a postgres database",
                )
            )
        for key in sorted(given & {"host", "port", "dbname", "username", "passwordSecret"}):
            found.append(ConfigProblem(f"{db_path}.{key}", "applies only to a postgres database"))
        return found
    if "storage" in given:
        found.append(ConfigProblem(f"{db_path}.storage", "applies only to a sqlite database"))
    required = {
        "host": database.host,
        "dbname": database.dbname,
        "username": database.username,
        "passwordSecret": database.password_secret,
    }
    for key, value in required.items():
        if not value:
            found.append(ConfigProblem(f"{db_path}.{key}", "is required for a postgres database"))
    secret = database.password_secret
    if secret is not None:
        if len(secret.name) > MAX_SUBDOMAIN_LEN or not DNS1123_SUBDOMAIN.match(secret.name):
            found.append(
                ConfigProblem(
                    f"{db_path}.passwordSecret.name",
                    f"'{secret.name}' is not a valid Kubernetes Secret name",
                )
            )
        if not secret.key or not all(ch.isalnum() or ch in "-._" for ch in secret.key):
            found.append(
                ConfigProblem(
                    f"{db_path}.passwordSecret.key",
                    f"'{secret.key}' is not a valid Secret key (letters, digits, '-', '_' or '.')",
                )
            )
    return found


def _duplicate_port_problems(ports: ManagerPorts, path: str) -> list[ConfigProblem]:
    found: list[ConfigProblem] = []
    seen: dict[int, str] = {}
    for key in PORT_KEYS:
        port = getattr(ports, key)
        if port in seen:
            found.append(ConfigProblem(f"{path}.{key}", f"port {port} is already used by ports.{seen[port]}"))
        else:
            seen[port] = key
    return found


def _extra_config_problems(manager: ManagerInput, platform: PlatformConfig, path: str) -> list[ConfigProblem]:
    """extraConfig must not silently change a value the manager's objects or the apps depend on
    (a port the Services and probes use, the namespace, the database, an ``internalApps`` setting
    the KServices were rendered with)."""
    found: list[ConfigProblem] = []

    def walk(extra: Mapping[str, Any], generated: Mapping[str, Any], keys: tuple[str, ...]) -> None:
        for key, value in extra.items():
            here = (*keys, str(key))
            if key not in generated or here in EXTRA_CONFIG_OVERRIDABLE:
                continue
            current = generated[key]
            if isinstance(current, dict) and isinstance(value, dict):
                walk(value, current, here)
            elif value != current:
                shown = "section" if isinstance(current, dict) else f"value {current!r}"
                found.append(
                    ConfigProblem(
                        f"{path}.{'.'.join(here)}",
                        f"would override the generated {shown}; set it through the "
                        f"{PREFIX}{KEY_MANAGER} or {PREFIX}platform settings instead",
                    )
                )

    walk(manager.extra_config, _generated_config(manager, platform), ())
    return found


# --------------------------------------------------------------------------------------------------
# The manager's config file
# --------------------------------------------------------------------------------------------------


def build_config_file(manager: ManagerConfig, platform: PlatformConfig) -> dict[str, Any]:
    """The manager's ``config.yaml`` as data: both generations' keys, then ``extraConfig``."""
    return deep_merge(_generated_config(manager.input, platform), manager.input.extra_config)


def render_config_file(manager: ManagerConfig, platform: PlatformConfig) -> str:
    """``config.yaml`` text, with sorted keys so that its checksum only changes with its content."""
    return yaml.safe_dump(build_config_file(manager, platform), sort_keys=True, default_flow_style=False)


def internal_apps_config(platform: PlatformConfig, *, apps_enabled: bool) -> dict[str, Any]:
    """Flyte's ``internalApps`` section, from the same settings the KServices are rendered with."""
    settings = platform.settings
    return {
        "enabled": apps_enabled,
        "baseDomain": settings.base_domain,
        "scheme": settings.scheme,
        "ingressAppsPort": settings.ingress_apps_port,
        "defaultRequestTimeout": format_duration(settings.default_request_timeout),
        "maxRequestTimeout": format_duration(settings.max_request_timeout),
        "namespacedNameSuffixTemplate": settings.namespaced_name_suffix_template,
        # Upstream's list of single-key maps, so the platform's order survives (reference (j)).
        "defaultEnvVars": [{var.name: var.value} for var in platform.default_env],
        "watchBufferSize": settings.watch_buffer_size,
        "defaultServiceAccount": settings.default_service_account,
    }


def deep_merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``extra`` merged in: maps merge key by key, any other value replaces."""
    merged = copy.deepcopy(dict(base))
    for key, value in extra.items():
        current = merged.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            merged[key] = deep_merge(current, value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _generated_config(manager: ManagerInput, platform: PlatformConfig) -> dict[str, Any]:
    namespace = platform.settings.namespace
    ports = manager.ports
    database = manager.database
    config: dict[str, Any] = {
        # The seed's manager.
        "manager": {
            "runsService": {"host": ANY_HOST, "port": ports.runs},
            "queueService": {"host": ANY_HOST, "port": ports.queue},
            "executor": {"healthProbePort": ports.health},
            "kubernetes": {"namespace": namespace},
        },
        "logger": {"level": LOG_LEVELS[manager.log_level]},
        # Flyte's current main.
        "runs": {"server": {"host": ANY_HOST, "port": ports.runs}},
        "executor": {"healthProbeBindAddress": f":{ports.health}"},
        "actions": {"kubernetes": {"namespace": namespace}},
        "secret": {"kubernetes": {"namespace": namespace}},
        "webhook": {
            "listenPort": ports.webhook,
            "serviceName": WEBHOOK_SERVICE_NAME,
            "servicePort": WEBHOOK_SERVICE_PORT,
            # The manager generates its webhook certificate at startup; written to a writable
            # directory, the webhook server can read it without a Secret volume that does not yet
            # exist when the pod starts.
            "localCert": True,
            "certDir": WEBHOOK_CERT_DIR,
            "embeddedSecretManagerConfig": {"k8sConfig": {"namespace": namespace}},
        },
        "internalApps": internal_apps_config(platform, apps_enabled=manager.apps_enabled),
    }
    if database.type == "sqlite":
        config["database"] = {"type": "sqlite", "sqlite": {"file": SQLITE_FILE}}
    else:
        config["runs"]["database"] = {
            "postgres": {
                "host": database.host,
                "port": database.port,
                "dbname": database.dbname,
                "username": database.username,
                "passwordPath": DB_PASSWORD_PATH,
            }
        }
    return config


def config_checksum(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------------------------------
# The manager's objects
# --------------------------------------------------------------------------------------------------


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
    # Imported here: components.render imports this module to plan the stack.
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
    spec: Manifest = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage.size}}}
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
    return pod


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


# --------------------------------------------------------------------------------------------------
# Knative Serving's config
# --------------------------------------------------------------------------------------------------


def build_knative_objects(knative: KnativeConfig, platform: PlatformConfig) -> list[RenderedObject]:
    """Server-side-apply patches of Knative's ConfigMaps that carry only the keys Flyte's apps need
    (reference (i)); everything else in those ConfigMaps stays as the cluster has it."""
    # Imported here: components.render imports this module to plan the stack.
    settings = platform.settings
    patches: list[tuple[str, dict[str, str]]] = [
        (KNATIVE_CONFIG_AUTOSCALER, {KNATIVE_ALLOW_ZERO_INITIAL_SCALE: c.TRUE}),
        (
            KNATIVE_CONFIG_DEFAULTS,
            {
                KNATIVE_MAX_REVISION_TIMEOUT: str(settings.max_request_timeout // NANOS_PER_SECOND),
                # Knative rejects a config-defaults whose default timeout is above the maximum (its
                # own default is 300 s): keep the two consistent with the platform's.
                KNATIVE_REVISION_TIMEOUT: str(settings.default_request_timeout // NANOS_PER_SECOND),
            },
        ),
        (KNATIVE_CONFIG_NETWORK, {KNATIVE_DOMAIN_TEMPLATE: DOMAIN_TEMPLATE}),
    ]
    if settings.base_domain:
        patches.append((KNATIVE_CONFIG_DOMAIN, {settings.base_domain: ""}))
    return [
        RenderedObject(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": name,
                    "namespace": knative.namespace,
                    "annotations": {c.ANNOTATION_PATCH_FORCE: c.TRUE},
                },
                "data": data,
            },
            patch=True,
        )
        for name, data in patches
    ]
