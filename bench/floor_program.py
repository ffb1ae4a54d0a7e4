"""The floor of the program-scale benchmark: the least a Pulumi program can do to register our KServices.

Written in the style of ``__main__.py`` (config read at the top, one explicit provider, resources
registered in a loop) but with no validation, no components, no reapers and no exports: it reads
KService manifests that ``flyte_apps.core.plan.plan_stack`` produced beforehand (a JSON list, named by
the config key ``bench:kservices``) and registers each as a bare ``CustomResource``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

import pulumi
import pulumi_kubernetes as k8s
from pulumi_kubernetes.apiextensions import CustomResource

CONFIG_NAMESPACE: Final = "bench"
CONFIG_KSERVICES: Final = "kservices"


def main() -> None:
    path = Path(pulumi.Config(CONFIG_NAMESPACE).require(CONFIG_KSERVICES))
    manifests = json.loads(path.read_text(encoding="utf-8"))
    provider = k8s.Provider("kubernetes")
    for manifest in manifests:
        CustomResource(
            manifest["metadata"]["name"],
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=pulumi.ResourceOptions(provider=provider),
        )


if __name__ == "__main__":
    main()
