"""``flyte-apps`` imports a command's module only when the command runs, and its help still lists every
command with the command's own help."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from flyte_apps.cli.main import COMMANDS, LazyCommand, app, load_command
from tests.support.config import REPO_ROOT

COMMAND_MODULES = [spec.module for spec in COMMANDS]


def imported_after(*args: str) -> list[str]:
    """Which command modules a fresh interpreter has imported after running ``flyte-apps ARGS``."""
    probe = (
        "import json, sys\n"
        "from flyte_apps.cli.main import app\n"
        "try:\n"
        f"    app({list(args)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(json.dumps([m for m in {COMMAND_MODULES!r} if m in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_help_lists_every_command_without_importing_one() -> None:
    assert imported_after("--help") == []


def test_a_command_imports_only_its_own_module() -> None:
    assert imported_after("render", "--help") == ["flyte_apps.cli.render"]


@pytest.mark.parametrize("spec", COMMANDS, ids=lambda spec: spec.name)
def test_the_listed_help_is_the_command_s_own(spec: LazyCommand) -> None:
    command = load_command(spec)
    assert command.name == spec.name
    assert (command.help or "").split("\n\n")[0] == spec.help


def test_help_shows_each_command_with_its_help() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for spec in COMMANDS:
        assert f" {spec.name} " in result.stdout
        assert spec.help.splitlines()[0] in result.stdout


def test_an_unknown_command_is_a_usage_error_with_a_suggestion() -> None:
    result = CliRunner().invoke(app, ["rendr"])
    assert result.exit_code == 2
    assert "No such command 'rendr'" in result.output
    assert "render" in result.output


def test_the_group_is_a_typer_app_tests_can_invoke() -> None:
    assert isinstance(app, typer.Typer)
    result = CliRunner().invoke(app, ["render", "--help"])
    assert result.exit_code == 0
    assert "--stack" in result.stdout
