"""The Pulumi program reads hostile config within the same bounds as ``flyte-apps render``: the engine
hands structured values over as JSON text, and deep nesting, huge numbers, huge durations and long
values each become one short logged error, with nothing registered (never a ``RecursionError``, a
``ValueError`` from ``int()``, or a 100,000-character log line)."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from flyte_apps.core.bounds import MAX_NESTING
from tests.support.config import minimal_config
from tests.support.pulumi_harness import install, run_program

LONG_LINE = 400


def logged_errors(config: dict[str, Any]) -> list[str]:
    """Run the program on ``config`` (str values go to the program as the engine's raw text)."""
    capture, logs = install(config)
    with pytest.raises(pulumi.RunError, match="nothing was registered"):
        run_program()
    assert capture.registered == []
    errors = [record.getMessage() for record in logs.records if record.levelno >= 40]
    assert errors
    assert all("\n" not in line and len(line) <= LONG_LINE for line in errors), [e[:200] for e in errors]
    return errors


def test_json_nested_3000_levels_is_one_error() -> None:
    config = {**minimal_config(), "flyte-apps:platform": "[" * 3000 + "]" * 3000}
    assert logged_errors(config) == [
        f"flyte-apps:platform: nests maps and lists deeper than {MAX_NESTING} levels"
    ]


def test_json_number_of_60000_digits_is_one_error() -> None:
    config = {**minimal_config(), "flyte-apps:platform": '{"watchBufferSize": ' + "9" * 60_000 + "}"}
    (line,) = logged_errors(config)
    assert line.startswith("flyte-apps:platform: the number '9999")
    assert line.endswith("(60,000 characters) is longer than 40 characters")


def test_float_where_an_int_belongs_never_reaches_the_manager() -> None:
    config = {**minimal_config(), "flyte-apps:platform": '{"watchBufferSize": 1e+23}'}
    (line,) = logged_errors(config)
    assert line.startswith("flyte-apps:platform.watchBufferSize: input should be a valid integer")


def test_huge_reaper_timeout_is_refused_before_the_program_divides_it() -> None:
    config = {**minimal_config(), "flyte-apps:platform": {"reaperTimeout": "2562047h"}}
    (line,) = logged_errors(config)
    assert line.startswith("flyte-apps:platform.reaperTimeout: 2562047h0m0s exceeds 1h0m0s")


def test_100000_character_project_name_is_logged_as_a_short_prefix() -> None:
    config = {**minimal_config(), "flyte-apps:project": "p" * 100_000}
    (line,) = logged_errors(config)
    assert line.startswith("flyte-apps:project: 'pppp")
    assert "(100,002 characters)" in line
