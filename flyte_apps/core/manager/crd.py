"""Pure: the ``taskactions.flyte.org`` CustomResourceDefinition that the Flyte manager reconciles.

The manager watches TaskActions from startup and cannot work without this CRD. It ships as product
data beside this module, ``taskactions.yaml``: Flyte's published CRD (flyteorg/flyte
``executor/config/crd/bases/flyte.org_taskactions.yaml``, commit 6fadb90d65, controller-gen v0.19.0,
Apache-2.0), descriptions included so that ``kubectl explain taskactions`` reads as upstream's does.
``tests/core/test_manager.py`` compares the two. Reading
package data is the one read this core module does: the file is part of the code, not input.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Final

import yaml

from flyte_apps.core.objects import Manifest

DATA_FILE: Final = "taskactions.yaml"
GROUP: Final = "flyte.org"
PLURAL: Final = "taskactions"
CRD_NAME: Final = f"{PLURAL}.{GROUP}"
YAML_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def build_taskaction_crd(labels: Mapping[str, str]) -> Manifest:
    """The CRD manifest with ``labels`` on it; a fresh object on each call, so callers may mutate it."""
    text = resources.files(__package__).joinpath(DATA_FILE).read_text(encoding="utf-8")
    crd: Manifest = yaml.load(text, Loader=YAML_LOADER)
    metadata = crd["metadata"]
    crd["metadata"] = {"name": metadata["name"], "labels": dict(labels), **metadata}
    return crd
