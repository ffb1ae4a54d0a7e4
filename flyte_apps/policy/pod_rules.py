"""Rules about pod templates (the apps' KServices and the manager's Deployment alike): pinned images,
resource requests and limits, no privileged pods, and no credentials in plain-text env vars."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

import yaml

from flyte_apps.core.credentials import looks_like_credential as looks_like_credential
from flyte_apps.core.manager.layout import CONFIG_FILE_KEY
from flyte_apps.policy.pods import containers, pod_spec
from flyte_apps.policy.wire import (
    UNKNOWN,
    Report,
    ResourceArgs,
    dig,
    is_kind,
    is_kservice,
    items,
    props_of,
    section,
    shown,
)

SETTING_REQUIRE_DIGEST: Final = "requireDigest"
SETTING_ALLOWED_NAMES: Final = "allowedNames"

# An OCI digest: algorithm ":" encoded (https://github.com/opencontainers/image-spec, descriptor.md).
_DIGEST: Final = re.compile(r"[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}")
MOVING_TAG: Final = "latest"

REQUIRED_RESOURCES: Final = (
    ("requests", "cpu"),
    ("requests", "memory"),
    ("limits", "cpu"),
    ("limits", "memory"),
)
HOST_NAMESPACES: Final = ("hostNetwork", "hostPID", "hostIPC")

APP_HINT: Final = (
    "deliver it through the app's secrets (Flyte's secret store), not env or platform.defaultEnvVars"
)
WORKLOAD_HINT: Final = "read it from a Secret with valueFrom.secretKeyRef"
DEFAULT_ENV_HINT: Final = (
    "Flyte's app service copies it into every app in plain text: give apps credentials through "
    "their secrets (Flyte's secret store)"
)


def image_pinned(args: ResourceArgs, report: Report) -> None:
    """Container images name a version (no ``:latest``, no missing tag) or, with ``requireDigest``,
    a digest, so a rollout cannot change what runs."""
    pod = pod_spec(args)
    if pod is None:
        return
    require_digest = args.get_config().get(SETTING_REQUIRE_DIGEST) is True
    for container in containers(pod):
        image = container.fields.get("image")
        if image is UNKNOWN:
            continue
        problem = image_problem(image, require_digest=require_digest)
        if problem:
            report(f"{container.path}.image {_value(image)} is not pinned: {problem}", None)


def image_problem(image: object, *, require_digest: bool) -> str | None:
    """Why ``image`` is not pinned, or None. A ``:`` before the last ``/`` is a registry port
    (``host:5000/img``), not a tag."""
    if not isinstance(image, str) or not image.strip():
        return "no image is set"
    name, at, digest = image.partition("@")
    if at:
        return None if _DIGEST.fullmatch(digest) else f"'{digest}' is not an image digest"
    last = name.rsplit("/", 1)[-1]
    tag = last.partition(":")[2] if ":" in last else ""
    if require_digest:
        return "requireDigest is set, and it names no digest (@sha256:…)"
    if not tag:
        return "it has no tag, so Kubernetes pulls ':latest'; name a version tag or a digest"
    if tag == MOVING_TAG:
        return "':latest' moves; name a version tag or a digest"
    return None


def resources_set(args: ResourceArgs, report: Report) -> None:
    """Every container requests and limits CPU and memory."""
    pod = pod_spec(args)
    if pod is None:
        return
    for container in containers(pod):
        resources = section(container.fields.get("resources"))
        if resources is None:
            continue
        missing = []
        for block_key, name in REQUIRED_RESOURCES:
            block = section(resources.get(block_key))
            if block is not None and block.get(name) in (None, ""):
                missing.append(f"{block_key}.{name}")
        if missing:
            report(f"{container.path}.resources does not set {', '.join(missing)}", None)


def no_privileged_pods(args: ResourceArgs, report: Report) -> None:
    """No pod template runs privileged, allows privilege escalation, shares the node's network, PID
    or IPC namespace, or mounts a hostPath volume."""
    pod = pod_spec(args)
    if pod is None:
        return
    for key in HOST_NAMESPACES:
        if pod.spec.get(key) is True:
            report(f"{pod.path}.{key} is true: the pod shares the node's namespace", None)
    for index, volume in enumerate(items(pod.spec.get("volumes"))):
        if isinstance(volume, dict) and volume.get("hostPath") is not None:
            where = dig(volume, "hostPath", "path")
            shown_path = f" ({_value(where)})" if isinstance(where, str) else ""
            report(f"{pod.path}.volumes[{index}].hostPath mounts the node's filesystem{shown_path}", None)
    for container in containers(pod):
        context = section(container.fields.get("securityContext"))
        if not context:
            continue
        if context.get("privileged") is True:
            report(f"{container.path}.securityContext.privileged is true", None)
        if context.get("allowPrivilegeEscalation") is True:
            report(f"{container.path}.securityContext.allowPrivilegeEscalation is true", None)


def no_plaintext_credentials(args: ResourceArgs, report: Report) -> None:
    """Env vars named like credentials carry no literal value: in KServices (the platform's default
    env vars included), in workloads, and in the manager's ``internalApps.defaultEnvVars``."""
    allowed = _allowed_names(args.get_config())
    pod = pod_spec(args)
    if pod is not None:
        hint = APP_HINT if is_kservice(args.resource_type) else WORKLOAD_HINT
        for container in containers(pod):
            for index, var in enumerate(items(container.fields.get("env"))):
                name, value = dig(var, "name"), dig(var, "value")
                if isinstance(name, str) and _literal(value) and looks_like_credential(name, allowed):
                    report(f"{container.path}.env[{index}] {name} carries a literal value; {hint}", None)
        return
    if is_kind(args.resource_type, "core", "ConfigMap"):
        text = dig(props_of(args), "data", CONFIG_FILE_KEY)
        for index, name in _default_env_credentials(text, allowed):
            report(
                f"data['{CONFIG_FILE_KEY}'] internalApps.defaultEnvVars[{index}] {name} carries a "
                f"literal value; {DEFAULT_ENV_HINT}",
                None,
            )


def _default_env_credentials(text: object, allowed: frozenset[str]) -> Iterator[tuple[int, str]]:
    """``internalApps.defaultEnvVars`` of a Flyte config file: upstream's list of single-key maps, or
    a map, or ``{name, value}`` items."""
    if not isinstance(text, str):
        return
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return
    entries = dig(document, "internalApps", "defaultEnvVars")
    pairs: list[tuple[int, Any, Any]] = []
    if isinstance(entries, dict):
        pairs = [(index, key, value) for index, (key, value) in enumerate(entries.items())]
    for index, entry in enumerate(items(entries)):
        if isinstance(entry, dict) and "name" in entry:
            pairs.append((index, entry.get("name"), entry.get("value")))
        elif isinstance(entry, dict):
            pairs.extend((index, key, value) for key, value in entry.items())
    for index, name, value in pairs:
        if isinstance(name, str) and _literal(value) and looks_like_credential(name, allowed):
            yield index, name


def _allowed_names(config: Mapping[str, Any]) -> frozenset[str]:
    names = config.get(SETTING_ALLOWED_NAMES)
    if not isinstance(names, list | tuple):
        return frozenset()
    return frozenset(name for name in names if isinstance(name, str))


def _literal(value: object) -> bool:
    return value is not UNKNOWN and value is not None and str(value) != ""


def _value(value: object) -> str:
    return "missing" if value is None else shown(value)
