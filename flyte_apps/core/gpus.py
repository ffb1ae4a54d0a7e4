"""GPUs on the revision's pod spec, as Flyte's Kubernetes plugin puts them on a task pod.

Flyte's app service drops the container's GPU entries and ignores ``extended_resources``; this does
what the plugin does for a task with the same request, so an app lands where Flyte's tasks land:

- each container that asks for GPUs gets ``<resource name>: N`` in both its limits and its
  requests (N = the limit, else the request): Kubernetes needs a limit for an extended resource and
  a request equal to it. The resource name is ``gpuResourceName``, or the one the accelerator's
  class names in ``acceleratorDeviceClasses`` (``flyte_apps.core.config.accelerators``);
- an accelerator adds a required node affinity on the device node label In [device] (an SDK device
  name normalized to its node label value, ``flyte_apps.core.accelerator_devices``) and, for a
  partition size, on the partition size node label In [size] (DoesNotExist for ``unpartitioned``),
  appended to every node-selector term the pod template has, and tolerations
  ``{key, operator: Equal, value, effect: NoSchedule}`` for the same labels (none for
  ``unpartitioned``, which has no value) — the plugin's ``ApplyGPUNodeSelectors``. The labels and
  unpartitioned rules are the class's, else the ``gpu*`` settings; a requirement or toleration the pod
  template already has is not added twice, as the plugin skips it. The plugin applies them only to pods
  whose limits hold an accelerator resource (``gpuResourceName`` or any class's); the config rules
  refuse an accelerator without a GPU count.

The functions take a pod spec the caller owns and replace (never mutate) the parts they change, so a
spec shared with the app's config stays as it was.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from flyte_apps.core import constants as c
from flyte_apps.core.accelerator_devices import normalized_device
from flyte_apps.core.config.accelerators import accelerator_resource_names, accelerator_settings
from flyte_apps.core.config.gpu_rules import gpu_count
from flyte_apps.core.config.models import Accelerator, Platform
from flyte_apps.core.objects import Manifest
from flyte_apps.core.placement import with_tolerations


def set_gpu_counts(pod: Manifest, gpu_resource_name: str) -> None:
    """Every container with a GPU count asks for it in both its limits and its requests."""
    containers = pod.get("containers")
    if not isinstance(containers, list):
        return
    updated = []
    for container in containers:
        count = gpu_count(container, gpu_resource_name) if isinstance(container, Mapping) else None
        if count is None:
            updated.append(container)
            continue
        resources = dict(container.get("resources") or {})
        for block in ("limits", "requests"):
            resources[block] = {**(resources.get(block) or {}), gpu_resource_name: str(count)}
        updated.append({**container, "resources": resources})
    pod["containers"] = updated


def place_on_accelerator(pod: Manifest, accelerator: Accelerator | None, settings: Platform) -> None:
    """Node affinity and tolerations for ``accelerator`` (nothing when there is none)."""
    if accelerator is None or not _asks_for_accelerators(pod, accelerator_resource_names(settings)):
        return
    placed = accelerator_settings(accelerator, settings)
    # The plugin's normalization: an SDK name (`A100 80G`) becomes its node label value.
    device = normalized_device(accelerator.device)
    requirements: list[Manifest] = [
        {"key": placed.device_node_label, "operator": c.NODE_SELECTOR_IN, "values": [device]}
    ]
    tolerations: list[Manifest] = [_toleration(placed.device_node_label, device)]
    if accelerator.partition_size is not None:
        requirements.append(
            {
                "key": placed.partition_size_node_label,
                "operator": c.NODE_SELECTOR_IN,
                "values": [accelerator.partition_size],
            }
        )
        tolerations.append(_toleration(placed.partition_size_node_label, accelerator.partition_size))
    elif accelerator.unpartitioned:
        requirement = placed.unpartitioned_node_selector_requirement
        requirements.append(
            dict(requirement)
            if requirement is not None
            else {"key": placed.partition_size_node_label, "operator": c.NODE_SELECTOR_DOES_NOT_EXIST}
        )
        if placed.unpartitioned_toleration is not None:
            tolerations.append(dict(placed.unpartitioned_toleration))
    pod["affinity"] = _with_required_node_requirements(pod.get("affinity"), requirements)
    pod["tolerations"] = with_tolerations(pod.get("tolerations") or [], tolerations)


def _asks_for_accelerators(pod: Mapping[str, Any], resource_names: frozenset[str]) -> bool:
    """A container's limits hold an accelerator resource (the plugin's ``podRequiresAccelerator``)."""
    containers = pod.get("containers")
    return isinstance(containers, list) and any(
        isinstance(container, Mapping)
        and isinstance(container.get("resources"), Mapping)
        and isinstance(container["resources"].get("limits"), Mapping)
        and not resource_names.isdisjoint(container["resources"]["limits"])
        for container in containers
    )


def _toleration(key: str, value: str) -> Manifest:
    return {"key": key, "operator": c.TOLERATION_EQUAL, "value": value, "effect": c.TAINT_NO_SCHEDULE}


def _with_required_node_requirements(affinity: object, requirements: list[Manifest]) -> Manifest:
    """``affinity`` (a copy) with ``requirements`` added to every required node-selector term, or to
    a new one when there is none: terms are ORed, so each must carry them (the plugin's
    ``AddRequiredNodeSelectorRequirements``)."""
    result: Manifest = copy.deepcopy(dict(affinity)) if isinstance(affinity, Mapping) else {}
    node = result.setdefault("nodeAffinity", {})
    required = node.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    required["nodeSelectorTerms"] = [
        {**term, "matchExpressions": _without_repeats(term.get("matchExpressions") or [], requirements)}
        for term in terms
    ]
    return result


def _without_repeats(expressions: list[Any], requirements: list[Manifest]) -> list[Any]:
    """``expressions`` plus each requirement a term does not already hold (the plugin's
    ``containsNodeSelectorRequirement``: the same key, operator and values, in order)."""
    result = list(expressions)
    for requirement in requirements:
        if not any(_same_requirement(given, requirement) for given in result):
            result.append(requirement)
    return result


def _same_requirement(given: object, requirement: Manifest) -> bool:
    return isinstance(given, Mapping) and all(
        given.get(field) == requirement.get(field) for field in ("key", "operator", "values")
    )
