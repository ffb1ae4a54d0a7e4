"""The floor of the engine benchmark: the objects our plan renders, registered as plain
pulumi-kubernetes resources under one provider: a ``Namespace``, a ``ConfigMapPatch`` for each
patch of Knative's ConfigMaps, a ``CustomResource`` for each KService. No validation, no components,
no reapers, no exports. The objects come from a JSON file named by the config key ``bench:objects``
(``[{"manifest": ..., "patch": bool}]``, written by ``bench/engine_scale.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

import pulumi
import pulumi_kubernetes as k8s
from pulumi_kubernetes.apiextensions import CustomResource

CONFIG_NAMESPACE: Final = "bench"
CONFIG_OBJECTS: Final = "objects"


def main() -> None:
    objects = json.loads(Path(pulumi.Config(CONFIG_NAMESPACE).require(CONFIG_OBJECTS)).read_text())
    provider = k8s.Provider("kubernetes", kubeconfig=pulumi.Config("kubernetes").get("kubeconfig"))
    first: list[pulumi.Resource] = []
    for entry in objects:
        manifest = entry["manifest"]
        meta = manifest["metadata"]
        name = "-".join(filter(None, (manifest["kind"].lower(), meta.get("namespace"), meta["name"])))
        opts = pulumi.ResourceOptions(
            provider=provider, depends_on=first if manifest["kind"] == "Service" else None
        )
        if manifest["kind"] == "Namespace":
            first.append(k8s.core.v1.Namespace(name, metadata=meta, opts=opts))
        elif entry["patch"]:
            first.append(
                k8s.core.v1.ConfigMapPatch(name, metadata=meta, data=manifest.get("data"), opts=opts)
            )
        else:
            CustomResource(
                name,
                api_version=manifest["apiVersion"],
                kind=manifest["kind"],
                metadata=meta,
                spec=manifest.get("spec"),
                opts=opts,
            )


main()
