"""What an app's accelerator is placed with: Flyte's Kubernetes plugin (v2.0.43, ``getAcceleratorConfig``
and ``getAllAcceleratorResourceNames`` in ``flytek8s/pod_helper.go`` and ``utils.go``) starts from the
platform's ``gpu*`` settings and, for an accelerator whose class has an entry in
``acceleratorDeviceClasses``, takes each field the entry sets.

An app without an accelerator asks for GPUs as ``gpuResourceName``. An accelerator without a
``deviceClass`` is ``NVIDIA_GPU`` (the proto's default), so with Flyte's default classes its GPUs are
``nvidia.com/gpu`` whatever ``gpuResourceName`` says, as they are for a Flyte task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from flyte_apps.core.config.models import Accelerator, AcceleratorDeviceClass, DeviceClass, Platform

DEFAULT_DEVICE_CLASS: Final[DeviceClass] = "NVIDIA_GPU"
"""``GPUAccelerator.DeviceClass``'s zero value: an accelerator that names no class is one."""


@dataclass(frozen=True)
class AcceleratorSettings:
    """The resource name, node labels and unpartitioned rules one app is placed with."""

    resource_name: str
    device_node_label: str
    partition_size_node_label: str
    unpartitioned_node_selector_requirement: Mapping[str, Any] | None
    unpartitioned_toleration: Mapping[str, Any] | None


def device_class_of(accelerator: Accelerator) -> DeviceClass:
    return accelerator.device_class or DEFAULT_DEVICE_CLASS


def class_settings(accelerator: Accelerator | None, settings: Platform) -> AcceleratorDeviceClass | None:
    """The ``acceleratorDeviceClasses`` entry of the accelerator's class; None without one."""
    if accelerator is None:
        return None
    return settings.accelerator_device_classes.get(device_class_of(accelerator))


def accelerator_settings(accelerator: Accelerator | None, settings: Platform) -> AcceleratorSettings:
    """The platform's ``gpu*`` settings, overridden by each field the class's entry sets."""
    entry = class_settings(accelerator, settings)
    return AcceleratorSettings(
        resource_name=(entry and entry.resource_name) or settings.gpu_resource_name,
        device_node_label=(entry and entry.device_node_label) or settings.gpu_device_node_label,
        partition_size_node_label=(entry and entry.partition_size_node_label)
        or settings.gpu_partition_size_node_label,
        unpartitioned_node_selector_requirement=(
            entry.unpartitioned_node_selector_requirement
            if entry is not None and entry.unpartitioned_node_selector_requirement is not None
            else settings.gpu_unpartitioned_node_selector_requirement
        ),
        unpartitioned_toleration=(
            entry.unpartitioned_toleration
            if entry is not None and entry.unpartitioned_toleration is not None
            else settings.gpu_unpartitioned_toleration
        ),
    )


def gpu_resource_name(accelerator: Accelerator | None, settings: Platform) -> str:
    """The extended resource an app's ``gpu`` count is requested as."""
    return accelerator_settings(accelerator, settings).resource_name


def accelerator_resource_names(settings: Platform) -> frozenset[str]:
    """Every resource name that makes a pod an accelerator pod: ``gpuResourceName`` and each class's."""
    named = {entry.resource_name for entry in settings.accelerator_device_classes.values()}
    return frozenset({settings.gpu_resource_name, *named} - {""})
