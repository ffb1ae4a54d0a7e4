"""Live objects against what ``flyte-apps render`` printed: every field we write, byte for byte.

A live object may carry more than we wrote: what the API server and Knative add, listed with the code
that adds it in ``defaults.yaml``, and nothing else. For a patch of an object someone else owns
(Knative's ConfigMaps), only the fields we write are compared: the rest is the owner's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

DEFAULTS_FILE: Final = Path(__file__).resolve().parent / "defaults.yaml"
ANY: Final = "*"
Path_ = tuple[str, ...]


NO_VALUE: Final = object()


@dataclass(frozen=True)
class Default:
    path: Path_
    source: str
    value: Any = NO_VALUE
    """When set, only this value is a default (an empty ``resources: {}``, not any resources)."""

    def excuses(self, path: Path_, live: Any) -> bool:
        return covers(self.path, path) and (
            self.value is NO_VALUE or (len(path) == len(self.path) and live == self.value)
        )


@dataclass(frozen=True)
class Defaults:
    every_object: tuple[Default, ...]
    kinds: Mapping[str, tuple[Default, ...]]

    def for_kind(self, kind: str) -> tuple[Default, ...]:
        return self.every_object + self.kinds.get(kind, ())


def load_defaults(path: Path = DEFAULTS_FILE) -> Defaults:
    data = yaml.safe_load(path.read_text())

    def entries(items: Sequence[Mapping[str, Any]]) -> tuple[Default, ...]:
        return tuple(
            Default(tuple(str(p) for p in item["path"]), str(item["from"]), item.get("value", NO_VALUE))
            for item in items
        )

    return Defaults(entries(data["every-object"]), {k: entries(v) for k, v in data["kinds"].items()})


def kind_key(obj: Mapping[str, Any]) -> str:
    """``serving.knative.dev/v1/Service``, ``v1/Namespace``."""
    return f"{obj['apiVersion']}/{obj['kind']}"


def covers(default: Path_, path: Path_) -> bool:
    """Whether ``path`` is at or below the default's path (``*`` matches any list index)."""
    if len(path) < len(default):
        return False
    return all(d in (ANY, p) for d, p in zip(default, path, strict=False))


def shown(path: Path_) -> str:
    out = ""
    for part in path:
        out += (
            f"[{part}]"
            if part.isdigit()
            else (f".{part}" if "." not in part and "/" not in part else f"[{part!r}]")
        )
    return out.lstrip(".")


def differences(
    rendered: Mapping[str, Any], live: Mapping[str, Any], defaults: Defaults, *, patch: bool = False
) -> list[str]:
    """Every way ``live`` differs from ``rendered``: a field we write with another value or missing,
    and (unless ``patch``) a field we do not write that no entry of ``defaults`` explains."""
    allowed = defaults.for_kind(kind_key(rendered))
    found: list[str] = []

    def walk(ours: Any, theirs: Any, path: Path_) -> None:
        if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
            for key, value in ours.items():
                if key not in theirs:
                    found.append(f"{shown((*path, key))}: we write {value!r}, the live object has none")
                else:
                    walk(value, theirs[key], (*path, key))
            if not patch:
                for key in theirs:
                    extra = (*path, key)
                    if key in ours:
                        continue
                    if any(d.excuses(extra, theirs[key]) for d in allowed):
                        continue
                    for leaf in leaf_paths(theirs[key], extra):
                        if not any(d.value is NO_VALUE and covers(d.path, leaf) for d in allowed):
                            found.append(f"{shown(extra)}: not ours and no known default: {theirs[key]!r}")
                            break
        elif isinstance(ours, list) and isinstance(theirs, list):
            if len(ours) != len(theirs):
                found.append(
                    f"{shown(path)}: we write {len(ours)} item(s), the live object has {len(theirs)}"
                )
            for index, (a, b) in enumerate(zip(ours, theirs, strict=False)):
                walk(a, b, (*path, str(index)))
        elif type(ours) is not type(theirs) or ours != theirs:
            found.append(f"{shown(path)}: we write {ours!r}, the live object has {theirs!r}")

    walk(rendered, live, ())
    return found


def leaf_paths(obj: Any, path: Path_ = ()) -> list[Path_]:
    """Every leaf path of an object (list indexes as digits; an empty map or list is a leaf)."""
    if isinstance(obj, Mapping):
        return [p for key, value in obj.items() for p in leaf_paths(value, (*path, key))] or [path]
    if isinstance(obj, list):
        return [p for index, value in enumerate(obj) for p in leaf_paths(value, (*path, str(index)))] or [
            path
        ]
    return [path]
