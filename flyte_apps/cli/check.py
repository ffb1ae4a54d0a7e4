"""``flyte-apps check``: render the stack offline and run the policy pack's rules on it, as
``pulumi preview --policy-pack policies`` would, without the Pulumi CLI or a cluster."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Final

import typer

from flyte_apps.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    ConfigOption,
    ProjectDirOption,
    StackOption,
    fail,
    stop_if_reader_gone,
    translate_errors,
)
from flyte_apps.cli.stackfile import DEFAULT_STACK, plan_stack_files
from flyte_apps.policy.runner import Violation, blocking, evaluate, load_policy_config
from flyte_apps.policy.wire import to_wire

EXIT_VIOLATIONS: Final = 1
"""At least one mandatory (or remediate) violation; advisory ones alone exit 0."""


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


PolicyConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--policy-config",
        help='Policy-pack config JSON as Pulumi takes it, e.g. {"all": "mandatory"} or '
        '{"image-pinned": {"enforcementLevel": "mandatory", "requireDigest": true}}.',
    ),
]
OutputOption = Annotated[
    OutputFormat,
    typer.Option("--output", "-o", help="text: one line per violation; json: a list of objects."),
]


def register(app: typer.Typer) -> None:
    """Add ``check`` to ``app``."""
    app.command("check")(check)


def check(
    stack: StackOption = None,
    config: ConfigOption = None,
    project_dir: ProjectDirOption = Path(),
    policy_config: PolicyConfigOption = None,
    output: OutputOption = OutputFormat.TEXT,
) -> None:
    """Run the policy pack's rules on the stack's rendered objects (offline). Exit 1 on a mandatory
    violation, 2 on a config error."""
    if stack is not None and config is not None:
        fail(EXIT_USAGE, "give --stack or --config, not both")
    with translate_errors():
        plan, _ = plan_stack_files(project_dir=project_dir, stack=stack, config_file=config)
        settings = load_policy_config(policy_config)
    for warning in plan.warnings:
        typer.secho(f"warning: {warning}", err=True, fg=typer.colors.YELLOW)
    name = stack or (config.stem.removeprefix("Pulumi.") if config is not None else DEFAULT_STACK)
    resources = [to_wire(obj, stack=name) for obj in plan.objects()]
    violations = evaluate(resources, settings, stack=name)
    _print(violations, output)
    raise typer.Exit(EXIT_VIOLATIONS if blocking(violations) else EXIT_OK)


def _print(violations: list[Violation], output: OutputFormat) -> None:
    if output is OutputFormat.JSON:
        typer.echo(json.dumps([violation.as_json() for violation in violations], indent=2))
    else:
        for violation in violations:
            typer.echo(violation.line())
    stop_if_reader_gone()
    mandatory = sum(1 for violation in violations if violation.level.blocks)
    typer.echo(
        f"{mandatory} mandatory, {len(violations) - mandatory} advisory violation(s)",
        err=True,
    )
