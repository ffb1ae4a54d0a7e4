"""Rules for volumes: the pod template's volumes and mounts as Knative admits them, and shared
memory, the RAM-backed emptyDir Flyte's Kubernetes plugin mounts into the primary container.

Knative refuses a volume that no container mounts, a mount path it reserves, and a writable mount of
a ``configMap``, ``secret`` or ``projected`` volume; Kubernetes refuses a mount of a volume that does
not exist and a path mounted twice in one container. Flyte's plugin refuses shared memory whose
name or path the pod template already uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import shown
from flyte_apps.core.config.models import AppInput, SharedMemory
from flyte_apps.core.config.names import DNS1123_LABEL, MAX_LABEL_LEN
from flyte_apps.core.config.payload import Payload
from flyte_apps.core.config.pod_paths import CONTAINER_LISTS, KeyPaths, Place, dicts
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.quantities import is_negative_quantity, is_quantity, is_zero_quantity

KNATIVE_RESERVED_MOUNT_PATHS: Final = ("/", "/dev", "/dev/log", "/tmp", "/var", "/var/log")
"""Mount paths Knative's admission refuses (they hold what its queue-proxy and the runtime need)."""
READ_ONLY_SOURCES: Final = ("configMap", "secret", "projected")
"""Volume sources Knative mounts only read-only."""


def volume_problems(spec: Mapping[str, Any], where: KeyPaths) -> list[ConfigProblem]:
    """Every volume is mounted (Knative refuses one that is not), every mount names a volume, mount
    paths are absolute, unique per container and not Knative's, and read-only where Knative says."""
    found: list[ConfigProblem] = []
    volumes: dict[str, dict[str, Any]] = {}
    for index, volume in dicts(spec.get("volumes")):
        name = volume.get("name")
        if not isinstance(name, str):
            continue
        if name in volumes:
            found.append(ConfigProblem(where(("volumes", index, "name")), f"duplicate volume name '{name}'"))
        volumes.setdefault(name, volume)
    mounted: set[str] = set()
    for key in CONTAINER_LISTS:
        for index, container in dicts(spec.get(key)):
            paths: dict[str, int] = {}
            for number, mount in dicts(container.get("volumeMounts")):
                place: Place = (key, index, "volumeMounts", number)
                name = mount.get("name")
                if isinstance(name, str):
                    mounted.add(name)
                    found.extend(_mount_problems(mount, volumes.get(name), place, where))
                mount_path = mount.get("mountPath")
                if isinstance(mount_path, str):
                    found.extend(mount_path_problems(mount_path, where((*place, "mountPath"))))
                    cleaned = clean_mount_path(mount_path)
                    if cleaned in paths:
                        found.append(
                            ConfigProblem(
                                where((*place, "mountPath")),
                                f"'{mount_path}' is mounted twice in this container (also at "
                                f"{where((key, index, 'volumeMounts', paths[cleaned], 'mountPath'))})",
                            )
                        )
                    paths.setdefault(cleaned, number)
    for index, volume in dicts(spec.get("volumes")):
        name = volume.get("name")
        if isinstance(name, str) and name not in mounted:
            found.append(
                ConfigProblem(
                    where(("volumes", index)),
                    f"volume '{name}' is not mounted by any container; Knative refuses unmounted volumes",
                )
            )
    return found


def _mount_problems(
    mount: Mapping[str, Any], volume: Mapping[str, Any] | None, place: Place, where: KeyPaths
) -> list[ConfigProblem]:
    name = mount["name"]
    if volume is None:
        return [ConfigProblem(where((*place, "name")), f"no volume named '{name}' in pod.spec.volumes")]
    read_only = mount.get("readOnly") is True
    source = next((key for key in READ_ONLY_SOURCES if volume.get(key) is not None), None)
    if source is not None and not read_only:
        return [
            ConfigProblem(
                where((*place, "readOnly")),
                f"must be true: Knative mounts {source} volumes ('{name}') read-only only",
            )
        ]
    claim = volume.get("persistentVolumeClaim")
    if isinstance(claim, Mapping) and claim.get("readOnly") is True and not read_only:
        return [
            ConfigProblem(
                where((*place, "readOnly")),
                f"must be true: the claim of volume '{name}' is read-only (Knative refuses the mismatch)",
            )
        ]
    return []


