"""Shared memory on the revision's pod spec, as Flyte's Kubernetes plugin gives it to a task pod
(``ApplySharedMemory``): a volume ``{name: <mountName>, emptyDir: {medium: Memory, sizeLimit}}`` (no
``sizeLimit`` for ``auto``) mounted at ``<mountPath>`` in the primary container. Model servers need
it: PyTorch's and NCCL's workers talk through ``/dev/shm``, which a container runtime limits to 64 MiB.

Clashes with the pod template's volumes and mounts are config errors (``flyte_apps.core.config.
pod_rules``), so this only adds. It replaces (never mutates) the parts of the pod spec it changes.
"""

from __future__ import annotations

from collections.abc import Mapping

from flyte_apps.core import constants as c
from flyte_apps.core.config.models import SharedMemory
from flyte_apps.core.objects import Manifest


def mount_shared_memory(pod: Manifest, memory: SharedMemory | None, primary: str) -> None:
    """Add the shared-memory volume to ``pod`` and mount it in the container named ``primary``."""
    if memory is None:
        return
    empty_dir: Manifest = {"medium": c.STORAGE_MEDIUM_MEMORY}
    if memory.size_limit != c.SHARED_MEMORY_AUTO:
        empty_dir["sizeLimit"] = memory.size_limit
    pod["volumes"] = [*(pod.get("volumes") or []), {"name": memory.mount_name, "emptyDir": empty_dir}]
    mount = {"name": memory.mount_name, "mountPath": memory.mount_path}
    pod["containers"] = [
        {**container, "volumeMounts": [*(container.get("volumeMounts") or []), mount]}
        if isinstance(container, Mapping) and container.get("name") == primary
        else container
        for container in pod.get("containers") or []
    ]
