"""Pure: the parts of an object read from the cluster, whatever shape the server gave them.

A KService, Revision or pod comes from whoever runs the API server (or a proxy in front of it), so
``status.conditions`` may be a string, ``metadata.annotations`` a list, a condition a bare string.
Readers take each part through these accessors and get the shape they expect, empty when the object
does not have it (a label that is not text is no label), instead of an ``AttributeError``.

Objects are parsed JSON, whose maps are dicts: each check asks ``isinstance(value, dict)`` first and
the ``Mapping`` ABC (about ten times the cost) only for anything else, so any map is still a map."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

_MAPS = (dict, Mapping)  # in this order: ``isinstance`` stops at the first that matches


def is_map(value: object) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, _MAPS)


def mapping(value: object) -> Mapping[str, Any]:
    return value if is_map(value) else {}


def texts(value: object) -> dict[str, str]:
    """A map of text to text (labels, annotations): other entries dropped."""
    return {k: v for k, v in mapping(value).items() if isinstance(k, str) and isinstance(v, str)}


def text_at(value: object, key: str) -> str | None:
    """``texts(value).get(key)`` without building the map: one label or annotation."""
    found = mapping(value).get(key)
    return found if isinstance(found, str) else None


def mappings(value: object) -> list[Mapping[str, Any]]:
    """The maps of a list (conditions, containers): other items dropped."""
    return [item for item in value if is_map(item)] if isinstance(value, list) else []


def metadata_of(obj: object) -> Mapping[str, Any]:
    return mapping(mapping(obj).get("metadata"))


def labels_of(obj: object) -> dict[str, str]:
    return texts(metadata_of(obj).get("labels"))


def label_of(obj: object, key: str) -> str | None:
    """One label (``labels_of(obj).get(key)``)."""
    return text_at(metadata_of(obj).get("labels"), key)


def annotations_of(obj: object) -> dict[str, str]:
    return texts(metadata_of(obj).get("annotations"))


def status_of(obj: object) -> Mapping[str, Any]:
    return mapping(mapping(obj).get("status"))


def conditions_of(obj: object) -> list[Mapping[str, Any]]:
    return mappings(status_of(obj).get("conditions"))


def text_of(value: object) -> str:
    """A field that should be text: itself, or empty."""
    return value if isinstance(value, str) else ""
