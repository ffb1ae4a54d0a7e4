"""Adopting a running app's KService (``adopt`` in an app's stack config): ``true`` registers it with
Pulumi's ``import`` option (``<namespace>/<name>``, pulumi-kubernetes' ID; a no-op once in state),
``upsert`` through a second Kubernetes provider that updates an existing object in place."""

from __future__ import annotations

from typing import Final

import pulumi
import pulumi_kubernetes as k8s

from flyte_apps.core.adopt import ADOPT_UPSERT
from flyte_apps.core.plan import AppPlan

UPSERT_PROVIDER_NAME: Final = "kubernetes-upsert"


def kservice_options(plan: AppPlan, parent: pulumi.Resource) -> pulumi.ResourceOptions:
    """The KService's own options: its parent, and the ``import`` option (``<namespace>/<name>``) when
    the app is adopted as it is (``adopt: true``)."""
    adopted = plan.config.input.adopt is True
    return pulumi.ResourceOptions(
        parent=parent, import_=f"{plan.namespace}/{plan.kservice_name}" if adopted else None
    )


def upserts(plan: AppPlan) -> bool:
    """Whether the app's KService goes through the upsert provider (``adopt: upsert``)."""
    return plan.config.input.adopt == ADOPT_UPSERT


def upsert_provider(kubeconfig: str | None, context: str | None, cluster_identifier: str) -> k8s.Provider:
    """The provider of ``adopt: upsert`` KServices: its create updates the existing object in place
    (a server-side apply; with pulumi-kubernetes 4.25 every create under server-side apply does, and
    the KService's ``pulumi.com/patchForce`` takes over the fields its creator owns). A provider of its
    own so that state written with it keeps its provider."""
    return k8s.Provider(
        UPSERT_PROVIDER_NAME,
        kubeconfig=kubeconfig,
        context=context,
        cluster_identifier=cluster_identifier,
        enable_server_side_apply=True,
    )
