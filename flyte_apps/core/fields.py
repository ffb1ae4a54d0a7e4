"""Pure: where a live object does not hold what we render, field by field.

The API server and Knative's webhook add fields to what we apply (defaults, system fields) but do not
rewrite the values we set on a KService (``tests/e2e/compare.py`` checks that against the real ones,
every field we write, byte for byte). So "every field we set has our value" is the comparison: what the
live object holds beyond it is theirs, not a difference. Lists compare item by item when their lengths
match, else as a whole.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldDifference:
    """A field we set (``path``, as kubectl's JSONPath-like dotted form) that the live object holds
    otherwise (``live`` is None when it lacks it)."""

    path: str
    live: Any
    ours: Any


def dig(node: Any, keys: Sequence[str]) -> Any:
    """``node[keys[0]][keys[1]]...``; None where a level is missing or not a map."""
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


def differences(live: Any, ours: Any, path: str) -> Iterator[FieldDifference]:
    """Where ``ours`` is not in ``live``: every key we set must have our value; lists match item by
    item (an item count that differs is one difference, the whole list)."""
    if isinstance(ours, Mapping) and not ours and live is None:
        return  # an empty map is nothing we set (the API server drops empty metadata maps)
    if isinstance(ours, Mapping) and isinstance(live, Mapping):
        for key, value in ours.items():
            yield from differences(live.get(key), value, f"{path}.{key}")
    elif isinstance(ours, list) and isinstance(live, list) and len(ours) == len(live):
        for index, (theirs, value) in enumerate(zip(live, ours, strict=True)):
            yield from differences(theirs, value, f"{path}[{index}]")
    elif live != ours:
        yield FieldDifference(path, live, ours)
