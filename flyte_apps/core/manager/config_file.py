"""The manager's ``config.yaml``: one file for both generations of the manager (each ignores the
other's keys), generated from the manager's and the platform's settings, then ``extraConfig``."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any, Final

from flyte_apps.core.config.models import AcceleratorDeviceClass, DeviceClass, Platform, PlatformConfig
from flyte_apps.core.durations import format_duration
from flyte_apps.core.manager.layout import (
    ANY_HOST,
    DB_PASSWORD_PATH,
    SQLITE_FILE,
    WEBHOOK_CERT_DIR,
    WEBHOOK_SERVICE_NAME,
    WEBHOOK_SERVICE_PORT,
)
from flyte_apps.core.manager.models import ManagerConfig, ManagerInput
from flyte_apps.core.yamlout import dump_yaml

# flytestdlib's logger.level is a logrus level number.
LOG_LEVELS: Final = {"error": 2, "warn": 3, "info": 4, "debug": 5}


def build_config_file(manager: ManagerConfig, platform: PlatformConfig) -> dict[str, Any]:
    """The manager's ``config.yaml`` as data: both generations' keys, then ``extraConfig``."""
    return deep_merge(generated_config(manager.input, platform), manager.input.extra_config)


def render_config_file(manager: ManagerConfig, platform: PlatformConfig) -> str:
    """``config.yaml`` text, with sorted keys so that its checksum only changes with its content."""
    return dump_yaml(build_config_file(manager, platform), sort_keys=True)


def internal_apps_config(platform: PlatformConfig, *, apps_enabled: bool) -> dict[str, Any]:
    """Flyte's ``internalApps`` section, from the same settings the KServices are rendered with."""
    settings = platform.settings
    return {
        "enabled": apps_enabled,
        "baseDomain": settings.base_domain,
        "scheme": settings.scheme,
        "ingressAppsPort": settings.ingress_apps_port,
        "defaultRequestTimeout": format_duration(settings.default_request_timeout),
        "maxRequestTimeout": format_duration(settings.max_request_timeout),
        "namespacedNameSuffixTemplate": settings.namespaced_name_suffix_template,
        # Upstream's list of single-key maps, so the platform's order survives (reference (j)).
        "defaultEnvVars": [{var.name: var.value} for var in platform.default_env],
        "watchBufferSize": settings.watch_buffer_size,
        "defaultServiceAccount": settings.default_service_account,
    }


