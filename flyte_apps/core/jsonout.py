"""Manifests as JSON: one kubectl-style ``List``. JSON has no comments, so the objects the program
patches rather than owns (``# patch (server-side apply)`` in YAML) are named in the List's
``flyte-apps/patches`` annotation as ``Kind/namespace/name``, comma-separated."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.objects import Manifest, RenderedObject

JSON_INDENT: Final = 4
"""kubectl's ``-o json`` indentation."""


def to_json_list(objects: Sequence[RenderedObject]) -> str:
    """A ``v1`` ``List`` of ``objects`` in apply order, as indented JSON text."""
    listing: dict[str, Any] = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": []}
    patches = [patch_reference(obj) for obj in objects if obj.patch]
    if patches:
        listing["metadata"]["annotations"] = {c.ANNOTATION_PATCHES: ",".join(patches)}
    listing["items"] = [obj.manifest for obj in objects]
    return json.dumps(listing, indent=JSON_INDENT, ensure_ascii=False) + "\n"


def json_document(manifest: Manifest) -> str:
    """One object as indented JSON text (``render --out-dir -o json`` writes one per file)."""
    return json.dumps(manifest, indent=JSON_INDENT, ensure_ascii=False) + "\n"


def patch_reference(obj: RenderedObject) -> str:
    """``Kind/namespace/name`` (``Kind/name`` for a cluster-scoped object)."""
    where = f"{obj.namespace}/" if obj.namespace else ""
    return f"{obj.kind}/{where}{obj.name}"
