"""The patches of Knative Serving's ConfigMaps that Flyte's apps rely on, as pulumi-kubernetes
``ConfigMapPatch`` resources (server-side apply), built by ``flyte_apps.core.knative_settings``."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.manager import manifest_fields
from flyte_apps.core.objects import RenderedObject


def register_knative_config(
    objects: Sequence[RenderedObject], opts: pulumi.ResourceOptions
) -> list[pulumi.CustomResource]:
    """Server-side-apply patches of Knative's ConfigMaps (``build_knative_objects``), kept on delete:
    the keys belong to Knative's install, and removing them would break every app at once (and a
    feature flag in ``config-features`` may be relied on by other teams' apps)."""
    patches: list[pulumi.CustomResource] = []
    for obj in objects:
        if not obj.patch or (obj.manifest["apiVersion"], obj.kind) != ("v1", "ConfigMap"):
            msg = f"{obj.kind} '{obj.namespace}/{obj.name}' is not a ConfigMap patch"
            raise ValueError(msg)
        patches.append(
            k8s.core.v1.ConfigMapPatch(
                f"{obj.namespace}-{obj.name}",
                opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(retain_on_delete=True)),
                **manifest_fields(obj.manifest),
            )
        )
    return patches
