"""The apps of Flyte's SDK fixtures (``tests/fixtures/sdk``) written as stack config, in two tiers.

- ``meaning``: the app as a user would write it in a stack file. Its spec equals the SDK's after
  dropping empty messages and lists, ``runtime_metadata`` (unless the config sets it) and the pool
  name ``default`` the SDK writes for an app that names none.
- ``bytes``: the same app spelling out what the SDK writes implicitly (``profile: {}``, ``inputs: []``,
  ``clusterPool: default``, ``runtimeMetadata``, ``serviceAccount: ""`` next to secrets). Its spec is
  byte for byte the SDK's.

What the SDK means by default is part of each app's meaning, so every app here says it: port 8080
(``flyte.app.AppEnvironment``'s default port) and 0..1 replicas (its default ``Scaling``).

Read by ``tests/core/test_sdk_parity.py`` and by ``tests/sdk/render_ours.py``, which writes the
specs for ``tests/sdk/make_fixtures.py --compare`` (``tests/fixtures/sdk/ours-comparison.json``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Final, Literal

from flyte_apps.core.plan import plan_stack

PROJECT: Final = "proj"
DOMAIN: Final = "dev"
BASE_DOMAIN: Final = "apps.example.com"
"""The platform of every case: subdomains need a base domain; nothing of it goes into a spec."""
IMAGE: Final = "ghcr.io/example/app:1.0"
SDK_VERSION: Final = "2.12.1"
FSERVE: Final = ["fserve", "--", "python", "-m", "app"]
SDK_SUBDOMAIN_HASH: Final = "73273ede"
"""``flyte.app.Subdomain(app_name='churn')``'s suffix: the first 8 hex digits of sha256('proj-dev')."""

Tier = Literal["meaning", "bytes", "probe"]

