"""Reading YAML that people wrote, strictly: a document must mean one thing to every reader.

PyYAML would take a file whose second ``image:`` silently replaces the first, whose ``ON:`` key is
the boolean True, or whose ``y`` is a string where Pulumi's Go reader sees a boolean. ``read_yaml``
reads the document as PyYAML does but reports, with line and column, every duplicate key (naming
both lines), every key that is not a string, and every plain scalar that PyYAML and Go's YAML 1.1
reader (Pulumi's CLI) read as different types.

A stack file is untrusted input (a fork's pull request runs ``flyte-apps check``), so reading it is
bounded (``flyte_apps.core.bounds``): the text's size, and, on the composed document before a single
value is built, nesting, aliases (at most :data:`MAX_ALIASES`; none may contain itself, and what
they expand to is counted, so a "billion laughs" is refused instead of walked), and the length of
number literals. A syntax error or an exceeded bound stops the reading early.

Most stack files hold none of this: plain maps, lists, strings, numbers and booleans. Such a document
is checked and built in one walk over the composed nodes (:func:`_clean_values`), which gives up at
the first thing it does not expect (an issue, an alias, a merge key, a tag other than the core
scalars, a bound); the document is then read again by the full, slower checks, so every finding,
message and line is theirs. The line of each key is worked out only when someone asks for one
(:func:`key_lines`), from the text, by the same walk that finds the issues.

Reading leaves the interpreter as it found it (the cyclic garbage collector included): this is the
pure core, which programs and the policy pack import as well as the command line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar, cast

import yaml

from flyte_apps.core.bounds import (
    MAX_INPUT_BYTES,
    MAX_NESTING,
    MAX_NUMBER_CHARS,
    long_number_message,
    nesting_message,
    shown,
    too_large_message,
)
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.yamlcompat import (
    BOOL,
    FLOAT,
    INT,
    KIND_NAMES,
    MERGE,
    NULL,
    STR,
    TAG_PREFIX,
    go_yaml_v2_kind,
)

Keys = tuple[str | int, ...]
K = TypeVar("K")
V = TypeVar("V")
"""Where a node is in the document: map keys and list indexes from the root."""

MERGE_KEY_MESSAGE: Final = (
    "a merge key (<<) is refused: YAML readers disagree on it (with a list of maps, Go's readers and so "
    "Pulumi take a key from the first map that has it, PyYAML from the last), so what `check` judged "
    "need not be what Pulumi deploys; write the keys out (an alias of a whole value is fine)"
)
MAX_ALIASES: Final = 20
"""Aliases (``*name``) a document may use. Stack files rarely share blocks at all; a few shared env
blocks fit, an alias bomb (each level aliasing the one below) does not."""
MAX_VALUES: Final = 2_000_000
"""Values (scalars, maps, lists) a document may hold once every alias is expanded, as the config
checks walk it; 10,000 generated apps hold about 565,000."""

_LOADER: Final[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_NUMBER_TAGS: Final = frozenset((TAG_PREFIX + INT, TAG_PREFIX + FLOAT))
_STR_TAG: Final = TAG_PREFIX + STR
_MAP_TAG: Final = f"{TAG_PREFIX}map"
_SEQ_TAG: Final = f"{TAG_PREFIX}seq"
_CLEAN_SCALAR_TAGS: Final = frozenset(TAG_PREFIX + kind for kind in (STR, INT, FLOAT, BOOL, NULL))
"""The tags of the plain scalars :func:`_clean_values` builds itself; any other takes the full path."""
_SHARED_SCALAR_TAGS: Final = frozenset(TAG_PREFIX + kind for kind in (STR, INT, BOOL, NULL))
"""Scalars whose value may be built once per text and shared: immutable, and equal to themselves
(a float may be NaN, which is not, so each one is built where it stands)."""
_ALIAS_INDICATOR: Final = "*"
"""Only an alias (``*name``) makes the composer share a node: a text without the character has none."""


@dataclass(frozen=True)
class YamlIssue:
    """One thing in a document that readers would disagree on, or that a reviewer would misread."""

    keys: Keys
    line: int
    column: int
    message: str


def read_yaml(text: str, source: str) -> tuple[Any, list[YamlIssue], Mapping[Keys, int]]:
    """The document in ``text`` as PyYAML's safe loader reads it, every issue found in it, and the
    line each key and list item stands on (so a later finding can point at the stack file's line).

    Raises ``ConfigError`` naming ``source``, line and column for a syntax error or an exceeded
    bound (the problems that stop the reading)."""
    if len(text) > MAX_INPUT_BYTES:  # characters: at least as many bytes
        raise ConfigError([ConfigProblem(source, too_large_message(len(text.encode()), "a stack file"))])
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, [], {}
        clean = _clean_values(loader, node, shared=_ALIAS_INDICATOR in text)
        if clean is not None:
            return clean[0], [], key_lines(text, _LOADER)
        bound_problems = _bound_problems(node, text, source)
        if bound_problems:
            raise ConfigError(bound_problems)
        lines: dict[Keys, int] = {}
        issues = list(_issues(node, lines))
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        raise ConfigError([ConfigProblem(_where(source, exc.problem_mark), _syntax_message(exc))]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([ConfigProblem(source, f"is not valid YAML: {shown(str(exc))}")]) from None
    except RecursionError:  # only PyYAML's pure-Python composer recurses (no libyaml): too deep
        raise ConfigError([ConfigProblem(source, nesting_message())]) from None
    finally:
        loader.dispose()
    return data, issues, lines


class LaterMap(Mapping[K, V]):
    """A map made by ``make`` when first looked into, then kept."""

    def __init__(self, make: Callable[[], dict[K, V]]) -> None:
        self._make: Callable[[], dict[K, V]] | None = make
        self._made: dict[K, V] = {}

    def _map(self) -> dict[K, V]:
        if self._make is not None:
            self._made = self._make()
            self._make = None
        return self._made

    def __getitem__(self, key: K) -> V:
        return self._map()[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())

    def __repr__(self) -> str:
        return f"LaterMap({self._map()!r})"


def key_lines(text: str, loader: Any) -> LaterMap[Keys, int]:
    """The line of each key and list item of a document :func:`read_yaml` read without an issue,
    found when first asked for: the text is composed again and walked as :func:`_issues` walks it,
    so the lines are the ones that walk records."""

    def find() -> dict[Keys, int]:
        lines: dict[Keys, int] = {}
        composer = loader(text)
        try:
            node = composer.get_single_node()
            if node is not None:
                for _ in _issues(node, lines):
                    pass
        finally:
            composer.dispose()
        return lines

    return LaterMap(find)


class _NotClean(Exception):
    """The document holds something :func:`_clean_values` leaves to the full checks."""


def _clean_values(loader: Any, root: yaml.Node, *, shared: bool) -> tuple[Any] | None:
    """The values of a document in which the full checks would find nothing (no bound exceeded, no
    issue) and that PyYAML's constructor would build from core scalars, maps and lists only, built as
    that constructor builds them; None as soon as anything else turns up. ``shared``: the text may
    hold aliases, so every node is checked for being seen twice."""
    try:
        return (_CleanWalk(loader, shared=shared).build(root, 1),)
    except (_NotClean, yaml.YAMLError, ValueError, RecursionError):
        return None


class _CleanWalk:
    """One walk of :func:`_clean_values` (a class, not nested functions: a function that names itself
    is a reference cycle, which would keep the loader and the nodes until a collection)."""

    def __init__(self, loader: Any, *, shared: bool) -> None:
        self._loader = loader
        self._constructors = loader.yaml_constructors
        self._shared = shared
        self._seen: set[int] = set()
        self._scalars: dict[str, tuple[str, Any]] = {}
        """Plain scalar text -> (tag, value) of the first time it was read without a finding."""

    def build(self, node: yaml.Node, depth: int) -> Any:
        if self._shared:
            self._once(node)
        kind = type(node)
        if kind is yaml.ScalarNode:
            return self._scalar(cast(yaml.ScalarNode, node))
        if depth > MAX_NESTING:
            raise _NotClean
        if kind is yaml.MappingNode and node.tag == _MAP_TAG:
            mapping: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if type(key_node) is not yaml.ScalarNode or key_node.tag != _STR_TAG:
                    raise _NotClean  # a map or list as a key, a key read as something else, a merge key
                if self._shared:
                    self._once(key_node)
                key = self._scalar(key_node)
                if key in mapping:
                    raise _NotClean  # a duplicate key
                mapping[key] = self.build(value_node, depth + 1)
            return mapping
        if kind is yaml.SequenceNode and node.tag == _SEQ_TAG:
            return [self.build(item, depth + 1) for item in node.value]
        raise _NotClean

    def _once(self, node: yaml.Node) -> None:
        """A node met twice is an alias."""
        if id(node) in self._seen:
            raise _NotClean
        self._seen.add(id(node))

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        tag = node.tag
        if node.style:  # quoted or block: a string to every reader
            if tag != _STR_TAG:
                raise _NotClean
            return node.value
        text = node.value
        known = self._scalars.get(text)
        if known is not None and known[0] == tag:
            return known[1]
        if tag not in _CLEAN_SCALAR_TAGS:
            raise _NotClean
        if tag in _NUMBER_TAGS and len(text) > MAX_NUMBER_CHARS:
            raise _NotClean
        if go_yaml_v2_kind(text) != tag.removeprefix(TAG_PREFIX):
            raise _NotClean
        value = self._constructors[tag](self._loader, node)  # what construct_object calls for a scalar
        if tag in _SHARED_SCALAR_TAGS:
            self._scalars[text] = (tag, value)
        return value


def _bound_problems(root: yaml.Node, text: str, source: str) -> list[ConfigProblem]:
    """What in the composed document exceeds a bound, before a value is built from it.

    The composer shares an aliased node between every place that names it, so the document is a
    graph: one walk without recursion visits each node once, finding long numbers, nesting, and
    aliases (a second edge to a node already seen). Only a document that uses aliases gets the
    second, bottom-up pass that measures what they expand to (:func:`_alias_problems`)."""
    problems: list[ConfigProblem] = []
    seen: set[int] = set()
    aliases = 0
    too_deep: yaml.Node | None = None
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            aliases += 1
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if node.tag in _NUMBER_TAGS and not node.style and len(node.value) > MAX_NUMBER_CHARS:
                problems.append(_problem(source, node, long_number_message(node.value)))
            continue
        if depth > MAX_NESTING:
            too_deep = too_deep or node
            continue
        stack.extend((child, depth + 1) for child in _children(node))
    if aliases:
        problems.extend(_alias_problems(root, text, source, aliases))
    elif too_deep is not None:
        problems.append(_problem(source, too_deep, nesting_message()))
    return problems


def _alias_problems(root: yaml.Node, text: str, source: str, aliases: int) -> list[ConfigProblem]:
    """Too many aliases, an alias inside what it names, or aliases that expand the document beyond
    :data:`MAX_VALUES` values or :data:`MAX_NESTING` levels. Sizes and heights are summed bottom-up
    once per node, so an alias bomb is measured, not expanded."""
    if aliases > MAX_ALIASES:
        where = _alias_marks(text, MAX_ALIASES + 1)[-1:]
        return [
            ConfigProblem(
                _where(source, where[0] if where else None),
                f"uses {aliases:,} aliases (*name); a stack file may use at most {MAX_ALIASES}, "
                "and this is the first one too many",
            )
        ]
    size: dict[int, int] = {}
    height: dict[int, int] = {}
    visiting: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        children = _children(node)
        if done:
            size[id(node)] = 1 + sum(size[id(child)] for child in children)
            collection = not isinstance(node, yaml.ScalarNode)
            height[id(node)] = collection + max((height[id(child)] for child in children), default=0)
            visiting.discard(id(node))
            continue
        if id(node) in size:
            continue
        visiting.add(id(node))
        stack.append((node, True))
        for child in children:
            if id(child) in visiting:
                return [_problem(source, child, "an alias refers to a map or list that contains it")]
            stack.append((child, False))
    if size[id(root)] > MAX_VALUES:
        where = _alias_marks(text, 1)
        return [
            ConfigProblem(
                _where(source, where[0] if where else None),
                f"holds {size[id(root)]:,} values once its aliases are expanded; a stack file may "
                f"hold at most {MAX_VALUES:,}",
            )
        ]
    if height[id(root)] > MAX_NESTING:
        return [_problem(source, _too_deep(root, height), nesting_message())]
    return []


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _too_deep(root: yaml.Node, height: dict[int, int]) -> yaml.Node:
    """The first map or list below :data:`MAX_NESTING` levels, following the deepest branch."""
    node = root
    for _ in range(MAX_NESTING):
        node = max(_children(node), key=lambda child: height[id(child)])
    return node


def _alias_marks(text: str, count: int) -> list[Any]:
    """Where the first ``count`` aliases stand: the composed document keeps only their targets'
    positions, so the events are read again (only on this error path, and only this far)."""
    marks: list[Any] = []
    loader = _LOADER(text)
    try:
        while len(marks) < count and loader.check_event():
            event = loader.get_event()
            if isinstance(event, yaml.AliasEvent):
                marks.append(event.start_mark)
    finally:
        loader.dispose()
    return marks


def _problem(source: str, node: yaml.Node, message: str) -> ConfigProblem:
    return ConfigProblem(_where(source, node.start_mark), message)


def _issues(root: yaml.Node, lines: dict[Keys, int]) -> Iterator[YamlIssue]:
    """Every issue of the document; records in ``lines`` the line of each key and list item."""
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
            for index, child in enumerate(node.value):
                lines.setdefault((*keys, index), child.start_mark.line + 1)
            stack.extend((child, (*keys, index)) for index, child in reversed(list(enumerate(node.value))))
        elif isinstance(node, yaml.MappingNode):
            children: list[tuple[yaml.Node, Keys]] = []
            first_line: dict[tuple[str, str], int] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    yield _issue(key_node, keys, "a key must be a plain string, not a list or a map")
                    continue
                child_keys = (*keys, key_node.value)
                lines.setdefault(child_keys, key_node.start_mark.line + 1)
                if key_node.tag == f"{TAG_PREFIX}merge":
                    yield _issue(key_node, keys, MERGE_KEY_MESSAGE)
                    continue
                issue = _scalar_issue(key_node, child_keys, role="key")
                if issue is not None:
                    yield issue
                identity = (key_node.tag, key_node.value)
                if identity in first_line:
                    yield _issue(
                        key_node,
                        child_keys,
                        f"duplicate key {shown(key_node.value)} (also on line {first_line[identity]}); "
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
            f"key {shown(node.value)} is read as {KIND_NAMES.get(ours, ours)}, not a string; "
            f"quote it{_key_hint(node.value)} to use it as a name",
        )
    if node.style:  # quoted or block scalars are strings to every reader (plain: None, or "" from libyaml)
        return None
    theirs = go_yaml_v2_kind(node.value)
    if theirs == ours or (ours == MERGE and theirs == MERGE):
        return None
    return _issue(
        node,
        keys,
        f"{role} {shown(node.value)} is {KIND_NAMES.get(ours, ours)} to flyte-apps (PyYAML) but "
        f"{KIND_NAMES.get(theirs, theirs)} to Pulumi's YAML 1.1 reader; write it quoted"
        f"{_value_hint(node.value)} for a string{_unquoted_hint(theirs)}",
    )


def _repeatable(value: str) -> bool:
    """Short and printable enough to repeat in a hint (the message already quotes it with shown)."""
    return len(value) <= MAX_NUMBER_CHARS and value.isprintable()


def _key_hint(value: str) -> str:
    return f' ("{value}":)' if _repeatable(value) else ""


def _value_hint(value: str) -> str:
    return f' ("{value}")' if _repeatable(value) else ""


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
