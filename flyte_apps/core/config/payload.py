"""An app's payload as one pod spec, built once when the app is loaded.

A ``container`` alone is upstream's container payload: one container named ``app`` (reference (c)4).
A ``pod`` is a Kubernetes pod template; with a ``container`` too, the two are merged as Flyte's SDK
merges a pod template with a task's container (``app_serde``), into the primary container
(``pod.primaryContainerName``, default ``app``):

- the pod container's own image wins when it has one, else the app's;
- the app's command and args replace the pod container's (when the app sets them);
- the app's env and ports come first, then the pod container's;
- resources are merged key by key, the app's winning; ``gpu`` becomes ``platform.gpuResourceName``.

A primary container the pod template does not list is added first, not last as the SDK adds it:
Flyte's app service injects its env into ``containers[0]``, so anywhere else the app would not get it.
The merged spec is what ``spec.pod.pod_spec`` carries; the revision's pod spec starts from it. Each
container remembers the config key it came from, so a problem found in the merged spec is reported
where the user wrote the value.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.config.models import AppInput, Container, EnvVar, Resources, primary_container_name
from flyte_apps.core.objects import Manifest

CONTAINER_KEY_ORDER: Final = ("name", "image", "command", "args", "ports", "env", "resources")
"""A merged container's keys come in this order (upstream's container payload's), then its others."""


@dataclass(frozen=True)
class ContainerOrigin:
    """Where a container of the merged spec was written, and how many env entries and ports the
    app's ``container`` put before the pod container's own."""

    path: str
    env_offset: int = 0
    ports_offset: int = 0


@dataclass(frozen=True)
class Payload:
    """The payload's pod spec, the primary container's name, and where each container came from."""

    spec: Manifest
    primary: str
    origins: tuple[ContainerOrigin, ...]
    spec_path: str
    """The config key of the pod spec (``...pod.spec``), or of the container of a container payload."""


def build_payload(app: AppInput, env: Sequence[EnvVar], gpu_resource_name: str, path: str) -> Payload:
    """The pod spec of ``app``'s payload (``env``: the app's resolved env, in render order)."""
    if app.pod is None:
        container = app.container or Container()
        # Upstream always writes env (Flyte's variables go there), between ports and resources.
        merged = _merge_container(
            {"name": c.USER_CONTAINER_NAME}, container, env, gpu_resource_name, env_key=True
        )
        origin = ContainerOrigin(f"{path}.container")
        return Payload({"containers": [merged]}, c.USER_CONTAINER_NAME, (origin,), origin.path)
    spec_path = f"{path}.pod.spec"
    spec = copy.deepcopy(app.pod.spec)
    primary = primary_container_name(app)
    containers = spec.get("containers", [])
    if not isinstance(containers, list):  # the schema check reports it; nothing to merge into
        return Payload(spec, primary, (), spec_path)
    origins = [ContainerOrigin(f"{spec_path}.containers[{index}]") for index in range(len(containers))]
    if app.container is not None:
        index = next(
            (
                i
                for i, item in enumerate(containers)
                if isinstance(item, dict) and item.get("name") == primary
            ),
            None,
        )
        if index is None:
            containers.insert(0, {"name": primary})
            origins.insert(0, ContainerOrigin(f"{path}.container"))
            index = 0
        own = containers[index]
        containers[index] = _merge_container(own, app.container, env, gpu_resource_name)
        origins[index] = ContainerOrigin(
            origins[index].path,
            env_offset=len(env) if isinstance(own.get("env", []), list) else 0,
            ports_offset=len(app.container.ports) if isinstance(own.get("ports", []), list) else 0,
        )
        spec["containers"] = containers
    return Payload(spec, primary, tuple(origins), spec_path)


def _merge_container(
    own: Mapping[str, Any],
    given: Container,
    env: Sequence[EnvVar],
    gpu_resource_name: str,
    *,
    env_key: bool = False,
) -> Manifest:
    """``given`` merged into the pod container ``own`` (a copy; keys keep ``own``'s order);
    ``env_key`` writes ``env`` even when it is empty."""
    merged = dict(own)
    if given.image is not None and not merged.get("image"):
        merged["image"] = given.image
    if given.command:
        merged["command"] = list(given.command)
    if given.args:
        merged["args"] = list(given.args)
    ports = [
        {"containerPort": port.container_port, **({"name": port.name} if port.name else {})}
        for port in given.ports
    ]
    _prepend(merged, "ports", ports)
    _prepend(merged, "env", [{"name": var.name, "value": var.value} for var in env])
    if env_key:
        merged.setdefault("env", [])
    resources = resource_maps(given.resources, gpu_resource_name)
    if resources:
        own_resources = merged.get("resources", {})
        if isinstance(own_resources, dict):
            combined = dict(own_resources)
            for block, entries in resources.items():
                before = combined.get(block) or {}
                if isinstance(before, dict):
                    combined[block] = dict(sorted({**before, **entries}.items()))
            merged["resources"] = combined
    if len(own) <= 1:
        return merged  # only a name to merge into: the keys are in order already
    ordered: Manifest = {key: merged[key] for key in CONTAINER_KEY_ORDER if key in merged}
    ordered.update((key, value) for key, value in merged.items() if key not in ordered)
    return ordered


def _prepend(container: Manifest, key: str, items: list[Manifest]) -> None:
    """``items`` before the container's own list at ``key`` (left alone when it is not a list: the
    schema check reports that)."""
    if not items:
        return
    own = container.get(key, [])
    if isinstance(own, list):
        container[key] = [*items, *own]


def resource_maps(resources: Resources | None, gpu_resource_name: str) -> dict[str, dict[str, str]]:
    """``container.resources`` as Kubernetes' requests/limits maps, keys sorted, ``gpu`` renamed."""
    if resources is None:
        return {}
    maps: dict[str, dict[str, str]] = {}
    for block, entries in (("requests", resources.requests), ("limits", resources.limits)):
        if entries:
            named: dict[str, str] = dict(entries.items())
            if c.GPU_RESOURCE_KEY in named:
                named[gpu_resource_name] = named.pop(c.GPU_RESOURCE_KEY)
            maps[block] = dict(sorted(named.items()))
    return maps
