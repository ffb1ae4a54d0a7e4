"""``flyte-apps render``: every Kubernetes object the stack would apply, offline, as YAML."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from flyte_apps.cli.common import (
    EXIT_USAGE,
    ConfigOption,
    ProjectDirOption,
    StackOption,
    fail,
    translate_errors,
)
from flyte_apps.cli.stackfile import plan_stack_files
from flyte_apps.core.objects import RenderedObject
from flyte_apps.core.yamlout import document, file_name, to_yaml


def register(app: typer.Typer) -> None:
    app.command()(render)


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
        plan, _ = plan_stack_files(project_dir=project_dir, stack=stack, config_file=config)
    for warning in plan.warnings:
        typer.secho(f"warning: {warning}", err=True, fg=typer.colors.YELLOW)
    objects = plan.objects()
    if out is not None:
        for path in write_objects(objects, out):
            typer.echo(str(path))
        return
    sys.stdout.write(to_yaml(objects))


def write_objects(objects: Sequence[RenderedObject], directory: Path) -> list[Path]:
    """One file per object, ``NNN-<kind>-<name>.yaml``, numbered in apply order."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for index, obj in enumerate(objects, start=1):
        path = directory / file_name(index, obj)
        path.write_text(document(obj), encoding="utf-8")
        written.append(path)
    return written
