"""Manifests as YAML text: one multi-document stream, or one document per object (the files
``flyte-apps render --out`` writes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import yaml

from flyte_apps.core.objects import Manifest, RenderedObject

PATCH_COMMENT: Final = "# patch (server-side apply)"
YAML_DUMPER: Final = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def to_yaml(objects: Sequence[RenderedObject]) -> str:
    """Multi-document YAML; a patched object is preceded by a ``# patch (server-side apply)`` line."""
    return "".join(f"---\n{document(obj)}" for obj in objects)


def yaml_text(manifest: Manifest) -> str:
    """One manifest as YAML: PyYAML's safe dumper, through libyaml when PyYAML has it (same text,
    several times faster on large stacks)."""
    return yaml.dump(
        manifest, Dumper=YAML_DUMPER, sort_keys=False, default_flow_style=False, allow_unicode=True
    )


def document(obj: RenderedObject) -> str:
    body = yaml_text(obj.manifest)
    return f"{PATCH_COMMENT}\n{body}" if obj.patch else body


def file_name(index: int, obj: RenderedObject) -> str:
    return f"{index:03d}-{obj.kind.lower()}-{obj.name}.yaml"
