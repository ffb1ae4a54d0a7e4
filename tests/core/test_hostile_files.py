"""Hostile stack files (a fork's pull request runs ``flyte-apps check``) cost a bounded amount to read
and are refused as config errors: alias bombs, deep nesting, huge files, huge numbers and durations,
and values that would otherwise be quoted whole in an error line. The same bounds hold for the
JSON values the engine hands the Pulumi program. (Run through the real CLI in
``tests/cli/test_hostile_files.py``; this file pins the pieces.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from flyte_apps.core import yamlin
from flyte_apps.core.bounds import (
    MAX_INPUT_BYTES,
    MAX_NESTING,
    MAX_NUMBER_CHARS,
    MAX_POD_TEMPLATE_VALUES,
    MAX_SHOWN_CHARS,
    bounded,
    bounded_problem,
    json_nesting,
    nesting,
    parse_config_json,
    shown,
)
from flyte_apps.core.config.kit import MAX_DURATION_CHARS, MAX_MANAGER_REPLICAS, MAX_WATCH_BUFFER_SIZE
from flyte_apps.core.durations import (
    MAX_NANOS,
    NANOS_PER_SECOND,
    DurationRangeError,
    DurationSyntaxError,
    format_duration,
    parse_duration,
)
from flyte_apps.core.errors import ConfigError
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.stackfile import parse_stack_file
from tests.support.config import minimal_config

SOURCE = "Pulumi.test.yaml"
STACK_HEAD = "config:\n  flyte-apps:project: proj\n  flyte-apps:domain: dev\n"
APP = "  flyte-apps:apps:\n    - name: myapp\n      container:\n        image: nginx:1.27\n"
LONG_LINE = 400
"""No error line may be longer than this, whatever the input (a key path, a message, a short quote)."""


def refused(text: str) -> list[str]:
    """The one-line problems that stop reading ``text`` as a stack file."""
    with pytest.raises(ConfigError) as caught:
        parse_stack_file(text, SOURCE)
    lines = [str(problem) for problem in caught.value.problems]
    assert all("\n" not in line and len(line) <= LONG_LINE for line in lines), lines
    return lines


def config_problems(config: dict[str, Any]) -> list[str]:
    """The problems of ``config`` as the CLI and the program print them (``bounded_problem`` is the
    edge's last pass: a key path holds user keys, which may be as long as any value)."""
    with pytest.raises(ConfigError) as caught:
        plan_stack(config)
    assert all(len(problem.message) <= LONG_LINE for problem in caught.value.problems), caught.value
    lines = [str(bounded_problem(problem)) for problem in caught.value.problems]
    assert all("\n" not in line and len(line) <= LONG_LINE for line in lines), lines
    return lines


def billion_laughs(levels: int = 9, width: int = 9) -> str:
    lines = [STACK_HEAD, "  lol0: &a0 [" + ", ".join(['"lol"'] * width) + "]\n"]
    for level in range(1, levels + 1):
        lines.append(f"  lol{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]\n")
    lines.append(APP + f"        env:\n          BOMB: *a{levels}\n")
    return "".join(lines)


def nested_flow(levels: int) -> str:
    return STACK_HEAD + APP + "        env:\n          DEEP: " + "[" * levels + "]" * levels + "\n"


def nested_block(levels: int) -> str:
    lines = [STACK_HEAD + APP + "        env:\n          DEEP:\n"]
    lines.extend(" " * (12 + depth) + f"k{depth}:\n" for depth in range(levels))
    return "".join(lines)


# --- aliases


def test_an_alias_bomb_is_refused_at_the_first_alias_beyond_the_budget() -> None:
    (line,) = refused(billion_laughs())
    # 9 aliases per line from line 5 on, each 5 characters wide from column 14: the 21st is the third
    # on line 7; 9 levels of 9, plus the one in the env, make 82.
    row, column = divmod(yamlin.MAX_ALIASES, 9)
    assert line.startswith(f"{SOURCE}:{5 + row}:{14 + 5 * column}: uses 82 aliases (*name); ")
    assert f"at most {yamlin.MAX_ALIASES}" in line


def test_few_aliases_that_expand_past_the_value_budget_are_refused() -> None:
    # 10 levels of 2 aliases each double a 10,000-item list ten times: 10 million values.
    lines = [STACK_HEAD, "  base: &b0 [" + ", ".join(["0"] * 10_000) + "]\n"]
    lines.extend(f"  l{level}: &b{level} [*b{level - 1}, *b{level - 1}]\n" for level in range(1, 11))
    (line,) = refused("".join(lines) + APP)
    assert line.startswith(f"{SOURCE}:5:")  # the first alias
    assert f"once its aliases are expanded; a stack file may hold at most {yamlin.MAX_VALUES:,}" in line


def test_an_alias_inside_what_it_names_is_refused() -> None:
    (line,) = refused(STACK_HEAD + APP + "        env: &loop\n          X: *loop\n")
    assert line == f"{SOURCE}:8:14: an alias refers to a map or list that contains it"


def test_aliases_may_nest_only_as_deep_as_plain_nesting() -> None:
    half = MAX_NESTING // 2 + 1
    text = (
        STACK_HEAD
        + "  deep: &d "
        + "[" * half
        + "]" * half
        + "\n"
        + APP
        + "        env:\n          X: "
        + "[" * (half - 2)
        + "*d"
        + "]" * (half - 2)
        + "\n"
    )
    (line,) = refused(text)
    assert line.endswith(f"nests maps and lists deeper than {MAX_NESTING} levels")


def test_a_shared_block_within_the_budget_still_reads() -> None:
    text = (
        STACK_HEAD
        + "  flyte-apps:platform:\n    defaultEnvVars: &shared {LOG_LEVEL: info}\n"
        + APP
        + "        env: *shared\n"
    )
    given = parse_stack_file(text, SOURCE)
    assert given.problems == ()
    assert given.values["flyte-apps:apps"][0]["container"]["env"] == {"LOG_LEVEL": "info"}


# --- nesting


@pytest.mark.parametrize("levels", [500, 3000])
@pytest.mark.parametrize("style", [nested_flow, nested_block], ids=["flow", "block"])
def test_deep_nesting_is_one_config_error_not_a_recursion_error(style: Any, levels: int) -> None:
    (line,) = refused(style(levels))
    assert line.startswith(f"{SOURCE}:")
    assert "nesting depth" in line or f"deeper than {MAX_NESTING} levels" in line


def test_deep_nesting_is_refused_by_pyyamls_pure_python_reader_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without libyaml, PyYAML composes recursively: past Python's recursion limit is still one line."""
    monkeypatch.setattr(yamlin, "_LOADER", yaml.SafeLoader)
    for levels in (500, 3000):
        (line,) = refused(nested_flow(levels))
        assert line.endswith(f"nests maps and lists deeper than {MAX_NESTING} levels"), line


def test_nesting_at_the_bound_still_reads() -> None:
    # the document > config > flyte-apps:apps > app > container > env: 6 levels before DEEP's lists
    given = parse_stack_file(nested_flow(MAX_NESTING - 6), SOURCE)
    assert given.problems == ()
    (line,) = refused(nested_flow(MAX_NESTING - 5))
    assert line == f"{SOURCE}:9:{17 + MAX_NESTING - 6}: nests maps and lists deeper than {MAX_NESTING} levels"


# --- size and numbers


def test_a_text_beyond_the_size_bound_is_refused_before_it_is_parsed() -> None:
    text = STACK_HEAD + APP + "        env: {BIG: '" + "x" * MAX_INPUT_BYTES + "'}\n"
    (line,) = refused(text)
    assert line == f"{SOURCE}: is 16.0 MiB; a stack file may be at most 16.0 MiB"


def test_a_number_literal_longer_than_the_bound_is_refused_before_python_converts_it() -> None:
    text = STACK_HEAD + "  flyte-apps:platform:\n    watchBufferSize: " + "9" * 60_000 + "\n" + APP
    (line,) = refused(text)
    assert line == (
        f"{SOURCE}:5:22: the number {'9' * MAX_SHOWN_CHARS!r}... (60,000 characters) is longer than "
        f"{MAX_NUMBER_CHARS} characters"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (10**11, f"less than or equal to {MAX_WATCH_BUFFER_SIZE}"),
        (1e23, "input should be a valid integer"),
    ],
    ids=["beyond-the-bound", "float-from-pulumi"],
)
def test_watch_buffer_size_is_bounded_before_it_reaches_the_manager_config(
    value: object, expected: str
) -> None:
    config = {**minimal_config(), "flyte-apps:platform": {"watchBufferSize": value}}
    (line,) = config_problems(config)
    assert line.startswith("flyte-apps:platform.watchBufferSize: ")
    assert expected in line


