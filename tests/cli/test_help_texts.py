"""Every command's ``--help`` reads as it did before its options and output formats were folded into
one definition each (``flyte_apps.cli.common``): the same options, in the same order, with the same
help texts, defaults and choices (``tests/fixtures/help/``, written from the code before the change);
and ``--output`` accepts exactly the values its help lists, in the letter case it accepted before."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from flyte_apps.cli.common import OutputFormat
from flyte_apps.cli.main import COMMANDS, app, load_command
from tests.support.config import REPO_ROOT

HELP_DIR = REPO_ROOT / "tests" / "fixtures" / "help"
NAMES = ["", *(spec.name for spec in COMMANDS)]
"""The root's help (``""``), then each command's."""
HELP_ENV = {"COLUMNS": "120", "NO_COLOR": ""}
FORMATS = {
    "render": (["yaml", "json"], False),
    "check": (["text", "json", "sarif", "github"], False),
    "status": (["table", "wide", "json", "yaml"], True),
    "watch": (["text", "json"], True),
    "logs": (["text", "json"], True),
}
"""Each command's ``--output`` values, and whether they are case-sensitive (import has no ``--output``)."""
REQUIRED_ARGUMENTS = {"logs": ["myapp"]}


def help_text(name: str) -> str:
    """``flyte-apps [NAME] --help`` at 120 columns, each line without its trailing blanks."""
    result = CliRunner().invoke(app, [name, "--help"] if name else ["--help"], env=HELP_ENV)
    assert result.exit_code == 0, result.output
    return "".join(f"{line.rstrip()}\n" for line in result.stdout.splitlines())


@pytest.mark.parametrize("name", NAMES, ids=lambda name: name or "flyte-apps")
def test_help_lists_the_same_options_texts_defaults_and_choices_as_before(name: str) -> None:
    expected = (HELP_DIR / f"{name or 'flyte-apps'}.txt").read_text(encoding="utf-8")
    assert help_text(name) == expected


def test_only_the_commands_with_an_output_option_have_one() -> None:
    with_output = {
        spec.name for spec in COMMANDS if any("--output" in param.opts for param in load_command(spec).params)
    }
    assert with_output == set(FORMATS)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_output_accepts_exactly_the_listed_formats(name: str) -> None:
    values, case_sensitive = FORMATS[name]
    command = load_command(next(spec for spec in COMMANDS if spec.name == name))
    arguments = REQUIRED_ARGUMENTS.get(name, [])
    for value in values:
        spelled = value.upper()
        with command.make_context(name, [*arguments, "-o", value]) as ctx:
            assert ctx.params["output"] == value
        if case_sensitive:
            with pytest.raises(typer.BadParameter):
                command.make_context(name, [*arguments, "-o", spelled])
        else:
            with command.make_context(name, [*arguments, "-o", spelled]) as ctx:
                assert ctx.params["output"] == value
    with pytest.raises(typer.BadParameter):
        command.make_context(name, [*arguments, "-o", "xml"])


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_output_arrives_as_the_one_shared_format_member(name: str) -> None:
    command = load_command(next(spec for spec in COMMANDS if spec.name == name))
    assert FORMATS[name][0], name
    for value in FORMATS[name][0]:
        with command.make_context(name, [*REQUIRED_ARGUMENTS.get(name, []), "-o", value]) as ctx:
            assert ctx.params["output"] is OutputFormat(value)
