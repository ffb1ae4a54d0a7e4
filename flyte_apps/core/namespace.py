"""Pure manifests for platform-level objects (the app namespace)."""

from __future__ import annotations

from flyte_apps.core import constants as c
from flyte_apps.core.config.models import PlatformConfig
from flyte_apps.core.objects import Manifest


def build_namespace(platform: PlatformConfig) -> Manifest:
    """The namespace every app KService lives in (upstream: one namespace for all apps)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": platform.settings.namespace,
            "labels": {c.LABEL_MANAGED_BY: c.MANAGED_BY_PULUMI},
        },
    }
