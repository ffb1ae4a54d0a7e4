"""Flyte's SDK writes the fixtures: run only inside the SDK venv that ``make_fixtures.py`` builds.

``generate``: declares apps with ``flyte.app.AppEnvironment`` (image strings and an explicit ``command``, so
nothing is built or bundled), turns each into a ``flyteidl2.app.App`` with the SDK's own translation
(``flyte.app._runtime.app_serde.translate_app_env_to_idl``, offline: no ``flyte.init``, no cluster, no
login) and writes ``<out>/<name>.json`` per app, plus ``<out>/comparison.json``: what the SDK's own spec
comparison (``flyte.remote.App._app_specs_are_equal``) does with each spec, and with each spec less its
``ingress``.

``compare DIR``: loads the base64 specs from the JSON files in DIR (``{"spec_b64": ...}``, as the project's
renderer will write them) and records whether the SDK's comparison raises on them, alone and when the SDK
replaces them with its own spec for the same app (the fixture named by ``sdk_fixture`` or by the file's
name). Exit status 1 when any comparison raised.

This module imports the SDK, which the project's venv must never have: nothing in the project imports
this module, and its SDK imports are ``# type: ignore``d so the project's mypy still checks the rest (the
SDK's objects are ``Any`` there).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import importlib.metadata
import inspect
import json
import logging
import sys
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import flyte  # type: ignore[import-not-found]
import flyte.app  # type: ignore[import-not-found]
import flyte.io  # type: ignore[import-not-found]
import flyte.remote  # type: ignore[import-not-found]
from flyte._initialize import is_initialized  # type: ignore[import-not-found]
from flyte.app._runtime.app_serde import translate_app_env_to_idl  # type: ignore[import-not-found]
from flyte.models import SerializationContext  # type: ignore[import-not-found]
from flyte.remote._app import App  # type: ignore[import-not-found]
from flyteidl2.app import app_definition_pb2
from flyteidl2.core import artifact_id_pb2
from google.protobuf import text_format
from kubernetes.client import ApiClient

HERE = Path(__file__).resolve().parent
PROJECT = "proj"
DOMAIN = "dev"
VERSION = "v1"
"""The deployment the apps are serialized for (the org is left unset), as the stack config's tests use."""

SERIALIZATION = "SerializeToString(deterministic=True)"
DETERMINISM = (
    "The SDK leaves determinism to the caller: translate_app_env_to_idl returns the App message, and what "
    "goes on the wire is connectrpc's codec (connectrpc/_codec.py: message.SerializeToString(), no "
    "deterministic flag). spec_b64 is SerializeToString(deterministic=True) of the spec; wire_bytes_same "
    "says whether the SDK's plain SerializeToString() gives the same bytes (map fields, e.g. the pod "
    "spec's google.protobuf.Struct, are where they may differ)."
)
DECLARED_FORMAT = (
    "The keyword arguments of flyte.app.AppEnvironment, as JSON. An object stands for the SDK class the "
    "argument takes, built from its keys: resources flyte.Resources, scaling flyte.app.Scaling, timeouts "
    "flyte.app.Timeouts, domain flyte.app.Domain, port flyte.app.Port, links[] flyte.app.Link, secrets[] "
    "flyte.Secret, parameters[] flyte.app.Parameter, pod_template flyte.PodTemplate (its pod_spec a "
    "Kubernetes PodSpec in the API's camelCase form, read with the kubernetes client's deserializer). "
    "An object with an 'sdk' key is a call of that SDK name with the other keys as keyword arguments, "
    "where an argument takes one of several classes (scaling.metric, resources.gpu, domain.subdomain, a "
    "parameter's value). A list stands for a tuple where the SDK takes one (scaling.replicas, "
    "resources.cpu/memory as (request, limit)). Seconds are ints (scaledown_after, timeouts.request)."
)


