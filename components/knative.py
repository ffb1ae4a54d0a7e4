"""The patches of Knative Serving's ConfigMaps that Flyte's apps rely on, as pulumi-kubernetes
``ConfigMapPatch`` resources (server-side apply), built by ``flyte_apps.core.knative_settings``."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.manifests import manifest_fields
from flyte_apps.core.objects import RenderedObject


def register_knative_config(
    objects: Sequence[RenderedObject], opts: pulumi.ResourceOptions
) -> dict[str, pulumi.CustomResource]:
    """Server-side-apply patches of Knative's ConfigMaps (``build_knative_objects``), by ConfigMap name.

    Kept on delete: the keys belong to Knative's install, and removing them would break every app at
    once (and a feature flag in ``config-features`` may be relied on by other teams' apps). Replaced
    (a new patch, then the old one let go) rather than updated when they change: a patch being created
    has no ID in a preview, which is how the apps' KServices know to skip the preview's dry run that
    Knative's webhook would refuse until the patch is applied (``FlyteAppArgs.admitted_after``)."""
    patches: dict[str, pulumi.CustomResource] = {}
    for obj in objects:
        if not obj.patch or (obj.manifest["apiVersion"], obj.kind) != ("v1", "ConfigMap"):
            msg = f"{obj.kind} '{obj.namespace}/{obj.name}' is not a ConfigMap patch"
            raise ValueError(msg)
        patches[obj.name] = k8s.core.v1.ConfigMapPatch(
            f"{obj.namespace}-{obj.name}",
            opts=pulumi.ResourceOptions.merge(
                opts,
                pulumi.ResourceOptions(
                    retain_on_delete=True, replace_on_changes=["*"], delete_before_replace=False
                ),
            ),
            **manifest_fields(obj.manifest),
        )
    return patches
