"""Limits the Kubernetes API server enforces on every object's metadata, checked before anything is
applied: an object it would refuse is a config error naming the app, not a failed ``pulumi up``.

From Kubernetes' ObjectMeta validation (apimachinery): annotations may hold at most 256 KiB in all
(keys plus values); a label key is an optional DNS-subdomain prefix (at most 253 characters) and a
name of at most 63; a label value is at most 63 characters of letters, digits, ``-``, ``_`` and ``.``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.config.names import LABEL_VALUE, MAX_LABEL_LEN, label_key_problem
from flyte_apps.core.errors import ConfigProblem

MAX_ANNOTATIONS_BYTES: Final = 256 * 1024


def object_problems(manifest: Mapping[str, Any], path: str) -> list[ConfigProblem]:
    """What the API server would refuse in ``manifest``'s metadata and its pod template's."""
    kind = str(manifest.get("kind", "object"))
    found = _metadata_problems(manifest.get("metadata") or {}, path, f"the {kind}'s")
    template = ((manifest.get("spec") or {}).get("template") or {}).get("metadata") or {}
    found.extend(_metadata_problems(template, path, f"the {kind}'s pod template's"))
    return found


def annotations_size(annotations: Mapping[str, str]) -> int:
    """Bytes Kubernetes counts against the limit: every key and value, UTF-8 encoded."""
    return sum(_utf8_len(key) + _utf8_len(value) for key, value in annotations.items())


def _utf8_len(text: str) -> int:
    """``len(text.encode())`` without the copy when ``text`` is ASCII (the spec's base64 always is)."""
    return len(text) if text.isascii() else len(text.encode())


def _metadata_problems(metadata: Mapping[str, Any], path: str, whose: str) -> list[ConfigProblem]:
    found: list[ConfigProblem] = []
    annotations = metadata.get("annotations") or {}
    size = annotations_size(annotations)
    if size > MAX_ANNOTATIONS_BYTES:
        biggest = max(annotations, key=lambda key: len(annotations[key]))
        hint = (
            " (it holds the whole app spec, env values and the pod template included)"
            if biggest == c.ANNOTATION_SPEC
            else ""
        )
        found.append(
            ConfigProblem(
                path,
                f"{whose} annotations would take {size:,} bytes; Kubernetes allows at most "
                f"{MAX_ANNOTATIONS_BYTES:,} in all. The largest is {biggest} ({len(annotations[biggest]):,} "
                f"bytes){hint}",
            )
        )
    for key, value in (metadata.get("labels") or {}).items():
        message = label_problem(str(key), str(value))
        if message:
            found.append(ConfigProblem(path, f"{whose} label {message}"))
    return found


def label_problem(key: str, value: str) -> str | None:
    """Why Kubernetes would refuse the label ``key: value``, or None."""
    key_problem = label_key_problem(key)
    if key_problem:
        return key_problem
    if len(value) > MAX_LABEL_LEN or not LABEL_VALUE.fullmatch(value):
        return (
            f"'{key}' has the value '{value}', which is not {MAX_LABEL_LEN} or fewer letters, digits, "
            "'-', '_' or '.', starting and ending with a letter or digit"
        )
    return None
