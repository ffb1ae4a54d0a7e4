"""What reading stack config may cost, and how much of a bad value an error line may quote.

Stack files are untrusted input: a fork's pull request runs ``flyte-apps check`` in CI, and the
engine hands the Pulumi program whatever the stack file says. So everything that reads config is
bounded here, and every bound is a config error (exit 2, one line naming the key or the line), never
a hang, a ``RecursionError`` or a line the size of the input:

- size: a file (or one value from the engine) larger than :data:`MAX_INPUT_BYTES` is not parsed;
- nesting: :data:`MAX_NESTING` levels, checked without recursion before anything recursive runs;
- cost: a stack of more than :data:`MAX_STACK_VALUES` values, or pod templates of more than
  :data:`MAX_POD_TEMPLATE_VALUES` together, is refused before it is planned (:func:`cost_problems`);
- numbers: a number literal longer than :data:`MAX_NUMBER_CHARS` characters is refused before Python
  turns it into an ``int`` (which costs quadratic time, and refuses more than 4,300 digits anyway);
- quoting: an error line quotes at most :data:`MAX_SHOWN_CHARS` characters of a value (:func:`shown`),
  and :func:`bounded` shortens whatever message still carries a long value.

The bounds sit far above a real stack (a generated stack of 10,000 apps is 6 MB, 8 levels deep, with
no number longer than 5 digits) and far below what makes reading slow: each check is linear.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from flyte_apps.core.errors import ConfigError, ConfigProblem

MAX_INPUT_BYTES: Final = 16 * 1024 * 1024
"""A stack file, or one config value as the engine hands it over; 10,000 generated apps take 6 MB."""
MAX_STACK_VALUES: Final = 1_000_000
"""Values one stack's config may hold: planning costs about 16 µs a value (10,000 generated apps hold
565,000 and render in 9 s on one core); the byte bound alone let a file plan for over a minute."""
MAX_POD_TEMPLATE_VALUES: Final = 100_000
"""Values the apps' pod templates may hold together: each costs about 70 µs (schemas, merge), so
100,000 (1,000 apps with a pod template of 100 values) plan in about 7 s."""
MAX_NESTING: Final = 64
"""Levels of maps and lists; a stack file needs about 8 (``config``/key/apps/app/container/env/...)."""
MAX_NUMBER_CHARS: Final = 40
"""A 64-bit integer has at most 20 characters, a float's exact form about 25."""
MAX_SHOWN_CHARS: Final = 40
"""How much of a bad value an error line quotes; the rest is counted, not printed."""
SHOWN_LEVELS: Final = 2
"""How many levels of a map or list an error line shows; deeper ones are ``{...}``/``[...]``."""
MAX_RUN_CHARS: Final = 120
"""A run of non-blank characters longer than this in a message is a quoted value: shortened."""
MAX_MESSAGE_CHARS: Final = 2000
"""No error line is longer than this (plus the count of what was cut)."""
_LONG_RUN: Final = re.compile(rf"\S{{{MAX_RUN_CHARS + 1},}}")
_LINE_BREAKS: Final = re.compile(r"[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_MIB: Final = 1024 * 1024
_JSON_OPEN: Final = frozenset("[{")
_JSON_CLOSE: Final = frozenset("]}")


def shown(value: object) -> str:
    """``value`` as an error line quotes it: its ``repr`` (so a newline cannot break the line), cut
    to :data:`MAX_SHOWN_CHARS` characters with the full length said, and containers summarised
    without walking them (a value may be huge, or nest as deep as the bounds allow)."""
    return _shown(value, SHOWN_LEVELS)


def bounded(message: str) -> str:
    """``message`` on one line and of bounded length: line breaks become spaces, every overlong run of
    non-blank characters (a value quoted without :func:`shown`) keeps only its start, and what is
    still too long is cut. For messages built where a value was not quoted with :func:`shown`."""
    text = _LINE_BREAKS.sub(" ", message)
    text = _LONG_RUN.sub(lambda run: _cut(run.group()), text)
    return _cut(text, MAX_MESSAGE_CHARS)


def bounded_problem(problem: ConfigProblem) -> ConfigProblem:
    """The problem with its path and message passed through :func:`bounded` (a key path holds the
    user's keys, which may be as long as any value)."""
    path, message = bounded(problem.path), bounded(problem.message)
    if (path, message) == (problem.path, problem.message):
        return problem
    return ConfigProblem(path, message)


def bounded_error(error: ConfigError) -> ConfigError:
    return ConfigError([bounded_problem(problem) for problem in error.problems])


def size_text(size: int) -> str:
    """A byte count as people read it (``17.0 MiB``, ``512 bytes``)."""
    return f"{size / _MIB:.1f} MiB" if size >= _MIB else f"{size:,} bytes"


def too_large_message(size: int, what: str) -> str:
    return f"is {size_text(size)}; {what} may be at most {size_text(MAX_INPUT_BYTES)}"


def nesting_message() -> str:
    return f"nests maps and lists deeper than {MAX_NESTING} levels"


def long_number_message(text: str) -> str:
    return f"the number {shown(text)} is longer than {MAX_NUMBER_CHARS} characters"


def parse_config_json(text: str, path: str) -> Any:
    """A structured config value as the engine hands it over (JSON text), read within the same
    bounds as a stack file; raises ``ConfigError`` naming ``path`` otherwise. The nesting is
    measured on the text first: Python's JSON reader recurses, once per level."""
    if len(text) > MAX_INPUT_BYTES:
        raise ConfigError([ConfigProblem(path, too_large_message(len(text), "a config value"))])
    if json_nesting(text) > MAX_NESTING:
        raise ConfigError([ConfigProblem(path, nesting_message())])

    def number(literal: str) -> int | float:
        if len(literal) > MAX_NUMBER_CHARS:
            raise ConfigError([ConfigProblem(path, long_number_message(literal))])
        return int(literal) if literal.lstrip("-").isdigit() else float(literal)

    try:
        return json.loads(text, parse_int=number, parse_float=number)
    except ValueError as exc:  # JSONDecodeError is a ValueError
        raise ConfigError([ConfigProblem(path, f"is not valid JSON: {bounded(str(exc))}")]) from None


def json_nesting(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in JSON text, outside strings; one pass, no recursion."""
    deepest = depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in _JSON_OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif char in _JSON_CLOSE:
            depth -= 1
    return deepest


def value_count(value: object, limit: int) -> int:
    """How many values (scalars, maps, lists; a map's keys not counted) ``value`` holds, without
    recursion; stops counting past ``limit`` (all a caller needs to know is that it is too many)."""
    count = 0
    stack: list[object] = [value]
    while stack and count <= limit:
        node = stack.pop()
        count += 1
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return count


def cost_problems(
    config: Mapping[str, Any], apps_key: str, pod_key: str, *, where: str | None = None
) -> list[ConfigProblem]:
    """The stack's size in values against :data:`MAX_STACK_VALUES` and, for the pod templates
    (``pod_key`` of each entry of ``apps_key``), :data:`MAX_POD_TEMPLATE_VALUES`: what planning costs
    grows with them (a value in a pod template costs about three elsewhere: it is checked against
    Knative's and Kubernetes' schemas), so a file within the byte bound still plans in seconds. The
    problem is at ``where`` (a file), else at ``apps_key``."""
    total = value_count(list(config.values()), MAX_STACK_VALUES)
    if total > MAX_STACK_VALUES:
        return [
            ConfigProblem(
                where or apps_key,
                f"the stack holds more than {MAX_STACK_VALUES:,} values (scalars, maps and lists; 10,000 "
                "apps hold about 565,000): split it into several stacks",
            )
        ]
    apps = config.get(apps_key)
    pods = (
        [app[pod_key] for app in apps if isinstance(app, dict) and pod_key in app]
        if isinstance(apps, list)
        else []
    )
    in_pods = value_count(pods, MAX_POD_TEMPLATE_VALUES + 1) - 1  # not the list itself
    if in_pods > MAX_POD_TEMPLATE_VALUES:
        return [
            ConfigProblem(
                where or apps_key,
                f"the apps' pod templates ({apps_key}[*].{pod_key}) hold more than "
                f"{MAX_POD_TEMPLATE_VALUES:,} values together (each is checked against Knative's and "
                "Kubernetes' schemas): split the stack",
            )
        ]
    return []


def nesting(value: object) -> int:
    """How deeply ``value`` nests dicts and lists, without recursion; stops counting past
    :data:`MAX_NESTING` (all a caller needs to know is that it is too deep)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _shown(value: object, levels: int) -> str:
    if isinstance(value, str):
        if len(value) <= MAX_SHOWN_CHARS:
            return repr(value)
        return f"{value[:MAX_SHOWN_CHARS]!r}... ({len(value):,} characters)"
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        digits = _int_digits(value)
        return repr(value) if digits <= MAX_NUMBER_CHARS else f"an integer of about {digits:,} digits"
    if isinstance(value, dict):
        if not levels:
            return "{...}" if value else "{}"
        items = (f"{_shown(k, levels - 1)}: {_shown(v, levels - 1)}" for k, v in value.items())
        return _summary("{", "}", items, len(value))
    if isinstance(value, list | tuple):
        if not levels:
            return "[...]" if value else "[]"
        return _summary("[", "]", (_shown(item, levels - 1) for item in value), len(value))
    return _cut(repr(value))


def _summary(start: str, end: str, items: Iterator[str], count: int) -> str:
    parts: list[str] = []
    length = 0
    for item in items:
        if parts and length + len(item) > MAX_SHOWN_CHARS:
            break
        parts.append(item if parts else _cut(item))  # the first item is always shown, if cut
        length += len(parts[-1]) + 2
    more = count - len(parts)
    tail = f", ... ({count:,} {'item' if count == 1 else 'items'})" if more else ""
    return f"{start}{', '.join(parts)}{tail}{end}"


def _int_digits(value: int) -> int:
    """Decimal digits of ``value`` from its bit length: ``str()`` of a huge int is slow or refused."""
    return max(1, int(abs(value).bit_length() * 0.30103) + 1)


def _cut(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"
