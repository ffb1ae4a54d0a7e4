"""Where pod templates live in the workload kinds the rules look at, and their containers, each with
the field path messages print (``spec.template.spec.containers[0]``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from flyte_apps.policy.wire import ResourceArgs, StackResource, dig, items, kube_type, props_of

POD_SPEC_PATHS: Final[dict[tuple[str, str], tuple[str, ...]]] = {
    ("serving.knative.dev", "Service"): ("spec", "template", "spec"),
    ("serving.knative.dev", "Configuration"): ("spec", "template", "spec"),
    ("apps", "Deployment"): ("spec", "template", "spec"),
    ("apps", "StatefulSet"): ("spec", "template", "spec"),
    ("apps", "DaemonSet"): ("spec", "template", "spec"),
    ("apps", "ReplicaSet"): ("spec", "template", "spec"),
    ("batch", "Job"): ("spec", "template", "spec"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template", "spec"),
    ("core", "ReplicationController"): ("spec", "template", "spec"),
    ("core", "Pod"): ("spec",),
}
CONTAINER_LISTS: Final = ("containers", "initContainers")


@dataclass(frozen=True)
class PodSpec:
    path: str
    """Where the pod spec sits in the resource, e.g. ``spec.template.spec``."""
    spec: dict[str, Any]


@dataclass(frozen=True)
class Container:
    path: str
    """E.g. ``spec.template.spec.containers[0]``."""
    fields: dict[str, Any]


def pod_spec(resource: ResourceArgs | StackResource) -> PodSpec | None:
    """The pod template of a workload (not of a patch, which may hold only part of one); None for
    other resources and while the template is unknown."""
    kind = kube_type(resource.resource_type)
    if kind is None or kind.patch:
        return None
    path = POD_SPEC_PATHS.get((kind.group, kind.kind))
    if path is None:
        return None
    spec = dig(props_of(resource), *path)
    return PodSpec(path=".".join(path), spec=spec) if isinstance(spec, dict) else None


def containers(pod: PodSpec) -> Iterator[Container]:
    """Every known container and init container of ``pod``."""
    for key in CONTAINER_LISTS:
        for index, fields in enumerate(items(pod.spec.get(key))):
            if isinstance(fields, dict):
                yield Container(path=f"{pod.path}.{key}[{index}]", fields=fields)