def deep_merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``extra`` merged in: maps merge key by key, any other value replaces."""
    merged = copy.deepcopy(dict(base))
    for key, value in extra.items():
        current = merged.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            merged[key] = deep_merge(current, value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def generated_config(manager: ManagerInput, platform: PlatformConfig) -> dict[str, Any]:
    namespace = platform.settings.namespace
    ports = manager.ports
    database = manager.database
    config: dict[str, Any] = {
        # The seed's manager.
        "manager": {
            "runsService": {"host": ANY_HOST, "port": ports.runs},
            "queueService": {"host": ANY_HOST, "port": ports.queue},
            "executor": {"healthProbePort": ports.health},
            "kubernetes": {"namespace": namespace},
        },
        "logger": {"level": LOG_LEVELS[manager.log_level]},
        # Flyte's current main.
        "runs": {"server": {"host": ANY_HOST, "port": ports.runs}},
        "executor": {"healthProbeBindAddress": f":{ports.health}"},
        "actions": {"kubernetes": {"namespace": namespace}},
        "secret": {"kubernetes": {"namespace": namespace}},
        "webhook": {
            "listenPort": ports.webhook,
            "serviceName": WEBHOOK_SERVICE_NAME,
            "servicePort": WEBHOOK_SERVICE_PORT,
            # The manager generates its webhook certificate at startup; written to a writable
            # directory, the webhook server can read it without a Secret volume that does not yet
            # exist when the pod starts.
            "localCert": True,
            "certDir": WEBHOOK_CERT_DIR,
            "embeddedSecretManagerConfig": {"k8sConfig": {"namespace": namespace}},
        },
        "internalApps": internal_apps_config(platform, apps_enabled=manager.apps_enabled),
        # Flyte's Kubernetes plugin places task pods with these; the apps are placed with the same
        # platform settings (flyte_apps.core.gpus), so tasks and apps land alike by construction.
        "plugins": {"k8s": gpu_placement_config(platform)},
    }
    if database.type == "sqlite":
        config["database"] = {"type": "sqlite", "sqlite": {"file": SQLITE_FILE}}
    else:
        config["runs"]["database"] = {
            "postgres": {
                "host": database.host,
                "port": database.port,
                "dbname": database.dbname,
                "username": database.username,
                "passwordPath": DB_PASSWORD_PATH,
            }
        }
    return config


PLACEMENT_KEYS: Final = {
    "gpu-resource-name": "gpuResourceName",
    "gpu-device-node-label": "gpuDeviceNodeLabel",
    "gpu-partition-size-node-label": "gpuPartitionSizeNodeLabel",
    "accelerator-device-classes": "acceleratorDeviceClasses",
    "resource-tolerations": "resourceTolerations",
    "default-tolerations": "defaultTolerations",
    "gpu-unpartitioned-toleration": "gpuUnpartitionedToleration",
    "gpu-unpartitioned-node-selector-requirement": "gpuUnpartitionedNodeSelectorRequirement",
    "add-tolerations-for-extended-resources": "addTolerationsForExtendedResources",
    "default-node-selector": "defaultNodeSelector",
    "scheduler-name": "schedulerName",
}
"""``plugins.k8s``'s placement keys the apps are placed with too, and their platform settings."""


def gpu_placement_config(platform: PlatformConfig) -> dict[str, Any]:
    """``plugins.k8s``'s placement keys (Flyte v2.0.43's ``K8sPluginConfig``) from the platform: the
    three GPU labels always, every other in-scope setting when it is not Flyte's default, so tasks are
    placed as the apps are."""
    settings = platform.settings
    config: dict[str, Any] = {
        "gpu-resource-name": settings.gpu_resource_name,
        "gpu-device-node-label": settings.gpu_device_node_label,
        "gpu-partition-size-node-label": settings.gpu_partition_size_node_label,
    }
    defaults = Platform()
    optional: dict[str, tuple[object, object]] = {
        "accelerator-device-classes": (
            _classes_config(settings.accelerator_device_classes),
            _classes_config(defaults.accelerator_device_classes),
        ),
        "resource-tolerations": (
            {name: list(items) for name, items in settings.resource_tolerations.items()},
            {},
        ),
        "default-tolerations": (list(settings.default_tolerations), []),
        "gpu-unpartitioned-toleration": (settings.gpu_unpartitioned_toleration, None),
        "gpu-unpartitioned-node-selector-requirement": (
            settings.gpu_unpartitioned_node_selector_requirement,
            None,
        ),
        "add-tolerations-for-extended-resources": (list(settings.add_tolerations_for_extended_resources), []),
        "default-node-selector": (dict(settings.default_node_selector), {}),
        "scheduler-name": (settings.scheduler_name, ""),
    }
    config.update({key: value for key, (value, default) in optional.items() if value != default})
    return config


def _classes_config(classes: Mapping[DeviceClass, AcceleratorDeviceClass]) -> dict[str, dict[str, Any]]:
    """Device classes under Flyte's keys (``AcceleratorDeviceClassConfig``'s JSON tags), set fields only."""
    found: dict[str, dict[str, Any]] = {}
    for name, entry in classes.items():
        fields = {
            "resource-name": entry.resource_name,
            "device-node-label": entry.device_node_label,
            "partition-size-node-label": entry.partition_size_node_label,
            "unpartitioned-node-selector-requirement": entry.unpartitioned_node_selector_requirement,
            "unpartitioned-toleration": entry.unpartitioned_toleration,
        }
        found[name] = {key: value for key, value in fields.items() if value}
    return found


def config_checksum(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
