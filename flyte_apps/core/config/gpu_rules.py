"""Rules for what an app asks of its node: GPUs, the accelerator they must be, and the resources of
a pod template's containers. Each returns the problems it finds with their key paths.

GPUs follow Flyte's Kubernetes plugin and Kubernetes' rules for extended resources: a whole number of
devices, in the limits (a request alone is not enough) and, if requested too, the same number. The
accelerator's device and partition size become node-affinity and toleration values, so they must be
label values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.accelerator_devices import normalized_device
from flyte_apps.core.bounds import shown
from flyte_apps.core.config.accelerators import gpu_resource_name
from flyte_apps.core.config.models import Accelerator, AppInput, Platform, Resources
from flyte_apps.core.config.names import LABEL_VALUE, MAX_LABEL_LEN, is_subdomain, label_key_problem
from flyte_apps.core.config.node_rules import node_selector_problems, toleration_problems
from flyte_apps.core.config.payload import Payload
from flyte_apps.core.config.pod_paths import KeyPaths, dicts
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.quantities import is_negative_quantity, is_quantity

WHOLE_POSITIVE: Final = re.compile(r"[1-9][0-9]*")
STANDARD_CONTAINER_RESOURCES: Final = ("cpu", "memory", "ephemeral-storage")
HUGEPAGES_PREFIX: Final = "hugepages-"


def gpu_count_problems(resources: Resources, path: str) -> list[ConfigProblem]:
    """``gpu`` is a whole positive number of devices in both blocks (Kubernetes counts devices)."""
    found: list[ConfigProblem] = []
    for block, entries in (("requests", resources.requests), ("limits", resources.limits)):
        value = entries.get(c.GPU_RESOURCE_KEY)
        if value is not None and not WHOLE_POSITIVE.fullmatch(value):
            found.append(
                ConfigProblem(
                    f"{path}.{block}.{c.GPU_RESOURCE_KEY}",
                    f"must be a whole positive number of GPUs, not {shown(value)}",
                )
            )
    return found


def accelerator_problems(accelerator: Accelerator, path: str) -> list[ConfigProblem]:
    """A device, at most one partition choice, and values Kubernetes takes as node-label values."""
    found: list[ConfigProblem] = []
    if not accelerator.device.strip():
        found.append(ConfigProblem(f"{path}.device", "must not be empty (e.g. nvidia-tesla-a100)"))
    else:
        # What is placed: an SDK name (`A100 80G`) becomes its node label value first.
        found.extend(_label_value(normalized_device(accelerator.device), f"{path}.device"))
    if accelerator.partition_size is not None:
        if accelerator.unpartitioned is not None:
            found.append(
                ConfigProblem(f"{path}.unpartitioned", "give partitionSize or unpartitioned, not both")
            )
        found.extend(_label_value(accelerator.partition_size, f"{path}.partitionSize"))
    return found


def _label_value(value: str, path: str) -> list[ConfigProblem]:
    if len(value) > MAX_LABEL_LEN or not LABEL_VALUE.fullmatch(value) or not value:
        return [
            ConfigProblem(
                path,
                f"{shown(value)} is not a valid Kubernetes label value (at most 63 letters, digits, '-', '_' "
                "or '.', starting and ending with a letter or digit); it is matched against node labels",
            )
        ]
    return []


def container_resource_problems(
    resources: object,
    path: str,
    gpu_resource_name: str,
    *,
    skip: frozenset[tuple[str, str]] = frozenset(),
) -> list[ConfigProblem]:
    """A pod template container's requests and limits: names Kubernetes accepts for a container,
    quantities, and GPUs as whole numbers (``skip``: the ``(block, name)`` entries the app's
    ``container`` set, checked where it wrote them)."""
    found: list[ConfigProblem] = []
    if not isinstance(resources, Mapping):
        return found
    for block in ("requests", "limits"):
        entries = resources.get(block)
        if not isinstance(entries, Mapping):
            continue
        for name, value in entries.items():
            if (block, name) in skip:
                continue
            where = f"{path}.{block}.{name}"
            message = _resource_name_problem(str(name), gpu_resource_name)
            if message:
                found.append(ConfigProblem(where, message))
                continue
            text = str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
            if not isinstance(text, str) or not is_quantity(text):
                found.append(ConfigProblem(where, f"{shown(value)} is not a Kubernetes quantity"))
            elif is_negative_quantity(text):
                found.append(ConfigProblem(where, f"{shown(value)} is negative; resources must be >= 0"))
            elif name == gpu_resource_name and not WHOLE_POSITIVE.fullmatch(text):
                found.append(
                    ConfigProblem(where, f"must be a whole positive number of GPUs, not {shown(value)}")
                )
    return found


def _resource_name_problem(name: str, gpu_resource_name: str) -> str | None:
    if name == c.GPU_RESOURCE_KEY:
        return (
            f"'{c.GPU_RESOURCE_KEY}' is not a Kubernetes resource name: set container.resources.*.gpu, or "
            f"name the GPU resource '{gpu_resource_name}' here"
        )
    if name in STANDARD_CONTAINER_RESOURCES or name.startswith(HUGEPAGES_PREFIX):
        return None
    if "/" in name and label_key_problem(name) is None:
        return None
    return (
        f"{shown(name)} is not a resource Kubernetes accepts for a container (cpu, memory, "
        "ephemeral-storage, hugepages-<size>, or an extended resource with a domain, such as nvidia.com/gpu)"
    )


def gpu_count(container: Mapping[str, Any], gpu_resource_name: str) -> int | None:
    """The container's GPUs: the limit, else the request (Flyte's rule); None when it asks for none."""
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return None
    for block in ("limits", "requests"):
        entries = resources.get(block)
        value = entries.get(gpu_resource_name) if isinstance(entries, Mapping) else None
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if isinstance(text, str) and WHOLE_POSITIVE.fullmatch(text):
            return int(text)
    return None


def gpu_mismatch(container: Mapping[str, Any], gpu_resource_name: str) -> tuple[str, str] | None:
    """(request, limit) when the container requests a different number of GPUs than its limit:
    Kubernetes needs the two equal for an extended resource."""
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return None
    values = []
    for block in ("requests", "limits"):
        entries = resources.get(block)
        value = entries.get(gpu_resource_name) if isinstance(entries, Mapping) else None
        values.append(None if value is None else str(value))
    request, limit = values
    if request is not None and limit is not None and request != limit:
        return request, limit
    return None


def accelerator_gpu_problems(
    accelerator: Accelerator | None,
    containers: Sequence[Mapping[str, Any]],
    gpu_resource_name: str,
    path: str,
) -> list[ConfigProblem]:
    """An accelerator says which GPUs: without a GPU count it would place nothing (Flyte's plugin
    applies the accelerator only to pods that request GPUs)."""
    if accelerator is None:
        return []
    if any(gpu_count(container, gpu_resource_name) for container in containers):
        return []
    return [
        ConfigProblem(
            f"{path}.accelerator",
            "needs a GPU count: set container.resources.limits.gpu (and requests.gpu, if at all, to the "
            "same number)",
        )
    ]


def gpu_platform_problems(fields: Mapping[str, Any], path: str) -> list[ConfigProblem]:
    """The platform's GPU settings (by field name): an extended resource name, and node label keys."""
    found = _placement_problems(
        fields,
        path,
        {
            "gpu_resource_name": "gpuResourceName",
            "gpu_device_node_label": "gpuDeviceNodeLabel",
            "gpu_partition_size_node_label": "gpuPartitionSizeNodeLabel",
            "gpu_unpartitioned_toleration": "gpuUnpartitionedToleration",
            "gpu_unpartitioned_node_selector_requirement": "gpuUnpartitionedNodeSelectorRequirement",
        },
    )
    for device_class, entry in (fields.get("accelerator_device_classes") or {}).items():
        found.extend(
            _placement_problems(
                dict(entry),
                f"{path}.acceleratorDeviceClasses.{device_class}",
                {
                    "resource_name": "resourceName",
                    "device_node_label": "deviceNodeLabel",
                    "partition_size_node_label": "partitionSizeNodeLabel",
                    "unpartitioned_toleration": "unpartitionedToleration",
                    "unpartitioned_node_selector_requirement": "unpartitionedNodeSelectorRequirement",
                },
            )
        )
    for name, tolerations in (fields.get("resource_tolerations") or {}).items():
        found.extend(toleration_problems(list(tolerations), f"{path}.resourceTolerations.{name}"))
    found.extend(
        toleration_problems(list(fields.get("default_tolerations") or ()), f"{path}.defaultTolerations")
    )
    found.extend(
        node_selector_problems(fields.get("default_node_selector") or {}, f"{path}.defaultNodeSelector")
    )
    scheduler = fields.get("scheduler_name")
    if scheduler and not is_subdomain(scheduler):
        found.append(
            ConfigProblem(f"{path}.schedulerName", f"{shown(scheduler)} is not a DNS-1123 subdomain")
        )
    for index, name in enumerate(fields.get("add_tolerations_for_extended_resources") or ()):
        problem = label_key_problem(name)
        if problem or "/" not in name:
            reason = problem or "an extended resource name has a domain and a '/'"
            found.append(
                ConfigProblem(
                    f"{path}.addTolerationsForExtendedResources[{index}]", f"not a resource name: {reason}"
                )
            )
    return found


