"""Manifests as YAML text: one multi-document stream, or one document per object (the files
``flyte-apps render --out`` writes).

Every YAML this project writes goes through ``dump_yaml``: PyYAML's safe dumper (libyaml when PyYAML
has it), which also quotes every string that any common reader would take for something else (Go's
YAML 1.1 and 1.2 readers behind ``kubectl apply``, kustomize and Argo CD included, see
``flyte_apps.core.yamlcompat``), so the text means the same to all of them.

With libyaml, a mapping of plain data (dicts, lists, strings, numbers, booleans, None) is written
without PyYAML's Python representer and resolver, which cost more than everything else ``render``
does per object: the events they would produce are made here directly and handed to the same
libyaml emitter, so the text is the same byte for byte (``tests/core/test_yamlout.py`` compares the
two on every kind of value). Anything else (other types, an object that appears twice, which PyYAML
writes as an anchor, sorted keys, no libyaml) takes PyYAML's own path."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any, Final, cast

import yaml
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)

from flyte_apps.core.objects import Manifest, RenderedObject
from flyte_apps.core.yamlcompat import TAG_PREFIX, read_as_non_string

PATCH_COMMENT: Final = "# patch (server-side apply)"
STR_TAG: Final = f"{TAG_PREFIX}str"
_MAP_TAG: Final = f"{TAG_PREFIX}map"
_SEQ_TAG: Final = f"{TAG_PREFIX}seq"
_SCALARS: Final = (bool, int, float, type(None))
"""Other scalars the fast path hands to PyYAML's representer, one at a time."""
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
    return _Writer().dump(data, sort_keys=sort_keys)


def to_yaml(objects: Sequence[RenderedObject]) -> str:
    """Multi-document YAML; a patched object is preceded by a ``# patch (server-side apply)`` line."""
    writer = _Writer()
    return "".join(f"---\n{_document(obj, writer)}" for obj in objects)


class _NotPlain(Exception):
    """The data holds something the fast path leaves to PyYAML (a type, or an object seen twice)."""


class _Writer:
    """Writes documents, remembering which short strings may stay plain: the same keys and many
    values (``name``, ``value``, API versions) come back in every object of a stack."""

    _REMEMBERED: Final = 4096
    _SHORT: Final = 64

    def __init__(self) -> None:
        self._plain: dict[str, bool] = {}

    def dump(self, data: object, *, sort_keys: bool = False) -> str:
        if not sort_keys and isinstance(data, dict) and _BASE_DUMPER is not yaml.SafeDumper:
            events = self._events(data)
            if events is not None:
                stream = io.StringIO()
                dumper = YAML_DUMPER(stream, default_flow_style=False, allow_unicode=True, sort_keys=False)
                try:
                    for event in events:
                        dumper.emit(event)
                finally:
                    dumper.dispose()
                return stream.getvalue()
        return yaml.dump(
            data, Dumper=YAML_DUMPER, sort_keys=sort_keys, default_flow_style=False, allow_unicode=True
        )

    def _may_stay_plain(self, text: str) -> bool:
        """What the resolver hook above decides: plain unless some reader would not read a string."""
        plain = self._plain.get(text)
        if plain is None:
            plain = not read_as_non_string(text)
            if len(text) <= self._SHORT and len(self._plain) < self._REMEMBERED:
                self._plain[text] = plain
        return plain

    def _events(self, data: dict[Any, Any]) -> list[Event] | None:
        """The events PyYAML's representer and serializer would emit for ``data`` as one document
        (``yaml.dump(..., default_flow_style=False, sort_keys=False)`` with :data:`YAML_DUMPER`), or
        None when ``data`` holds something only they handle."""
        events = _Events(self._may_stay_plain)
        try:
            events.walk(data)
        except (_NotPlain, RecursionError):
            return None
        return [
            StreamStartEvent(),
            DocumentStartEvent(explicit=False),
            *events.made,
            DocumentEndEvent(explicit=False),
            StreamEndEvent(),
        ]


class _Events:
    """The events of one document's data (a class, not nested functions: a function that names itself
    is a reference cycle, which would keep every event until a collection)."""

    def __init__(self, may_stay_plain: Callable[[str], bool]) -> None:
        self.made: list[Event] = []
        self._add = self.made.append
        self._may_stay_plain = may_stay_plain
        self._seen: set[int] = set()
        self._representer = yaml.representer.SafeRepresenter(default_flow_style=False, sort_keys=False)
        self._resolve = cast(Callable[[Any, str, tuple[bool, bool]], str], yaml.resolver.Resolver().resolve)

    def walk(self, value: Any) -> None:
        kind = type(value)
        if kind is str:
            self._add(ScalarEvent(None, STR_TAG, (self._may_stay_plain(value), True), value))
        elif kind is dict:
            if id(value) in self._seen:
                raise _NotPlain  # PyYAML would write an anchor and an alias
            self._seen.add(id(value))
            self._add(MappingStartEvent(None, _MAP_TAG, True, flow_style=False))
            for key, item in value.items():
                self.walk(key)
                self.walk(item)
            self._add(MappingEndEvent())
        elif kind is list:
            if id(value) in self._seen:
                raise _NotPlain
            self._seen.add(id(value))
            self._add(SequenceStartEvent(None, _SEQ_TAG, True, flow_style=False))
            for item in value:
                self.walk(item)
            self._add(SequenceEndEvent())
        elif kind in _SCALARS:
            self._scalar(value)
        else:
            raise _NotPlain

    def _scalar(self, value: Any) -> None:
        # Another scalar type: PyYAML's representer writes it, the resolver decides if it is implicit.
        node = self._representer.represent_data(value)
        if not isinstance(node, yaml.ScalarNode) or node.tag == STR_TAG:
            raise _NotPlain
        implicit = (
            self._resolve(yaml.ScalarNode, node.value, (True, False)) == node.tag,
            self._resolve(yaml.ScalarNode, node.value, (False, True)) == node.tag,
        )
        self._add(ScalarEvent(None, node.tag, implicit, node.value, style=node.style))


def yaml_text(manifest: Manifest) -> str:
    """One manifest as YAML: PyYAML's safe dumper, through libyaml when PyYAML has it (same text,
    several times faster on large stacks)."""
    return dump_yaml(manifest)


def document(obj: RenderedObject) -> str:
    return _document(obj, _Writer())


def _document(obj: RenderedObject, writer: _Writer) -> str:
    body = writer.dump(obj.manifest)
    return f"{PATCH_COMMENT}\n{body}" if obj.patch else body


def file_name(index: int, obj: RenderedObject) -> str:
    return f"{index:03d}-{obj.kind.lower()}-{obj.name}.yaml"
