"""Reading YAML that people wrote, strictly: a document must mean one thing to every reader.

PyYAML would take a file whose second ``image:`` silently replaces the first, whose ``ON:`` key is
the boolean True, or whose ``y`` is a string where Pulumi's Go reader sees a boolean. ``read_yaml``
reads the document as PyYAML does but reports, with line and column, every duplicate key (naming
both lines), every key that is not a string, and every plain scalar that PyYAML and Go's YAML 1.1
reader (Pulumi's CLI) read as different types. Only a syntax error stops it early.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import yaml

from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.yamlcompat import KIND_NAMES, MERGE, STR, TAG_PREFIX, go_yaml_v2_kind

Keys = tuple[str | int, ...]
"""Where a node is in the document: map keys and list indexes from the root."""

_LOADER: Final[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class YamlIssue:
    """One thing in a document that readers would disagree on, or that a reviewer would misread."""

    keys: Keys
    line: int
    column: int
    message: str


def read_yaml(text: str, source: str) -> tuple[Any, list[YamlIssue]]:
    """The document in ``text`` as PyYAML's safe loader reads it, and every issue found in it.

    Raises ``ConfigError`` naming ``source``, line and column for a syntax error (the only problem
    that stops the reading)."""
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        issues = [] if node is None else list(_issues(node))
        data = None if node is None else loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        raise ConfigError([ConfigProblem(_where(source, exc.problem_mark), _syntax_message(exc))]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([ConfigProblem(source, f"is not valid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    return data, issues


def _issues(root: yaml.Node) -> Iterator[YamlIssue]:
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, Keys]] = [(root, ())]
    while stack:
        node, keys = stack.pop()
        if id(node) in seen:  # an alias: its node was checked where the anchor stands
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            issue = _scalar_issue(node, keys, role="value")
            if issue is not None:
                yield issue
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((child, (*keys, index)) for index, child in reversed(list(enumerate(node.value))))
        elif isinstance(node, yaml.MappingNode):
            children: list[tuple[yaml.Node, Keys]] = []
            first_line: dict[tuple[str, str], int] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    yield _issue(key_node, keys, "a key must be a plain string, not a list or a map")
                    continue
                child_keys = (*keys, key_node.value)
                if key_node.tag == f"{TAG_PREFIX}merge":
                    children.append((value_node, keys))
                    continue
                issue = _scalar_issue(key_node, child_keys, role="key")
                if issue is not None:
                    yield issue
                identity = (key_node.tag, key_node.value)
                if identity in first_line:
                    yield _issue(
                        key_node,
                        child_keys,
                        f"duplicate key '{key_node.value}' (also on line {first_line[identity]}); "
                        "YAML readers keep only one of them",
                    )
                else:
                    first_line[identity] = key_node.start_mark.line + 1
                children.append((value_node, child_keys))
            stack.extend(reversed(children))


def _scalar_issue(node: yaml.ScalarNode, keys: Keys, *, role: str) -> YamlIssue | None:
    ours = str(node.tag).removeprefix(TAG_PREFIX)
    if role == "key" and ours != STR:
        return _issue(
            node,
            keys,
            f"key '{node.value}' is read as {KIND_NAMES.get(ours, ours)}, not a string; "
            f'quote it ("{node.value}":) to use it as a name',
        )
    if node.style:  # quoted or block scalars are strings to every reader (plain: None, or "" from libyaml)
        return None
    theirs = go_yaml_v2_kind(node.value)
    if theirs == ours or (ours == MERGE and theirs == MERGE):
        return None
    return _issue(
        node,
        keys,
        f"{role} '{node.value}' is {KIND_NAMES.get(ours, ours)} to flyte-apps (PyYAML) but "
        f"{KIND_NAMES.get(theirs, theirs)} to Pulumi's YAML 1.1 reader; write it quoted "
        f'("{node.value}") for a string{_unquoted_hint(theirs)}',
    )


def _unquoted_hint(kind: str) -> str:
    if kind == "bool":
        return ", or true/false for a boolean"
    if kind in ("int", "float"):
        return ", or a plain decimal number for a number"
    return ""


def _issue(node: yaml.Node, keys: Keys, message: str) -> YamlIssue:
    mark = node.start_mark
    return YamlIssue(keys=keys, line=mark.line + 1, column=mark.column + 1, message=message)


def _where(source: str, mark: Any) -> str:
    if mark is None:
        return source
    return f"{source}:{mark.line + 1}:{mark.column + 1}"


def _syntax_message(exc: yaml.MarkedYAMLError) -> str:
    parts = [part for part in (exc.context, exc.problem) if part]
    return "is not valid YAML: " + ", ".join(parts)