def test_manager_replicas_and_toleration_seconds_are_bounded() -> None:
    config = {
        **minimal_config(),
        "flyte-apps:manager": {
            "image": "ghcr.io/flyteorg/flyte-manager:1.0",
            "replicas": 10**20,
            "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 10**30}],
        },
    }
    lines = config_problems(config)
    assert any(
        line.startswith("flyte-apps:manager.replicas: ")
        and f"less than or equal to {MAX_MANAGER_REPLICAS}" in line
        for line in lines
    ), lines
    assert any(line.startswith("flyte-apps:manager.tolerations[0].tolerationSeconds: ") for line in lines), (
        lines
    )


# --- durations


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("90s", 90 * NANOS_PER_SECOND),
        ("1h30m", 5400 * NANOS_PER_SECOND),
        ("1.5h", 5400 * NANOS_PER_SECOND),
        (".5s", NANOS_PER_SECOND // 2),
        ("1.s", NANOS_PER_SECOND),
        ("-1.5s", -3 * NANOS_PER_SECOND // 2),
        ("+3ms", 3_000_000),
        ("1\u00b5s", 1000),
        ("1\u03bcs", 1000),
        ("0", 0),
        ("0" * 60_000 + "1s", NANOS_PER_SECOND),  # leading zeros: Go skips them
        ("1." + "9" * 60_000 + "s", 2 * NANOS_PER_SECOND),  # fraction digits past 63 bits are ignored
        ("1s" * 30_000, 30_000 * NANOS_PER_SECOND),
        ("2562047h47m16.854775807s", MAX_NANOS),
        ("-2562047h47m16.854775808s", -MAX_NANOS - 1),
    ],
    ids=lambda value: value[:30] + ("..." if len(value) > 30 else "") if isinstance(value, str) else "",
)
def test_durations_parse_as_go_parses_them(text: str, nanos: int) -> None:
    assert parse_duration(text) == nanos


