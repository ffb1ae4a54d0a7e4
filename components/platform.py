"""Pure manifests for platform-level objects (the app namespace)."""

from __future__ import annotations

from components import constants as c
from components.config import PlatformConfig
from components.knative import Manifest


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
