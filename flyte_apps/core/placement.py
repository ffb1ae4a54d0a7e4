"""Where an app's pods may run, from the platform settings that mirror Flyte's Kubernetes plugin
(v2.0.43) for task pods, so that apps land where Flyte's tasks land:

- ``resourceTolerations`` (each resource the containers request or limit, by name in sorted order), then
  ``defaultTolerations``, before the pod template's own tolerations (the plugin's ``UpdatePod``; its
  order among resources is a Go map's, ours is fixed);
- ``defaultNodeSelector`` under the pod template's own node selector (the pod's value wins on a shared
  key, the plugin's ``UnionMaps``) and ``schedulerName`` when the pod template names none;
- after everything else, for each of ``addTolerationsForExtendedResources`` that a container or init
  container *requests*, a toleration ``{key: <resource>, operator: Exists, effect: NoSchedule}`` unless
  the pod has it (``AddTolerationsForExtendedResources``).

GPU placement itself is ``flyte_apps.core.gpus``. The functions change the pod spec the caller owns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.config.models import Platform
from flyte_apps.core.objects import Manifest

CONTAINER_BLOCKS: Final = ("containers", "initContainers")


def add_platform_tolerations(pod: Manifest, settings: Platform) -> None:
    """``resourceTolerations`` for each resource the containers request or limit (by name, sorted),
    then ``defaultTolerations``, before the pod's own: what the plugin's ``UpdatePod`` puts first on a
    task pod (its order among resources is a Go map's; ours is fixed)."""
    names: set[str] = set()
    for container in pod.get("containers") or []:
        if isinstance(container, Mapping):
            resources = container.get("resources") or {}
            for block in ("requests", "limits"):
                names.update(resources.get(block) or {})
    added = [
        *(dict(t) for name in sorted(names) for t in settings.resource_tolerations.get(name, ())),
        *(dict(t) for t in settings.default_tolerations),
    ]
    if added:
        pod["tolerations"] = [*added, *(pod.get("tolerations") or [])]


def apply_platform_scheduling(pod: Manifest, settings: Platform) -> None:
    """``defaultNodeSelector`` under the pod's own node selector; ``schedulerName`` unless the pod has one."""
    if settings.default_node_selector:
        pod["nodeSelector"] = {**settings.default_node_selector, **(pod.get("nodeSelector") or {})}
    if settings.scheduler_name and not pod.get("schedulerName"):
        pod["schedulerName"] = settings.scheduler_name


def add_extended_resource_tolerations(pod: Manifest, settings: Platform) -> None:
    """A toleration for each listed extended resource a container or init container requests."""
    requested: set[str] = set()
    for block in CONTAINER_BLOCKS:
        for container in pod.get(block) or []:
            if isinstance(container, Mapping):
                requests = (container.get("resources") or {}).get("requests") or {}
                requested.update(
                    name for name in settings.add_tolerations_for_extended_resources if name in requests
                )
    if requested:
        added = [
            {"key": name, "operator": c.TOLERATION_EXISTS, "effect": c.TAINT_NO_SCHEDULE}
            for name in sorted(requested)
        ]
        pod["tolerations"] = with_tolerations(pod.get("tolerations") or [], added)


TOLERATION_FIELDS: Final = ("key", "effect", "operator", "value")
"""What Kubernetes' ``Toleration.MatchToleration`` compares (as written: an absent operator is not
``Equal``), which the plugin's ``addTolerationInPodSpec`` uses to skip a toleration the pod has."""


def with_tolerations(given: list[Any], tolerations: list[Manifest]) -> list[Any]:
    """``given`` plus each of ``tolerations`` it does not already hold (``TOLERATION_FIELDS``)."""
    result = list(given)
    for toleration in tolerations:
        if not any(
            isinstance(existing, Mapping)
            and all(existing.get(field, "") == toleration.get(field, "") for field in TOLERATION_FIELDS)
            for existing in result
        ):
            result.append(toleration)
    return result