def shared_memory_problems(memory: SharedMemory, path: str) -> list[ConfigProblem]:
    """A size (or ``auto``), an absolute mount path Knative allows, and a valid volume name."""
    found: list[ConfigProblem] = []
    size = memory.size_limit
    if size != c.SHARED_MEMORY_AUTO:
        if not is_quantity(size) or is_negative_quantity(size):
            found.append(
                ConfigProblem(
                    f"{path}.sizeLimit",
                    f"must be a Kubernetes quantity such as 2Gi, or auto, not {shown(size)}",
                )
            )
        elif is_zero_quantity(size):
            found.append(
                ConfigProblem(
                    f"{path}.sizeLimit", f"{shown(size)} is no memory at all; use auto for no limit"
                )
            )
    found.extend(mount_path_problems(memory.mount_path, f"{path}.mountPath"))
    if len(memory.mount_name) > MAX_LABEL_LEN or not DNS1123_LABEL.fullmatch(memory.mount_name):
        found.append(
            ConfigProblem(
                f"{path}.mountName",
                f"{shown(memory.mount_name)} is not a valid volume name (a DNS-1123 label: lower-case "
                "letters, digits and '-', at most 63 characters)",
            )
        )
    return found


def shared_memory_clashes(app: AppInput, payload: Payload, path: str) -> list[ConfigProblem]:
    """Shared memory is one more volume and mount (Flyte's plugin refuses a clash, and so do we)."""
    memory = app.shared_memory
    if memory is None:
        return []
    found: list[ConfigProblem] = []
    spec = payload.spec
    volumes = [volume.get("name") for _, volume in dicts(spec.get("volumes"))]
    primary = next(
        (item for _, item in dicts(spec.get("containers")) if item.get("name") == payload.primary), {}
    )
    mounts = [mount for _, mount in dicts(primary.get("volumeMounts"))]
    if memory.mount_name in volumes or memory.mount_name in [mount.get("name") for mount in mounts]:
        found.append(
            ConfigProblem(
                f"{path}.sharedMemory.mountName",
                f"'{memory.mount_name}' is already a volume of the pod template; give shared memory "
                "another name",
            )
        )
    taken = [clean_mount_path(item) for mount in mounts if isinstance(item := mount.get("mountPath"), str)]
    if clean_mount_path(memory.mount_path) in taken:
        found.append(
            ConfigProblem(
                f"{path}.sharedMemory.mountPath",
                f"'{memory.mount_path}' is already mounted in the primary container '{payload.primary}'",
            )
        )
    return found


def mount_path_problems(mount_path: object, path: str) -> list[ConfigProblem]:
    """An absolute path that Knative does not reserve."""
    if not isinstance(mount_path, str) or not mount_path.startswith("/"):
        return [ConfigProblem(path, f"must be an absolute path, not {shown(mount_path)}")]
    if clean_mount_path(mount_path) in KNATIVE_RESERVED_MOUNT_PATHS:
        reserved = ", ".join(KNATIVE_RESERVED_MOUNT_PATHS)
        return [ConfigProblem(path, f"{shown(mount_path)} is reserved by Knative ({reserved})")]
    return []


def clean_mount_path(mount_path: str) -> str:
    """An absolute path as Go's ``filepath.Clean`` makes it: no empty, ``.`` or ``..`` parts (Knative
    compares cleaned paths, so ``/tmp/`` is ``/tmp``)."""
    parts: list[str] = []
    for part in mount_path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)