@pytest.mark.parametrize("text", ["", "1", "s", ".s", "1x", "1sx", "1.5.5s", "-", "1 s", "\u0661s"])
def test_what_go_refuses_is_a_syntax_error(text: str) -> None:
    with pytest.raises(DurationSyntaxError):
        parse_duration(text)


@pytest.mark.parametrize(
    "text",
    ["2562047h47m16.854775808s", "9" * 60_000 + "s", "9" * 20 + "ns", "3000000h", "2562047h2562047h"],
    ids=["int64-plus-one", "60000-digits", "20-digits", "3000000h", "sum-overflows"],
)
def test_what_overflows_go_is_a_range_error_found_before_arithmetic(text: str) -> None:
    with pytest.raises(DurationRangeError):
        parse_duration(text)


def test_a_60000_digit_reaper_timeout_is_a_one_line_config_error() -> None:
    config = {**minimal_config(), "flyte-apps:platform": {"reaperTimeout": "9" * 60_000 + "s"}}
    (line,) = config_problems(config)
    assert line == (
        f"flyte-apps:platform.reaperTimeout: {'9' * MAX_SHOWN_CHARS!r}... (60,001 characters) is longer "
        f"than {MAX_DURATION_CHARS} characters (write it like 90s, 5m or 1h30m)"
    )


def test_a_duration_beyond_what_go_holds_is_a_one_line_config_error() -> None:
    config = {**minimal_config(), "flyte-apps:platform": {"reaperTimeout": "9" * 30 + "s"}}
    (line,) = config_problems(config)
    assert line == (
        f"flyte-apps:platform.reaperTimeout: '{'9' * 30}s' is longer than a Go duration holds "
        f"({format_duration(MAX_NANOS)})"
    )


def test_a_huge_reaper_timeout_is_refused_at_render_not_when_the_program_divides_it() -> None:
    config = {**minimal_config(), "flyte-apps:platform": {"reaperTimeout": "2562047h"}}
    (line,) = config_problems(config)
    assert line == (
        "flyte-apps:platform.reaperTimeout: 2562047h0m0s exceeds 1h0m0s, the longest a stop waits for Knative"
    )


