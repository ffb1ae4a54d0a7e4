"""The design's floor of the program-scale benchmark: what any program built as the design asks must do.

The design (and the project card) wants one ``ComponentResource`` per app and a spec that needs
pydantic, flyteidl2 and protovalidate, so a program shaped like ours cannot do less than this: import
those three, then register each KService (pre-rendered by ``flyte_apps.core.plan.plan_stack``, read
from the JSON list named by the config key ``bench:kservices``) as a ``CustomResource`` inside one
bare component that registers no outputs. No validation, no namespace, no reapers, no exports: what
``__main__.py`` spends above this is our own overhead (reading and validating config, output
properties, the plan's memory, reapers).

``bench/floor_program.py`` (bare ``CustomResource``s, no components, no imports) stays as the
second, lower reference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import protovalidate  # noqa: F401  (imported: the design's program needs it)
import pulumi
import pulumi_kubernetes as k8s
import pydantic  # noqa: F401  (imported: the design's program needs it)
from flyteidl2.app import app_definition_pb2  # noqa: F401  (imported: the design's program needs it)
from pulumi_kubernetes.apiextensions import CustomResource

CONFIG_NAMESPACE: Final = "bench"
CONFIG_KSERVICES: Final = "kservices"
COMPONENT_TYPE: Final = "bench:floor:App"


class BareApp(pulumi.ComponentResource):
    """One app: its KService as the only child, and no outputs."""

    def __init__(self, name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(COMPONENT_TYPE, name, None, opts)
        CustomResource(
            f"{name}-kservice",
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=self)),
        )
        self.register_outputs({})


def main() -> None:
    path = Path(pulumi.Config(CONFIG_NAMESPACE).require(CONFIG_KSERVICES))
    manifests = json.loads(path.read_text(encoding="utf-8"))
    provider = k8s.Provider("kubernetes")
    for manifest in manifests:
        BareApp(manifest["metadata"]["name"], manifest, pulumi.ResourceOptions(provider=provider))


if __name__ == "__main__":
    main()