def _placement_problems(fields: Mapping[str, Any], path: str, keys: Mapping[str, str]) -> list[ConfigProblem]:
    """One set of accelerator placement settings (the platform's ``gpu*`` or a device class's), by
    field name: ``keys`` maps resource name, device label, partition label, unpartitioned toleration
    and requirement fields, in that order, to their config keys."""
    resource, device, partition, toleration_field, requirement_field = keys
    found: list[ConfigProblem] = []
    name = fields.get(resource)
    if isinstance(name, str) and name and ("/" not in name or label_key_problem(name) is not None):
        found.append(
            ConfigProblem(
                f"{path}.{keys[resource]}",
                f"{shown(name)} is not an extended resource name (a domain, '/' and a name, such as "
                f"{c.DEFAULT_GPU_RESOURCE_NAME})",
            )
        )
    for field in (device, partition):
        label = fields.get(field)
        problem = label_key_problem(label) if isinstance(label, str) and label else None
        if problem:
            found.append(ConfigProblem(f"{path}.{keys[field]}", f"not a valid node label key: {problem}"))
    toleration = fields.get(toleration_field)
    if toleration is not None:
        where = f"{path}.{keys[toleration_field]}"
        for wrong in toleration_problems([toleration], where):
            found.append(ConfigProblem(wrong.path.replace(f"{where}[0]", where), wrong.message))
    requirement = fields.get(requirement_field)
    if requirement is not None:
        found.extend(requirement_problems(requirement, f"{path}.{keys[requirement_field]}"))
    return found


