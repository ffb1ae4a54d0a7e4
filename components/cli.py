"""``flyte-apps``: the command line. Commands parse options and delegate; domain errors become exit
codes here and nowhere else (0 ok, 1 not found, 2 bad arguments or config, 3 cluster unreachable)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from components.errors import ConfigError
from components.render import plan_stack, to_yaml, write_objects
from components.stackfile import read_stack_config

EXIT_CONFIG = 2

app = typer.Typer(
    help="Flyte apps as code: render, check and operate the Knative Services of a flyte-apps stack.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

StackOption = Annotated[
    str | None,
    typer.Option(
        "--stack", "-s", help="Stack name: reads Pulumi.yaml, then Pulumi.<STACK>.yaml. Default: dev."
    ),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="A Pulumi.<stack>.yaml-shaped file to read instead of --stack."),
]
ProjectDirOption = Annotated[
    Path, typer.Option("--project-dir", help="Directory holding Pulumi.yaml and the stack files.")
]


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
    try:
        raw = load_config(stack=stack, config=config, project_dir=project_dir)
        plan = plan_stack(raw)
    except ConfigError as exc:
        fail_config(exc)
    for warning in plan.warnings:
        typer.secho(f"warning: {warning}", err=True, fg=typer.colors.YELLOW)
    objects = plan.objects()
    if out is not None:
        for path in write_objects(objects, out):
            typer.echo(str(path))
        return
    sys.stdout.write(to_yaml(objects))


def load_config(*, stack: str | None, config: Path | None, project_dir: Path) -> dict[str, object]:
    """Raw config from ``--stack`` or ``--config`` (not both: that is a usage error, exit 2)."""
    if stack is not None and config is not None:
        typer.echo("error: give --stack or --config, not both", err=True)
        raise typer.Exit(EXIT_CONFIG)
    return read_stack_config(project_dir=project_dir, stack=stack, config_file=config)


def fail_config(exc: ConfigError) -> NoReturn:
    """Print one line per config problem on stderr and exit 2."""
    for problem in exc.problems:
        typer.echo(f"error: {problem}", err=True)
    raise typer.Exit(EXIT_CONFIG) from None


def _register_commands() -> None:
    """The cluster-facing commands live in ``components.commands``; each adds itself here."""
    from components.commands import check, logs, status, watch

    for module in (check, status, watch, logs):
        module.register(app)


_register_commands()


def main() -> None:
    app()