SECRETS: Final[list[dict[str, Any]]] = [
    # The SDK gives a secret with neither env var nor mount the env var DB_PASSWORD.
    {"key": "db-password", "mountRequirement": "ENV_VAR", "envVar": "DB_PASSWORD"},
    {"group": "openai", "key": "api-key", "mountRequirement": "ENV_VAR", "envVar": "OPENAI_API_KEY"},
    {"key": "tls-cert", "mountRequirement": "FILE"},
]
POD_TEMPLATE: Final[dict[str, Any]] = {
    "metadata": {"labels": {"team": "ml"}, "annotations": {"example.com/owner": "ml-platform"}},
    "spec": {
        "containers": [
            {"name": "app", "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]},
            {
                "name": "sidecar",
                "image": "busybox:1.36",
                "command": ["sh", "-c", "tail -f /dev/null"],
                "volumeMounts": [{"name": "cache", "mountPath": "/cache", "readOnly": True}],
            },
        ],
        "volumes": [{"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}],
    },
    # The SDK was given primary_container_name="app" and writes none: "app" is the default.
}


def without_empty(value: Any) -> Any:
    """``value`` without empty maps and lists, at any depth (the SDK writes ``args: []``,
    ``limits: {}``; the pod spec's Struct included)."""
    if isinstance(value, dict):
        kept = {key: without_empty(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item not in ({}, [])}
    if isinstance(value, list):
        return [without_empty(item) for item in value]
    return value


@dataclass(frozen=True)
class SdkCase:
    """One app as stack config, the SDK fixture it stands beside, and how the two must compare."""

    id: str
    """Unique; the file name (``<id>.json``) under which ``render_ours`` writes its spec."""
    fixture: str
    tier: Tier
    app: dict[str, Any]
    """The app's entry under ``flyte-apps:apps``."""
    unordered_env: bool = False
    """A map of env vars: Pulumi hands maps over as JSON, so they come in name order, not the SDK's."""

    def config(self) -> dict[str, Any]:
        return {
            "flyte-apps:project": PROJECT,
            "flyte-apps:domain": DOMAIN,
            "flyte-apps:platform": {"baseDomain": BASE_DOMAIN},
            "flyte-apps:apps": [copy.deepcopy(self.app)],
        }

    def spec_b64(self) -> str:
        """``flyte.org/spec`` as ``render`` writes it for this app."""
        return plan_stack(self.config()).apps[0].blob.b64


def app(name: str, *, container: dict[str, Any] | None = None, **keys: Any) -> dict[str, Any]:
    """An app as the SDK declares it by default: the image on port 8080, 0..1 replicas."""
    entry: dict[str, Any] = {
        "name": name,
        "container": {"image": IMAGE, "ports": [{"containerPort": 8080}], **(container or {})},
        "autoscaling": {"minReplicas": 0, "maxReplicas": 1},
    }
    entry.update(keys)
    return entry


def spelled_out(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` plus what the SDK writes without being asked."""
    result = copy.deepcopy(entry)
    if "cluster" not in result:
        result.setdefault("clusterPool", "default")
    result["runtimeMetadata"] = {"type": "FLYTE_SDK", "version": SDK_VERSION, "flavor": "python"}
    result.setdefault("profile", {})
    result.setdefault("inputs", [])
    if result.get("secrets") and "serviceAccount" not in result:
        result["serviceAccount"] = ""
    return result


NATURAL: Final[dict[str, dict[str, Any]]] = {
    "plain": app("plain"),
    "env": app(
        "env",
        container={
            "env": [
                {"name": "LOG_LEVEL", "value": "info"},
                {"name": "FEATURE_FLAGS", "value": "charts,export"},
                {"name": "A_LAST", "value": "1"},
            ]
        },
    ),
    "resources": app(
        "resources",
        container={"resources": {"requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "10Gi"}}},
    ),
    "resources-limits": app(
        "resources-limits",
        container={
            "resources": {
                "requests": {"cpu": "250m", "memory": "256Mi", "ephemeral-storage": "2Gi"},
                "limits": {"cpu": "1", "memory": "512Mi"},
            }
        },
    ),
    "autoscaling-concurrency": app(
        "autoscaling-concurrency",
        autoscaling={
            "minReplicas": 1,
            "maxReplicas": 5,
            "metric": "concurrency",
            "target": 10,
            "scaledownPeriod": "300s",
        },
    ),
    "autoscaling-request-rate": app(
        "autoscaling-request-rate",
        autoscaling={
            "minReplicas": 0,
            "maxReplicas": 3,
            "metric": "rps",
            "target": 50,
            "scaledownPeriod": "90s",
        },
    ),
    "autoscaling-fixed": app("autoscaling-fixed", autoscaling={"minReplicas": 2, "maxReplicas": 2}),
    "timeout": app("timeout", timeouts={"request": "120s"}),
    "secrets": app("secrets", secrets=SECRETS),
    "service-account": app("service-account", serviceAccount="app-runner"),
    "secrets-service-account": app("secrets-service-account", secrets=SECRETS, serviceAccount="app-runner"),
    "public": app("public", requiresAuth=False),
    "command-args": app(
        "command-args",
        container={"command": ["python", "-m", "http.server"], "args": ["8080", "--bind", "0.0.0.0"]},
    ),
    "command-args-strings": app(
        "command-args-strings",
        # The SDK splits command and args given as strings with shlex.split.
        container={
            "command": ["uvicorn", "app:api"],
            "args": ["--host", "0.0.0.0", "--port", "8080", "--log-level", "debug"],
        },
    ),
    "port": app("port", container={"ports": [{"containerPort": 9000, "name": "h2c"}]}),
    "pod-template": app(
        "pod-template",
        container={"env": {"CACHE_DIR": "/cache"}, "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
        pod=POD_TEMPLATE,
    ),
    "gpu": app(
        "gpu",
        container={
            "resources": {"requests": {"cpu": "4", "memory": "16Gi", "gpu": 1, "ephemeral-storage": "50Gi"}}
        },
        accelerator={"device": "nvidia-tesla-a100"},
        sharedMemory="2Gi",
    ),
    "gpu-partition": app(
        "gpu-partition",
        container={"resources": {"requests": {"gpu": 1}}},
        accelerator={"device": "nvidia-tesla-a100", "partitionSize": "1g.5gb"},
        sharedMemory="auto",
    ),
    "links": app(
        "links",
        links=[
            {"path": "/docs", "title": "API docs", "isRelative": True},
            {"path": "https://grafana.example.com/d/app", "title": "Dashboard"},
        ],
    ),
    "profile": app(
        "profile",
        container={"ports": [{"containerPort": 8501}]},
        profile={"type": "streamlit", "description": "Weekly churn"},
    ),
    "inputs": app(
        "inputs",
        container={"command": FSERVE},
        inputs=[
            {"name": "model", "value": "s3://models/churn/v7"},
            # The SDK writes an AppEndpoint as the other app's name, never as Input.app_id.
            {"name": "backend", "value": "api"},
            {"name": "config", "value": "s3://conf/app.yaml"},
            {"name": "data", "value": "s3://data/churn/"},
        ],
    ),
    "inputs-artifact": app(
        "inputs-artifact",
        container={"command": FSERVE},
        inputs=[
            {
                "name": "weights",
                "artifact": {
                    "key": {"project": "ml", "domain": "production", "name": "churn-weights"},
                    "version": "v3",
                },
            }
        ],
    ),
    "domain": app("domain", ingress={"subdomain": "churn", "cname": "churn.acme.dev"}),
    "domain-subdomain-hash": app(
        "domain-subdomain-hash", ingress={"subdomain": f"churn-{SDK_SUBDOMAIN_HASH}"}
    ),
    "cluster-pool": app("cluster-pool", clusterPool="gpu-pool"),
    "cluster": app("cluster", cluster="eu-1"),
    "full": app(
        "full",
        container={
            "command": ["python", "-m", "app"],
            "args": ["--port", "8080"],
            "env": {"LOG_LEVEL": "info"},
            "resources": {
                "requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "5Gi"},
                "limits": {"cpu": "2", "memory": "2Gi"},
            },
        },
        autoscaling={
            "minReplicas": 1,
            "maxReplicas": 4,
            "metric": "concurrency",
            "target": 20,
            "scaledownPeriod": "120s",
        },
        timeouts={"request": "60s"},
        secrets=[SECRETS[0]],
        serviceAccount="app-runner",
        requiresAuth=False,
        links=[{"path": "/docs", "title": "API docs", "isRelative": True}],
        profile={"type": "fastapi", "description": "Churn API"},
        ingress={"subdomain": "churn-api", "cname": "api.acme.dev"},
        clusterPool="gpu-pool",
    ),
    "deploy-context": app(
        "deploy-context",
        # `flyte deploy` adds _F_SYS_PATH (the sys.path entries under its root_dir) to every app.
        container={"env": [{"name": "_F_SYS_PATH", "value": "./."}]},
    ),
}
"""Each SDK fixture's app, as a user writes it (tier ``meaning``)."""


def _pod_template_as_the_sdk_serializes_it(entry: dict[str, Any]) -> dict[str, Any]:
    """The SDK's pod_spec Struct carries ``args: []``, ``command: []`` and ``limits: {}`` in the
    app's container (the Kubernetes client's serialization of a V1Container): the pod template says so."""
    result = copy.deepcopy(entry)
    primary = result["pod"]["spec"]["containers"][0]
    primary.update({"args": [], "command": [], "resources": {"limits": {}}})
    return result


SPELLED_PAYLOAD: Final = {"pod-template": _pod_template_as_the_sdk_serializes_it}
"""Fixtures whose payload, too, must be spelled out for the same bytes."""


def cases() -> list[SdkCase]:
    """Every case: a ``meaning`` and a ``bytes`` case per fixture, the env as a map (``meaning``),
    and a probe that only goes to the SDK's comparison (a cluster-local app: ``ingress.private``)."""
    found: list[SdkCase] = []
    for fixture, entry in NATURAL.items():
        found.append(SdkCase(f"{fixture}.meaning", fixture, "meaning", entry))
        payload = SPELLED_PAYLOAD.get(fixture)
        spelled = spelled_out(payload(entry) if payload is not None else entry)
        found.append(SdkCase(fixture, fixture, "bytes", spelled))
    env_map = app(
        "env", container={"env": {"LOG_LEVEL": "info", "FEATURE_FLAGS": "charts,export", "A_LAST": "1"}}
    )
    found.append(SdkCase("env.map.meaning", "env", "meaning", env_map, unordered_env=True))
    private = {**app("plain"), "visibility": "cluster-local"}
    found.append(SdkCase("plain.private.probe", "plain", "probe", private))
    return found
