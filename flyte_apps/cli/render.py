"""``flyte-apps render``: every Kubernetes object the stack would apply, offline, as YAML or JSON, on
standard output or as one file per object in a directory that it keeps in step with the stack."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final, Literal

import typer

from flyte_apps.cli.common import (
    DEFAULT_PROJECT_DIR,
    EXIT_USAGE,
    ConfigOption,
    OutputFormat,
    ProjectDirOption,
    StackOption,
    fail,
    output_option,
    refuse_stack_and_config,
    translate_errors,
)
from flyte_apps.cli.files import MANIFEST

if TYPE_CHECKING:
    from flyte_apps.core.objects import RenderedObject

OWN_FILE: Final = re.compile(r"^\d{3}-[a-z0-9]+-[^/]+\.(yaml|json)$")
"""The names ``--out-dir`` gives its files (``NNN-<kind>-<name>.yaml``); it removes only those its
manifest records, and warns of the others."""


RenderFormat = Literal[OutputFormat.YAML, OutputFormat.JSON]
OutputOption = Annotated[
    RenderFormat,
    output_option(
        "yaml: multi-document YAML. json: one kubectl-style List (patched objects named in its "
        "flyte-apps/patches annotation).",
        case_sensitive=False,
    ),
]
OutDirOption = Annotated[
    Path | None,
    typer.Option(
        "--out-dir",
        help="Write one file per object, NNN-<kind>-<name>.yaml (or .json), into this directory, and "
        "remove the files an earlier run wrote for objects the stack no longer has (as its manifest "
        f"{MANIFEST} records them; other files are left, with a warning). Refuses symlinks.",
    ),
]
DeprecatedOutOption = Annotated[
    Path | None,
    typer.Option("--out", help="Deprecated: use --out-dir.", hidden=True),
]


def register(app: typer.Typer) -> None:
    app.command()(render)


def render(
    stack: StackOption = None,
    config: ConfigOption = None,
    output: OutputOption = OutputFormat.YAML,
    out_dir: OutDirOption = None,
    out: DeprecatedOutOption = None,
    project_dir: ProjectDirOption = DEFAULT_PROJECT_DIR,
) -> None:
    """Print every Kubernetes object the stack would apply, in apply order (offline)."""
    # The planner and the writers are imported here, not at the top: `render --help` does not pay
    # for them (bench/startup.py).
    from flyte_apps.cli.stackfile import plan_stack_files
    from flyte_apps.core.jsonout import to_json_list
    from flyte_apps.core.yamlout import to_yaml
    from flyte_apps.policy.report import warning_key, warning_text

    with translate_errors():
        refuse_stack_and_config(stack, config)
        if out is not None:
            if out_dir is not None:
                fail(EXIT_USAGE, "give --out-dir, not both --out-dir and --out")
            typer.secho("warning: --out is deprecated; use --out-dir", err=True, fg=typer.colors.YELLOW)
            out_dir = out
        if out_dir is not None and out_dir.exists() and not out_dir.is_dir():
            fail(EXIT_USAGE, f"{out_dir} is a file; --out-dir takes a directory")
        plan, given = plan_stack_files(project_dir=project_dir, stack=stack, config_file=config)
    for warning in plan.warnings:
        key = warning_key(warning)
        where = given.where(key) if key else None
        typer.secho(warning_text(warning, where), err=True, fg=typer.colors.YELLOW)
    objects = plan.objects()
    if out_dir is not None:
        for path in write_objects(objects, out_dir, output):
            typer.echo(str(path))
        return
    sys.stdout.write(to_json_list(objects) if output is OutputFormat.JSON else to_yaml(objects))


def write_objects(
    objects: Sequence[RenderedObject], directory: Path, output: RenderFormat = OutputFormat.YAML
) -> list[Path]:
    """One file per object, numbered in apply order; then the files an earlier run wrote for objects
    the stack no longer has are removed, so that ``kubectl apply -f DIR`` never redeploys a removed
    app. Only files render wrote, as its manifest records them, are replaced or removed: a name taken
    by a symlink (or a directory, a FIFO) is an error before anything is written, and a file it did
    not write, or that changed since, is left and said so (a warning)."""
    from flyte_apps.cli.files import OwnedFileRefused, write_owned
    from flyte_apps.core.jsonout import json_document
    from flyte_apps.core.yamlout import document, file_name

    try:
        directory.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        fail(EXIT_USAGE, f"{directory} is a file; --out-dir takes a directory")
    files: dict[str, str] = {}
    for index, obj in enumerate(objects, start=1):
        name = file_name(index, obj)
        if output is OutputFormat.JSON:
            files[f"{name.removesuffix('.yaml')}.json"] = json_document(obj.manifest)
        else:
            files[name] = document(obj)
    try:
        result = write_owned(directory, files, looks_ours=OWN_FILE)
    except OwnedFileRefused as exc:
        fail(EXIT_USAGE, str(exc))
    except OSError as exc:
        fail(EXIT_USAGE, f"cannot write into {directory}: {exc.strerror or exc}")
    for left in result.left:
        typer.secho(f"warning: {directory}: left {left}", err=True, fg=typer.colors.YELLOW)
    return result.written
