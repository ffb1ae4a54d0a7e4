"""Manifests as YAML text: one multi-document stream, or one document per object (the files
``flyte-apps render --out`` writes).

Every YAML this project writes goes through ``dump_yaml``: PyYAML's own ``yaml.dump`` with its safe
dumper (libyaml's when PyYAML has it) and one rule added to the dumper's resolver, which quotes every
string that any common reader would take for something else (Go's YAML 1.1 and 1.2 readers behind
``kubectl apply``, kustomize and Argo CD included, see ``flyte_apps.core.yamlcompat``), so the text
means the same to all of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import yaml

from flyte_apps.core.objects import Manifest, RenderedObject
from flyte_apps.core.yamlcompat import TAG_PREFIX, read_as_non_string

PATCH_COMMENT: Final = "# patch (server-side apply)"
STR_TAG: Final = f"{TAG_PREFIX}str"
_NOT_PLAIN_TAG: Final = f"{TAG_PREFIX}flyte-apps-quoted"
"""What the dumper says a plain string would be read as when some reader would not read a string:
anything but the str tag makes the emitter quote it."""
_BASE_DUMPER: Final[Any] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _resolve_for_every_reader(self: Any, kind: Any, value: Any, implicit: tuple[bool, bool]) -> Any:
    tag = _BASE_DUMPER.resolve(self, kind, value, implicit)
    if kind is yaml.ScalarNode and implicit[0] and tag == STR_TAG and read_as_non_string(value):
        return _NOT_PLAIN_TAG
    return tag


YAML_DUMPER: Final[Any] = type(
    "EveryReaderSafeDumper", (_BASE_DUMPER,), {"resolve": _resolve_for_every_reader}
)
"""PyYAML's safe dumper that also quotes strings Go's readers would take for numbers or booleans."""


def dump_yaml(data: object, *, sort_keys: bool = False) -> str:
    """``data`` as block-style YAML that every common reader reads back unchanged."""
    return yaml.dump(
        data, Dumper=YAML_DUMPER, sort_keys=sort_keys, default_flow_style=False, allow_unicode=True
    )


def to_yaml(objects: Sequence[RenderedObject]) -> str:
    """Multi-document YAML; a patched object is preceded by a ``# patch (server-side apply)`` line."""
    return "".join(f"---\n{document(obj)}" for obj in objects)


def yaml_text(manifest: Manifest) -> str:
    """One manifest as YAML (:func:`dump_yaml`)."""
    return dump_yaml(manifest)


def document(obj: RenderedObject) -> str:
    body = dump_yaml(obj.manifest)
    return f"{PATCH_COMMENT}\n{body}" if obj.patch else body


def file_name(index: int, obj: RenderedObject) -> str:
    return f"{index:03d}-{obj.kind.lower()}-{obj.name}.yaml"
