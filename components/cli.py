"""``flyte-apps``: the command line. Commands parse options and delegate; domain errors become exit
codes here and nowhere else (0 ok, 1 not found, 2 bad arguments or config, 3 cluster unreachable)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from components.commands import check, logs, status, watch
from components.commands.common import (
    EXIT_USAGE,
    ConfigOption,
    ProjectDirOption,
    StackOption,
    fail,
    translate_errors,
)
from components.render import plan_stack, to_yaml, write_objects
from components.stackfile import read_stack_config

app = typer.Typer(
    help="Flyte apps as code: render, check and operate the Knative Services of a flyte-apps stack.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Flyte apps as code."""


@app.command()
def render(
    stack: StackOption = None,
    config: ConfigOption = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write one file per object, NNN-<kind>-<name>.yaml, here."),
    ] = None,
    project_dir: ProjectDirOption = Path(),
) -> None:
    """Print every Kubernetes object the stack would apply, as multi-document YAML (offline)."""
    with translate_errors():
        if stack is not None and config is not None:
            fail(EXIT_USAGE, "give --stack or --config, not both")
        plan = plan_stack(read_stack_config(project_dir=project_dir, stack=stack, config_file=config))
    for warning in plan.warnings:
        typer.secho(f"warning: {warning}", err=True, fg=typer.colors.YELLOW)
    objects = plan.objects()
    if out is not None:
        for path in write_objects(objects, out):
            typer.echo(str(path))
        return
    sys.stdout.write(to_yaml(objects))


# The other commands live in ``components.commands``; each adds itself here.
for _command in (check, status, watch, logs):
    _command.register(app)


def main() -> None:
    app()