NODE_SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
REQUIREMENT_KEYS: Final = frozenset({"key", "operator", "values"})


def requirement_problems(requirement: Mapping[str, Any], path: str) -> list[ConfigProblem]:
    """A node-selector requirement as the API server reads one (``ValidateNodeSelectorRequirement``):
    a label key, a known operator, values for In/NotIn (one integer for Gt/Lt), none for Exists and
    DoesNotExist."""
    found = [
        ConfigProblem(f"{path}.{key}", "is not a field of a node-selector requirement")
        for key in sorted(set(requirement) - REQUIREMENT_KEYS)
    ]
    key = requirement.get("key")
    problem = label_key_problem(key) if isinstance(key, str) else "must be a string"
    if problem:
        found.append(ConfigProblem(f"{path}.key", f"not a valid node label key: {problem}"))
    operator = requirement.get("operator")
    values = requirement.get("values") or []
    if operator not in NODE_SELECTOR_OPERATORS:
        found.append(
            ConfigProblem(
                f"{path}.operator", f"{shown(operator)} is not one of {', '.join(NODE_SELECTOR_OPERATORS)}"
            )
        )
    elif not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        found.append(ConfigProblem(f"{path}.values", "must be a list of strings"))
    elif operator in ("In", "NotIn") and not values:
        found.append(ConfigProblem(f"{path}.values", f"must not be empty for {operator}"))
    elif operator in ("Exists", "DoesNotExist") and values:
        found.append(ConfigProblem(f"{path}.values", f"must be empty for {operator}"))
    elif operator in ("Gt", "Lt") and (len(values) != 1 or not values[0].lstrip("-").isdigit()):
        found.append(ConfigProblem(f"{path}.values", f"must be one integer for {operator}"))
    return found


def gpu_problems(app: AppInput, payload: Payload, settings: Platform, where: KeyPaths) -> list[ConfigProblem]:
    """A GPU request equal to its limit, and an accelerator only with GPUs to place."""
    name = gpu_resource_name(app.accelerator, settings)
    found: list[ConfigProblem] = []
    containers = list(dicts(payload.spec.get("containers")))
    for index, container in containers:
        mismatch = gpu_mismatch(container, name)
        if mismatch is None:
            continue
        request, limit = mismatch
        app_gpu = (
            app.container is not None
            and app.container.resources is not None
            and any(
                c.GPU_RESOURCE_KEY in block
                for block in (app.container.resources.requests, app.container.resources.limits)
            )
        )
        at = (
            f"{where.app_path}.container.resources.requests.gpu"
            if app_gpu and container.get("name") == payload.primary
            else where(("containers", index, "resources", "requests", name))
        )
        found.append(
            ConfigProblem(
                at,
                f"requests {request} GPU(s) but the limit is {limit}: Kubernetes needs a GPU request equal "
                "to its limit (or give only the limit)",
            )
        )
    found.extend(
        accelerator_gpu_problems(app.accelerator, [item for _, item in containers], name, where.app_path)
    )
    return found
