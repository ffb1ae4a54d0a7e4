"""The same-graph floor of the engine benchmark: the resource graph our program registers, with no logic
of ours. Under one provider: the ``Namespace`` and a ``ConfigMapPatch`` per patch of Knative's
ConfigMaps (as ``bench/floor_engine.py``); per app a ``ComponentResource`` (a subclass, as ours) of
our component's type with the KService as its child (waiting for the namespace and the patches, no
await), the same outputs registered, and for a stopped app a no-op dynamic resource after the
KService; the stack export ``apps``. No validation, no planning, no Knative wait. The graph comes from
a JSON file named by the config key ``bench:objects`` (``{"objects": [{"manifest": ..., "patch":
bool}], "apps": [{"name": ..., "key": ..., "stopped": bool, "outputs": {...}}]}``, written by
``bench/engine_scale.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s
from pulumi.dynamic import CreateResult, Resource, ResourceProvider
from pulumi_kubernetes.apiextensions import CustomResource

CONFIG_NAMESPACE: Final = "bench"
CONFIG_OBJECTS: Final = "objects"
TYPE_APP: Final = "flyte:apps:FlyteApp"


class NoOpProvider(ResourceProvider):
    """A dynamic provider that does nothing: the floor of a reaper's registration and host round trip."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=str(props["name"]), outs=props)


class App(pulumi.ComponentResource):
    """A component of our component's type with no logic. A subclass, as every component is: the SDK
    records a resource's stack trace in the state only when a subclass constructs it (it looks for a
    third ``__init__`` frame), so ``pulumi.ComponentResource`` built directly would leave each app's
    component about 1.2 KiB lighter in every checkpoint than ours."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions) -> None:
        super().__init__(TYPE_APP, name, None, opts)


class NoOp(Resource, module="bench", name="NoOp"):
    def __init__(self, name: str, opts: pulumi.ResourceOptions) -> None:
        super().__init__(NoOpProvider(), name, {"name": name}, opts)


def main() -> None:
    graph = json.loads(Path(pulumi.Config(CONFIG_NAMESPACE).require(CONFIG_OBJECTS)).read_text())
    provider = k8s.Provider("kubernetes", kubeconfig=pulumi.Config("kubernetes").get("kubeconfig"))
    first: list[pulumi.Resource] = []
    kservices: dict[str, dict[str, Any]] = {}
    for entry in graph["objects"]:
        manifest = entry["manifest"]
        meta = manifest["metadata"]
        name = "-".join(filter(None, (manifest["kind"].lower(), meta.get("namespace"), meta["name"])))
        opts = pulumi.ResourceOptions(provider=provider)
        if manifest["kind"] == "Namespace":
            first.append(k8s.core.v1.Namespace(name, metadata=meta, opts=opts))
        elif entry["patch"]:
            first.append(
                k8s.core.v1.ConfigMapPatch(name, metadata=meta, data=manifest.get("data"), opts=opts)
            )
        elif manifest["kind"] == "Service":
            kservices[meta["name"]] = manifest
    exports = {}
    for app in graph["apps"]:
        component = App(app["name"], pulumi.ResourceOptions(depends_on=first, provider=provider))
        manifest = kservices[app["name"]]
        kservice = CustomResource(
            f"{app['name']}-kservice",
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=pulumi.ResourceOptions(parent=component, depends_on=first),
        )
        if app["stopped"]:
            NoOp(f"{app['name']}-reaper", pulumi.ResourceOptions(parent=component, depends_on=[kservice]))
        component.register_outputs(app["outputs"])
        exports[app["key"]] = app["outputs"]
    pulumi.export("apps", exports)


main()
