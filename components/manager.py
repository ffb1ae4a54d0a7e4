"""``FlyteManager``: the Flyte manager's objects as typed Kubernetes resources.

It registers manifests built by ``flyte_apps.core.manager`` unchanged (metadata, spec, rules, data go
over as they are), so what ``pulumi up`` applies is what ``flyte-apps render`` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import pulumi
import pulumi_kubernetes as k8s

from components.manifests import manifest_fields
from flyte_apps.core.manager.objects import manager_urls
from flyte_apps.core.objects import RenderedObject

TYPE_FLYTE_MANAGER: Final = "flyte:manager:FlyteManager"
"""Type token of the component; part of every child's URN, so it never changes."""

CRD_KIND: Final = "CustomResourceDefinition"
DEPLOYMENT_KIND: Final = "Deployment"
SERVICE_KIND: Final = "Service"

ResourceFactory = Callable[..., pulumi.CustomResource]

_TYPED_RESOURCES: Final[Mapping[tuple[str, str], ResourceFactory]] = {
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "PersistentVolumeClaim"): k8s.core.v1.PersistentVolumeClaim,
    ("v1", SERVICE_KIND): k8s.core.v1.Service,
    ("apps/v1", DEPLOYMENT_KIND): k8s.apps.v1.Deployment,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("apiextensions.k8s.io/v1", CRD_KIND): k8s.apiextensions.v1.CustomResourceDefinition,
}


@dataclass(frozen=True)
class FlyteManagerArgs:
    """Inputs of a ``FlyteManager``."""

    objects: Sequence[RenderedObject]
    """The manager's objects, from ``flyte_apps.core.manager.build_manager_objects``."""


class FlyteManager(pulumi.ComponentResource):
    """The Flyte manager: RBAC, the TaskAction CRD, its config, volume, Deployment and Services."""

    resources: dict[tuple[str, str], pulumi.CustomResource]
    """Every child, by Kubernetes kind and name."""
    runs_url: pulumi.Output[str]
    """In-cluster URL of the Runs service (``http://flyte-manager-runs.<ns>.svc.cluster.local:8090``)."""
    queue_url: pulumi.Output[str]
    """In-cluster URL of the Queue service (the seed's manager only)."""

    def __init__(self, name: str, args: FlyteManagerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE_FLYTE_MANAGER, name, None, opts)
        urls = manager_urls(args.objects)
        child = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=self))
        self.resources = {}
        # The Deployment goes last and waits for the rest: the manager needs its RBAC, config,
        # volume and CRD at startup (it watches TaskActions), while the Services need nothing.
        needed_at_startup: list[pulumi.Resource] = []
        deployments = [obj for obj in args.objects if obj.kind == DEPLOYMENT_KIND]
        for obj in args.objects:
            if obj.kind == DEPLOYMENT_KIND:
                continue
            extra = pulumi.ResourceOptions(retain_on_delete=True) if obj.kind == CRD_KIND else None
            resource = self._register(name, obj, pulumi.ResourceOptions.merge(child, extra))
            if obj.kind != SERVICE_KIND:
                needed_at_startup.append(resource)
        for obj in deployments:
            self._register(
                name,
                obj,
                pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=needed_at_startup)),
            )
        self.runs_url = pulumi.Output.from_input(urls.runs)
        self.queue_url = pulumi.Output.from_input(urls.queue)
        self.register_outputs({"runsUrl": self.runs_url, "queueUrl": self.queue_url})

    def _register(
        self, name: str, obj: RenderedObject, opts: pulumi.ResourceOptions
    ) -> pulumi.CustomResource:
        resource = typed_resource(f"{name}-{obj.kind.lower()}-{obj.name}", obj, opts)
        self.resources[(obj.kind, obj.name)] = resource
        return resource


def typed_resource(name: str, obj: RenderedObject, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """Register ``obj`` as its pulumi-kubernetes type, every top-level field passed as it is."""
    api_version = str(obj.manifest["apiVersion"])
    factory = _TYPED_RESOURCES.get((api_version, obj.kind))
    if obj.patch or factory is None:
        msg = f"{api_version} {obj.kind} '{obj.name}' is not an object the manager component registers"
        raise ValueError(msg)
    return factory(name, opts=opts, **manifest_fields(obj.manifest))