# --- quoting values in error lines


def test_a_100000_character_project_name_is_quoted_as_a_short_prefix() -> None:
    config = {**minimal_config(), "flyte-apps:project": "p" * 100_000}
    lines = config_problems(config)
    assert lines
    assert all("(100,000 characters)" in line or "100,0" in line for line in lines), lines


def test_a_100000_character_env_name_is_quoted_as_a_short_prefix_in_path_and_message() -> None:
    config = minimal_config(container={"image": "nginx:1.27", "env": {"1" + "x" * 100_000: "v"}})
    (line,) = config_problems(config)
    assert "(100,001 characters)" in line


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("abc", "'abc'"),
        ("it's", '"it\'s"'),
        ("a\nb", "'a\\nb'"),
        ("x" * 100, f"{'x' * MAX_SHOWN_CHARS!r}... (100 characters)"),
        (300, "300"),
        (None, "None"),
        ({"name": 1}, "{'name': 1}"),
        (list(range(100)), "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, ... (100 items)]"),
        ({"a": {"b": {"c": 1}}}, "{'a': {'b': {...}}}"),
        (10**5000, "an integer of about 5,001 digits"),
    ],
    ids=["short", "quote", "newline", "long", "int", "none", "dict", "list", "deep", "huge-int"],
)
def test_shown_quotes_a_short_one_line_prefix(value: object, expected: str) -> None:
    assert shown(value) == expected


def test_bounded_shortens_long_runs_and_joins_lines() -> None:
    message = "flyte-apps:project: '" + "p" * 10_000 + "' is bad\nsecond line"
    assert (
        bounded(message) == "flyte-apps:project: '" + "p" * 39 + "... (10,002 characters) is bad second line"
    )
    assert bounded("word " * 2_000).endswith("... (10,000 characters)")


# --- config values from the engine (JSON)


def test_engine_json_within_the_bounds_reads() -> None:
    assert parse_config_json('{"a": [1, 2.5, "x"]}', "flyte-apps:platform") == {"a": [1, 2.5, "x"]}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 3000 + "]" * 3000, f"nests maps and lists deeper than {MAX_NESTING} levels"),
        ('{"watchBufferSize": ' + "9" * 60_000 + "}", "is longer than 40 characters"),
        ('{"a": "' + "x" * MAX_INPUT_BYTES + '"}', "a config value may be at most 16.0 MiB"),
        ('{"a": ', "is not valid JSON"),
    ],
    ids=["3000-levels", "60000-digits", "huge", "broken"],
)
def test_engine_json_beyond_the_bounds_is_a_config_error(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config_json(text, "flyte-apps:platform")
    (problem,) = caught.value.problems
    assert problem.path == "flyte-apps:platform"
    assert message in problem.message
    assert len(str(problem)) <= LONG_LINE


def test_json_nesting_ignores_brackets_inside_strings() -> None:
    assert json_nesting(json.dumps({"a": ["[[[[", {"b": "]]}"}]})) == 3
    assert nesting({"a": [1, {"b": [2]}]}) == 4


def test_the_program_refuses_a_stack_beyond_the_cost_bound_before_planning_it() -> None:
    # What the engine hands the Pulumi program is bounded like a stack file read by the CLI.
    config = minimal_config()
    app = config["flyte-apps:apps"][0]
    app["pod"] = {"spec": {"containers": [{"name": "app", "args": ["a"] * (MAX_POD_TEMPLATE_VALUES + 1)}]}}
    with pytest.raises(ConfigError) as raised:
        plan_stack(config)
    [problem] = raised.value.problems
    assert problem.path == "flyte-apps:apps"
    assert "hold more than 100,000 values together" in problem.message


def test_a_map_whose_first_entry_is_long_is_shown_with_that_entry_cut() -> None:
    # It printed "{, ... (1 items)}" (the change summaries of import and status).
    text = shown({"k" * 50: "v" * 300})
    assert text.startswith("{'kkkk")
    assert ", ... (" not in text
    assert shown([{"name": "x"}] * 3).endswith(", ... (3 items)]")
    assert shown({"a": "b" * 300, "c": 1}).endswith(", ... (2 items)}")