@dataclass(frozen=True)
class Case:
    """One app as declared with the SDK, and how it is serialized."""

    name: str
    about: str
    declared: dict[str, Any]
    context: str = "offline"
    """``offline``: no flyte.init (the default); ``artifact``: flyte.init without an endpoint and the
    artifact service stubbed; ``deploy``: flyte.init and the SerializationContext as ``flyte.deploy``
    builds them (root_dir set, sync_local_sys_paths on)."""


IMAGE = "ghcr.io/example/app:1.0"
FSERVE = ["fserve", "--", "python", "-m", "app"]
SECRETS: list[dict[str, Any]] = [
    {"key": "db-password"},
    {"key": "api-key", "group": "openai", "as_env_var": "OPENAI_API_KEY"},
    {"key": "tls-cert", "mount": "/etc/flyte/secrets"},
]
PROFILE_NOTE = (
    "The SDK fills Profile from `type` and `description` only (short_description): it never writes "
    "Profile.name or Profile.icon_url, and writes `profile {}` (present, empty) when neither is set."
)


def app(name: str, **kwargs: Any) -> dict[str, Any]:
    """``AppEnvironment`` keyword arguments: the name, a plain image, no command unless given."""
    return {"name": name, "image": IMAGE, "command": [], **kwargs}


CASES: list[Case] = [
    Case(
        "plain",
        "An image and nothing else. command=[] keeps the image's own entrypoint (None would make the SDK "
        "write its fserve command, which needs a code bundle). Shows what the SDK writes for every app: "
        "port 8080, replicas {min 0, max 1}, an empty `ingress {}`, desired_state ACTIVE, cluster_pool "
        "'default', runtime_metadata, `profile {}` and `inputs {}`.",
        app("plain"),
    ),
    Case(
        "env",
        "Environment variables, given as a dict (the only form AppEnvironment takes); written in the "
        "dict's order.",
        app("env", env_vars={"LOG_LEVEL": "info", "FEATURE_FLAGS": "charts,export", "A_LAST": "1"}),
    ),
    Case(
        "resources",
        "cpu, memory and disk as single values: requests only (ephemeral_storage for disk), no limits, "
        "entries in the order cpu, memory, ephemeral storage.",
        app("resources", resources={"cpu": "500m", "memory": "1Gi", "disk": "10Gi"}),
    ),
    Case(
        "resources-limits",
        "cpu and memory as (request, limit) pairs, disk a single value: the pair's second item is the "
        "limit; disk stays a request.",
        app(
            "resources-limits", resources={"cpu": ["250m", "1"], "memory": ["256Mi", "512Mi"], "disk": "2Gi"}
        ),
    ),
    Case(
        "autoscaling-concurrency",
        "Scaling on concurrency (10 in flight per replica), 1..5 replicas, scale down after 300 s.",
        app(
            "autoscaling-concurrency",
            scaling={
                "replicas": [1, 5],
                "metric": {"sdk": "app.Scaling.Concurrency", "val": 10},
                "scaledown_after": 300,
            },
        ),
    ),
    Case(
        "autoscaling-request-rate",
        "Scaling on request rate (50 per second per replica), 0..3 replicas, scale down after 90 s.",
        app(
            "autoscaling-request-rate",
            scaling={
                "replicas": [0, 3],
                "metric": {"sdk": "app.Scaling.RequestRate", "val": 50},
                "scaledown_after": 90,
            },
        ),
    ),
    Case(
        "autoscaling-fixed",
        "A fixed replica count (replicas=2 means min 2, max 2), no metric, no scale-down period.",
        app("autoscaling-fixed", scaling={"replicas": 2}),
    ),
    Case(
        "timeout",
        "A request timeout of 120 s (timeouts.request_timeout).",
        app("timeout", timeouts={"request": 120}),
    ),
    Case(
        "secrets",
        "Three secrets: one with neither env var nor mount (the SDK derives the env var DB_PASSWORD), one "
        "with a group and an explicit env var, one mounted as a file. No service account: the SDK writes "
        "security_context with the secrets and `run_as {}` (present, empty).",
        app("secrets", secrets=SECRETS),
    ),
    Case(
        "service-account",
        "A service account alone: security_context.run_as.k8s_service_account, no secrets.",
        app("service-account", service_account="app-runner"),
    ),
    Case(
        "secrets-service-account",
        "Secrets and a service account together.",
        app("secrets-service-account", secrets=SECRETS, service_account="app-runner"),
    ),
    Case(
        "public",
        "requires_auth=False: security_context.allow_anonymous = true (and nothing else in it).",
        app("public", requires_auth=False),
    ),
    Case(
        "command-args",
        "An explicit command and args, as lists: written as given.",
        app("command-args", command=["python", "-m", "http.server"], args=["8080", "--bind", "0.0.0.0"]),
    ),
    Case(
        "command-args-strings",
        "Command and args as strings: the SDK splits them with shlex.split.",
        app(
            "command-args-strings",
            command="uvicorn app:api",
            args="--host 0.0.0.0 --port 8080 --log-level 'debug'",
        ),
    ),
    Case(
        "port",
        "A port with a name (h2c): container port 9000 named h2c.",
        app("port", port={"port": 9000, "name": "h2c"}),
    ),
    Case(
        "pod-template",
        "A pod template with the app's container ('app', no image: the SDK fills in the app's image, "
        "command, args, env, port and resources) beside a sidecar, sharing an emptyDir volume; labels and "
        "annotations go to pod.metadata. The spec has `pod` instead of `container`; the pod spec is a "
        "google.protobuf.Struct (numbers are doubles).",
        app(
            "pod-template",
            env_vars={"CACHE_DIR": "/cache"},
            resources={"cpu": "1", "memory": "1Gi"},
            pod_template={
                "primary_container_name": "app",
                "labels": {"team": "ml"},
                "annotations": {"example.com/owner": "ml-platform"},
                "pod_spec": {
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
            },
        ),
    ),
    Case(
        "gpu",
        "One A100 (gpu='A100:1') with 2Gi of shared memory: a gpu request of 1 (no limit), "
        "extended_resources.gpu_accelerator {device nvidia-tesla-a100, NVIDIA_GPU} and shared_memory "
        "{/dev/shm, flyte-shm, 2Gi}.",
        app("gpu", resources={"cpu": "4", "memory": "16Gi", "gpu": "A100:1", "shm": "2Gi", "disk": "50Gi"}),
    ),
    Case(
        "gpu-partition",
        "An A100 MIG partition (flyte.GPU(device='A100', quantity=1, partition='1g.5gb')) and shm='auto', "
        "which the SDK writes as a shared_memory with an empty size_limit.",
        app(
            "gpu-partition",
            resources={
                "gpu": {"sdk": "GPU", "device": "A100", "quantity": 1, "partition": "1g.5gb"},
                "shm": "auto",
            },
        ),
    ),
    Case(
        "links",
        "Two links, one relative to the app's URL and one absolute.",
        app(
            "links",
            links=[
                {"path": "/docs", "title": "API docs", "is_relative": True},
                {"path": "https://grafana.example.com/d/app", "title": "Dashboard"},
            ],
        ),
    ),
    Case(
        "profile",
        "type and description, on a Streamlit port. " + PROFILE_NOTE,
        app("profile", type="streamlit", description="Weekly churn", port=8501),
    ),
    Case(
        "inputs",
        "Parameters: a string, another app's endpoint (flyte.app.AppEndpoint), a file and a directory "
        "already in object storage. The SDK writes each as Input.string_value: the app endpoint as the "
        "other app's name (it never writes Input.app_id), files and directories as their URIs. "
        "Parameters need a command that starts with fserve (or none).",
        app(
            "inputs",
            command=FSERVE,
            parameters=[
                {"name": "model", "value": "s3://models/churn/v7"},
                {"name": "backend", "value": {"sdk": "app.AppEndpoint", "app_name": "api"}},
                {
                    "name": "config",
                    "value": {"sdk": "io.File.from_existing_remote", "remote_path": "s3://conf/app.yaml"},
                    "env_var": "APP_CONFIG",
                },
                {
                    "name": "data",
                    "value": {"sdk": "io.Dir.from_existing_remote", "remote_path": "s3://data/churn/"},
                    "mount": "/data",
                },
            ],
        ),
    ),
    Case(
        "inputs-artifact",
        "A parameter bound to an artifact (flyte.app.ArtifactValue), written as Input.artifact_id (an "
        "ArtifactVersionId). The SDK resolves the artifact through its artifact service at serialization "
        "time, which needs flyte.init: flyte.init ran without an endpoint and flyte.remote.Artifact.get "
        "was stubbed to return an artifact ml/production/churn-weights@v3 that stores a directory; the "
        "rest is the SDK's own code.",
        app(
            "inputs-artifact",
            command=FSERVE,
            parameters=[
                {
                    "name": "weights",
                    "value": {
                        "sdk": "app.ArtifactValue",
                        "name": "churn-weights",
                        "version": "v3",
                        "project": "ml",
                        "domain": "production",
                    },
                    "mount": "/models",
                },
            ],
        ),
        context="artifact",
    ),
    Case(
        "domain",
        "A custom subdomain and a cname (flyte.app.Domain(subdomain=..., custom_domain=...)): "
        "ingress.subdomain and ingress.cname.",
        app("domain", domain={"subdomain": "churn", "custom_domain": "churn.acme.dev"}),
    ),
    Case(
        "domain-subdomain-hash",
        "A subdomain resolved at serialization time (flyte.app.Subdomain(app_name='churn'), suffix "
        "'hash'): churn-<first 8 hex digits of sha256('proj-dev')>.",
        app("domain-subdomain-hash", domain={"subdomain": {"sdk": "app.Subdomain", "app_name": "churn"}}),
    ),
    Case(
        "cluster-pool",
        "A cluster pool other than 'default'.",
        app("cluster-pool", cluster_pool="gpu-pool"),
    ),
    Case(
        "cluster",
        "A pinned cluster: the SDK writes cluster and an empty cluster_pool (the two are exclusive).",
        app("cluster", cluster="eu-1"),
    ),
    Case(
        "full",
        "Most of the above on one app (no pod template, GPU or inputs).",
        app(
            "full",
            command=["python", "-m", "app"],
            args=["--port", "8080"],
            env_vars={"LOG_LEVEL": "info"},
            resources={"cpu": ["500m", "2"], "memory": ["1Gi", "2Gi"], "disk": "5Gi"},
            scaling={
                "replicas": [1, 4],
                "metric": {"sdk": "app.Scaling.Concurrency", "val": 20},
                "scaledown_after": 120,
            },
            timeouts={"request": 60},
            secrets=[{"key": "db-password"}],
            service_account="app-runner",
            requires_auth=False,
            links=[{"path": "/docs", "title": "API docs", "is_relative": True}],
            type="fastapi",
            description="Churn API",
            domain={"subdomain": "churn-api", "custom_domain": "api.acme.dev"},
            cluster_pool="gpu-pool",
        ),
    ),
    Case(
        "deploy-context",
        "The plain app serialized as `flyte deploy` does it: after flyte.init (no endpoint here) with a "
        "root_dir (here an empty temporary directory), sync_local_sys_paths left on, and the "
        "SerializationContext carrying root_dir. The SDK then adds the env var _F_SYS_PATH "
        "(flyte._constants.FLYTE_SYS_PATH): the sys.path entries under root_dir, relative to it, joined "
        "with ':' (flyte.init puts root_dir itself on sys.path, hence './.'). Every app deployed that way "
        "carries it, after the app's own env vars.",
        app("deploy-context"),
        context="deploy",
    ),
]


def sdk_call(spec: dict[str, Any]) -> Any:
    """``{"sdk": "app.Scaling.Concurrency", "val": 10}`` -> ``flyte.app.Scaling.Concurrency(val=10)``."""
    kwargs = dict(spec)
    target: Any = flyte
    for part in str(kwargs.pop("sdk")).split("."):
        target = getattr(target, part)
    return target(**kwargs)


def value(given: Any) -> Any:
    return sdk_call(given) if isinstance(given, dict) and "sdk" in given else given


def pair(given: Any) -> Any:
    return tuple(given) if isinstance(given, list) else value(given)


def pod_template(given: dict[str, Any]) -> Any:
    kwargs = dict(given)
    # The client's own reader of API-form (camelCase) objects, as used for API responses.
    kwargs["pod_spec"] = ApiClient()._ApiClient__deserialize(kwargs["pod_spec"], "V1PodSpec")  # type: ignore[attr-defined]
    return flyte.PodTemplate(**kwargs)


def build_env(declared: dict[str, Any]) -> Any:
    """The ``flyte.app.AppEnvironment`` that ``declared`` (DECLARED_FORMAT) describes."""
    kwargs = dict(declared)
    if "resources" in kwargs:
        kwargs["resources"] = flyte.Resources(**{k: pair(v) for k, v in kwargs["resources"].items()})
    if "scaling" in kwargs:
        kwargs["scaling"] = flyte.app.Scaling(**{k: pair(v) for k, v in kwargs["scaling"].items()})
    if "timeouts" in kwargs:
        kwargs["timeouts"] = flyte.app.Timeouts(**kwargs["timeouts"])
    if "domain" in kwargs:
        kwargs["domain"] = flyte.app.Domain(**{k: value(v) for k, v in kwargs["domain"].items()})
    if isinstance(kwargs.get("port"), dict):
        kwargs["port"] = flyte.app.Port(**kwargs["port"])
    if "links" in kwargs:
        kwargs["links"] = [flyte.app.Link(**link) for link in kwargs["links"]]
    if "secrets" in kwargs:
        kwargs["secrets"] = [flyte.Secret(**secret) for secret in kwargs["secrets"]]
    if "parameters" in kwargs:
        kwargs["parameters"] = [
            flyte.app.Parameter(**{k: value(v) for k, v in param.items()}) for param in kwargs["parameters"]
        ]
    if "pod_template" in kwargs:
        kwargs["pod_template"] = pod_template(kwargs["pod_template"])
    return flyte.app.AppEnvironment(**kwargs)


class _StoredArtifact:
    """What ``flyte.remote.Artifact.get`` returns, for the one artifact ``inputs-artifact`` names."""

    version = "v3"
    artifact_version_id = artifact_id_pb2.ArtifactVersionId(
        key=artifact_id_pb2.ArtifactKey(project="ml", domain="production", name="churn-weights"),
        version="v3",
    )

    async def to_python(self) -> Any:
        return flyte.io.Dir.from_existing_remote("s3://artifacts/churn-weights/v3")


class _ArtifactGet:
    async def aio(self, name: str, **where: Any) -> _StoredArtifact:
        wanted = {"version": "v3", "project": "ml", "domain": "production"}
        if name != "churn-weights" or where != wanted:
            msg = f"the stub artifact service has only churn-weights {wanted}, not {name} {where}"
            raise LookupError(msg)
        return _StoredArtifact()


class _ArtifactService:
    get = _ArtifactGet()


@contextmanager
def stubbed_artifact_service() -> Iterator[None]:
    real = flyte.remote.Artifact
    flyte.remote.Artifact = _ArtifactService
    try:
        yield
    finally:
        flyte.remote.Artifact = real


def versions() -> dict[str, str]:
    names = ("flyte", "flyteidl2", "protobuf", "kubernetes")
    return {name: importlib.metadata.version(name) for name in names}


async def translate(case: Case, deploy_root: Path) -> Any:
    """``translate_app_env_to_idl`` exactly as ``flyte.app._deploy._deploy_app`` calls it (``.aio``)."""
    env = build_env(case.declared)
    if case.context == "offline":
        if is_initialized():
            msg = "offline cases must run before flyte.init"
            raise RuntimeError(msg)
        context = SerializationContext(version=VERSION, project=PROJECT, domain=DOMAIN)
        return await translate_app_env_to_idl.aio(env, context)
    if case.context == "artifact":
        await flyte.init.aio(project=PROJECT, domain=DOMAIN, root_dir=HERE, sync_local_sys_paths=False)
        context = SerializationContext(version=VERSION, project=PROJECT, domain=DOMAIN)
        with stubbed_artifact_service():
            return await translate_app_env_to_idl.aio(env, context)
    # As flyte.deploy: init puts root_dir on sys.path; the context carries it (flyte/_deploy.py).
    await flyte.init.aio(project=PROJECT, domain=DOMAIN, root_dir=deploy_root)
    context = SerializationContext(version=VERSION, project=PROJECT, domain=DOMAIN, root_dir=deploy_root)
    return await translate_app_env_to_idl.aio(env, context)


class _QuietGit(logging.Filter):
    """Drops the SDK's warnings about git: metadata.source_code (not kept) looks up the git remote."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "git" not in record.getMessage() and "remote URL" not in record.getMessage()


def sdk_path(filename: str) -> str:
    """A file of the SDK's venv, relative to its site-packages (``flyte/remote/_app.py``)."""
    site = Path(flyte.__file__).resolve().parent.parent
    path = Path(filename).resolve()
    return str(path.relative_to(site)) if path.is_relative_to(site) else filename


async def sdk_compare(old: Any, updated: Any) -> dict[str, Any]:
    """What ``App._app_specs_are_equal(old, updated)`` does: ``{"returns": bool}`` or ``{"raises": ...}``."""
    try:
        equal = await App._app_specs_are_equal(old, updated)
    except Exception as exc:  # recorded, not handled: this is what the SDK does
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return {
            "raises": type(exc).__name__,
            "message": str(exc),
            "at": f"{sdk_path(frame.filename)}:{frame.lineno}",
            "line": (frame.line or "").strip(),
        }
    return {"returns": bool(equal)}


def without_ingress(spec: Any) -> Any:
    copy = app_definition_pb2.Spec()
    copy.CopyFrom(spec)
    copy.ClearField("ingress")
    return copy


def comparison_source() -> dict[str, Any]:
    function = App._app_specs_are_equal
    lines, first = inspect.getsourcelines(function)
    return {
        "function": "flyte.remote.App._app_specs_are_equal (async staticmethod)",
        "defined_at": f"{sdk_path(inspect.getsourcefile(function) or '')}:{first}",
        "source": [line.rstrip("\n") for line in lines],
        "used_by": (
            "flyte.remote.App.replace(name, updated_app_spec, ...) fetches the stored app and calls "
            "_app_specs_are_equal(stored spec as old, the SDK's new spec as updated), skipping the update "
            "when they are equal; App.create falls back to App.replace when the app already exists "
            "(ALREADY_EXISTS / ABORTED), so redeploying with the SDK an app we deployed runs it on our spec."
        ),
    }


def fixture(case: Case, idl: Any, sdk: dict[str, str]) -> dict[str, Any]:
    spec = idl.spec
    data = spec.SerializeToString(deterministic=True)
    ident = idl.metadata.id
    return {
        "name": case.name,
        "about": case.about,
        "sdk": sdk,
        "translation": (
            "flyte.app._runtime.app_serde.translate_app_env_to_idl(app_env, serialization_context)"
            ".spec (the App's metadata is not kept)"
        ),
        "context": {
            "flyte_init": {
                "offline": None,
                "artifact": "flyte.init(project, domain, root_dir=<tests/sdk>, sync_local_sys_paths=False); "
                "flyte.remote.Artifact.get stubbed",
                "deploy": "flyte.init(project, domain, root_dir=<an empty temporary directory>)",
            }[case.context],
            "serialization_context": {
                "version": VERSION,
                "project": PROJECT,
                "domain": DOMAIN,
                "org": None,
                "root_dir": "<the same directory>" if case.context == "deploy" else None,
            },
        },
        "app_id": {"org": ident.org, "project": ident.project, "domain": ident.domain, "name": ident.name},
        "declared_format": DECLARED_FORMAT,
        "declared": {"flyte.app.AppEnvironment": case.declared},
        "serialization": SERIALIZATION,
        "determinism": DETERMINISM,
        "wire_bytes_same": spec.SerializeToString() == data,
        "spec_b64": base64.b64encode(data).decode("ascii"),
        "spec_text_format": "google.protobuf.text_format.MessageToString(spec), one item per line",
        "spec_text": text_format.MessageToString(spec).splitlines(),
    }


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


async def generate(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    sdk = versions()
    specs: dict[str, Any] = {}
    logging.getLogger("flyte").addFilter(_QuietGit())
    order = {"offline": 0, "artifact": 1, "deploy": 2}  # flyte.init is global: the offline ones first
    with tempfile.TemporaryDirectory() as deploy_root:
        for case in sorted(CASES, key=lambda case: order[case.context]):
            idl = await translate(case, Path(deploy_root))
            specs[case.name] = idl.spec
            write_json(out / f"{case.name}.json", fixture(case, idl, sdk))
    # ours-comparison.json is --compare's report on the project's own specs (tests/sdk/README.md).
    written = {f"{case.name}.json" for case in CASES} | {"comparison.json", "ours-comparison.json"}
    for stale in sorted(out.glob("*.json")):
        if stale.name not in written:
            stale.unlink()
            print(f"removed {stale}")

    cases = []
    for case in CASES:
        spec = specs[case.name]
        cases.append(
            {
                "fixture": case.name,
                "has_ingress": spec.HasField("ingress"),
                "self": await sdk_compare(spec, spec),
                "old_without_ingress": await sdk_compare(without_ingress(spec), spec),
                "updated_without_ingress": await sdk_compare(spec, without_ingress(spec)),
            }
        )
    private = app_definition_pb2.Spec()
    private.CopyFrom(specs["plain"])
    private.ingress.private = True
    probes = {
        "old_private_updated_sdk": {
            "about": "old: the plain spec with ingress {private: true} (an app we render as private); "
            "updated: the SDK's plain spec, whose empty `ingress {}` is falsy, so it takes the old one",
            "result": await sdk_compare(private, specs["plain"]),
        },
        "old_subdomain_updated_empty_ingress": {
            "about": "old: the domain spec (subdomain, cname); updated: the same with `ingress {}` "
            "present but empty: the SDK takes the old ingress, so the update is skipped",
            "result": await sdk_compare(specs["domain"], _with_empty_ingress(specs["domain"])),
        },
        "old_plain_updated_env": {
            "about": "old: plain; updated: env (another app): a real difference",
            "result": await sdk_compare(specs["plain"], specs["env"]),
        },
    }
    write_json(
        out / "comparison.json",
        {
            "about": (
                "What Flyte's SDK does when it compares app specs (App.replace): for each fixture, the spec "
                "against itself; with `ingress` cleared on the old (stored) side, which is the spec of an "
                "app deployed without an ingress message; and with it cleared on the updated side."
            ),
            "sdk": sdk,
            **comparison_source(),
            "cases": cases,
            "probes": probes,
            "summary": {
                "every_sdk_spec_has_ingress": all(c["has_ingress"] for c in cases),
                **{
                    key: outcomes(cases, key)
                    for key in ("self", "old_without_ingress", "updated_without_ingress")
                },
            },
        },
    )
    print(f"wrote {len(CASES)} fixtures and comparison.json to {out} (flyte {sdk['flyte']})")
    return 0


def outcomes(cases: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The distinct results under ``key``, each with the fixtures that gave it."""
    grouped: dict[str, dict[str, Any]] = {}
    for case in cases:
        result = case[key]
        entry = grouped.setdefault(json.dumps(result, sort_keys=True), {"result": result, "fixtures": []})
        entry["fixtures"].append(case["fixture"])
    return list(grouped.values())


def _with_empty_ingress(spec: Any) -> Any:
    copy = without_ingress(spec)
    copy.ingress.SetInParent()
    return copy


async def compare(directory: Path, fixtures: Path, report: Path | None) -> int:
    """Run the SDK's comparison on the specs in ``directory``; 1 when any raised, 2 when none was found."""
    results = []
    for path in sorted(directory.glob("*.json")):
        entry: dict[str, Any] = {"file": path.name}
        results.append(entry)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            spec = app_definition_pb2.Spec.FromString(base64.b64decode(data["spec_b64"], validate=True))
        except (ValueError, KeyError, TypeError) as exc:
            entry["skipped"] = f"no base64 spec under spec_b64: {type(exc).__name__}: {exc}"
            continue
        except Exception as exc:  # a protobuf DecodeError
            entry["error"] = f"spec_b64 does not parse as flyteidl2.app.Spec: {type(exc).__name__}: {exc}"
            continue
        entry["spec_b64"] = data["spec_b64"]
        if "tier" in data:
            entry["tier"] = data["tier"]
        entry["has_ingress"] = spec.HasField("ingress")
        entry["self"] = await sdk_compare(spec, spec)
        name = data.get("sdk_fixture") or path.stem
        sdk_fixture = fixtures / f"{name}.json"
        if sdk_fixture.is_file() and sdk_fixture.resolve() != path.resolve():
            sdk_spec = app_definition_pb2.Spec.FromString(
                base64.b64decode(json.loads(sdk_fixture.read_text(encoding="utf-8"))["spec_b64"])
            )
            entry["sdk_fixture"] = name
            entry["sdk_replaces_ours"] = await sdk_compare(spec, sdk_spec)
    checked = [entry for entry in results if "self" in entry]
    failed = [
        entry["file"]
        for entry in results
        if "error" in entry or any("raises" in entry.get(key, {}) for key in ("self", "sdk_replaces_ours"))
    ]
    outcome = {
        "about": (
            "Flyte's SDK (App._app_specs_are_equal, as App.replace runs it) on the specs in "
            f"{directory.name}/: 'self' compares each spec with itself (as when the SDK redeploys the "
            "same spec); 'sdk_replaces_ours' compares it, as the stored spec, with the SDK's own spec for "
            "the same app (the fixture named by sdk_fixture or by the file's name). spec_b64 is the "
            "spec compared, as the file gave it."
        ),
        "sdk": versions(),
        "results": results,
        "checked": len(checked),
        "failed": failed,
    }
    text = json.dumps(outcome, indent=2) + "\n"
    if report is not None:
        report.write_text(text, encoding="utf-8")
    print(text, end="")
    if not checked:
        print(f"no spec_b64 in any JSON file of {directory}", file=sys.stderr)
        return 2
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="mode", required=True)
    gen = sub.add_parser("generate", help="write the SDK's specs as fixtures")
    gen.add_argument("--out", type=Path, required=True)
    cmp = sub.add_parser("compare", help="run the SDK's spec comparison on the specs in DIR")
    cmp.add_argument("directory", type=Path)
    cmp.add_argument("--fixtures", type=Path, required=True, help="the SDK fixtures (tests/fixtures/sdk)")
    cmp.add_argument("--report", type=Path, help="also write the report (JSON) here")
    args = parser.parse_args(argv)
    if args.mode == "generate":
        return asyncio.run(generate(args.out))
    return asyncio.run(compare(args.directory, args.fixtures, args.report))


if __name__ == "__main__":
    sys.exit(main())
