"""``flyte-apps check``: render the stack offline and run the policy pack's rules on it, as
``pulumi preview --policy-pack policies`` would, without the Pulumi CLI or a cluster."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Annotated, Final, Literal

import typer

from flyte_apps.cli.common import (
    DEFAULT_PROJECT_DIR,
    EXIT_OK,
    EXIT_USAGE,
    ConfigOption,
    OutputFormat,
    ProjectDirOption,
    StackOption,
    output_option,
    refuse_stack_and_config,
    stop_if_reader_gone,
    translate_errors,
)
from flyte_apps.cli.stackfile import DEFAULT_STACK, plan_stack_files
from flyte_apps.core import constants as c
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.objects import RenderedObject
from flyte_apps.core.plan import StackPlan
from flyte_apps.core.stackfile import StackInput
from flyte_apps.policy.locate import Locator
from flyte_apps.policy.report import (
    Finding,
    problem_github,
    problem_json,
    sarif,
    warning_github,
    warning_key,
    warning_text,
)
from flyte_apps.policy.runner import Violation, blocking, evaluate, load_policy_config
from flyte_apps.policy.wire import to_wire

EXIT_VIOLATIONS: Final = 1
"""At least one mandatory (or remediate) violation; advisory ones alone exit 0."""


CheckFormat = Literal[OutputFormat.TEXT, OutputFormat.JSON, OutputFormat.SARIF, OutputFormat.GITHUB]
PolicyConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--policy-config",
        help='Policy-pack config JSON as Pulumi takes it, e.g. {"all": "mandatory"} or '
        '{"image-pinned": {"enforcementLevel": "mandatory", "requireDigest": true}}.',
    ),
]
OutputOption = Annotated[
    CheckFormat,
    output_option(
        "text: one line per violation; json: a list of objects; sarif: SARIF 2.1.0 for code "
        "scanning; github: workflow commands that annotate a pull request's lines.",
        case_sensitive=False,
    ),
]


def register(app: typer.Typer) -> None:
    """Add ``check`` to ``app``."""
    app.command("check")(check)


def check(
    stack: StackOption = None,
    config: ConfigOption = None,
    project_dir: ProjectDirOption = DEFAULT_PROJECT_DIR,
    policy_config: PolicyConfigOption = None,
    output: OutputOption = OutputFormat.TEXT,
) -> None:
    """Run the policy pack's rules on the stack's rendered objects (offline). Exit 1 on a mandatory
    violation, 2 on a config error."""
    refuse_stack_and_config(stack, config)
    name = stack or (config.stem.removeprefix("Pulumi.") if config is not None else DEFAULT_STACK)
    with translate_errors():
        try:
            plan, given = plan_stack_files(
                project_dir=project_dir, stack=stack, config_file=config, as_pulumi_runs_it=True
            )
        except ConfigError as exc:
            if output is OutputFormat.TEXT:
                raise
            _print_problems(exc.problems, output, name)
            raise typer.Exit(EXIT_USAGE) from None
        settings = load_policy_config(policy_config)
    for warning in plan.warnings:
        key = warning_key(warning)
        where = given.where(key) if key else None
        if output is OutputFormat.GITHUB:
            typer.echo(warning_github(warning, where))
        else:
            typer.secho(warning_text(warning, where), err=True, fg=typer.colors.YELLOW)
    objects = plan.objects()
    resources = [to_wire(obj, stack=name) for obj in objects]
    violations = evaluate(resources, settings, stack=name)
    findings = locate(
        violations, {r.urn: obj for r, obj in zip(resources, objects, strict=True)}, plan, given
    )
    _print(findings, output, name)
    raise typer.Exit(EXIT_VIOLATIONS if blocking(violations) else EXIT_OK)


def locate(
    violations: Sequence[Violation],
    objects: Mapping[str, RenderedObject],
    plan: StackPlan,
    given: StackInput,
) -> list[Finding]:
    """One finding per place to fix: each violation's config key and line, the same violation in
    several objects (a platform value every app inherits) folded into one."""
    locator = Locator(plan)
    grouped: dict[tuple[str, str, str], list[Violation]] = {}
    for violation in violations:
        key = locator.key_of(objects.get(violation.urn), violation.message)
        grouped.setdefault((violation.policy_name, key, violation.message), []).append(violation)
    findings = []
    for (_, key, _), found in grouped.items():
        where = given.where(key)
        findings.append(
            Finding(
                found[0],
                key,
                file=where[0] if where else None,
                line=where[1] if where else None,
                others=tuple(found[1:]),
            )
        )
    return findings


def category(stack: str) -> str:
    """The SARIF run's ``automationDetails.id``: one per stack file, so one upload may carry several."""
    return f"{c.PROJECT_NAME}/{stack}/"


def _print_problems(problems: Sequence[ConfigProblem], output: CheckFormat, stack: str) -> None:
    """Config errors in the machine formats: every one a JSON item, a SARIF result, an annotation."""
    if output is OutputFormat.JSON:
        typer.echo(json.dumps([problem_json(problem) for problem in problems], indent=2))
    elif output is OutputFormat.SARIF:
        log = sarif([], version=package_version(), category=category(stack), problems=problems)
        typer.echo(json.dumps(log, indent=2))
    else:
        for problem in problems:
            typer.echo(problem_github(problem))
    stop_if_reader_gone()
    typer.echo(f"{len(problems)} config error(s): nothing was checked", err=True)


def _print(findings: list[Finding], output: CheckFormat, stack: str) -> None:
    if output is OutputFormat.JSON:
        typer.echo(json.dumps([finding.as_json() for finding in findings], indent=2))
    elif output is OutputFormat.SARIF:
        typer.echo(json.dumps(sarif(findings, version=package_version(), category=category(stack)), indent=2))
    else:
        for finding in findings:
            typer.echo(finding.github() if output is OutputFormat.GITHUB else finding.text())
    stop_if_reader_gone()
    mandatory = sum(1 for finding in findings if finding.violation.level.blocks)
    typer.echo(
        f"{mandatory} mandatory, {len(findings) - mandatory} advisory violation(s)",
        err=True,
    )


def package_version() -> str:
    """The installed flyte-apps version (SARIF names the tool's version)."""
    try:
        return metadata.version(c.PROJECT_NAME)
    except metadata.PackageNotFoundError:
        return "0+unknown"
