"""``flyte-apps import``: write the apps Flyte already runs into the stack file, marked ``adopt``, so
that ``pulumi up`` takes their KServices over instead of failing on AlreadyExists.

Each app is ``exact`` (the written config renders the live spec byte for byte and every field the
program sets: ``adopt: true``, Pulumi's ``import`` option), ``changes`` (``adopt: upsert``: one in-place
update, differences listed) or ``refused`` (why). Any refusal writes nothing (exit 2)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Final

import typer
from google.protobuf.message import DecodeError

from flyte_apps.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    AppsArgument,
    ClusterFlags,
    ClusterView,
    DomainOption,
    ProjectOption,
    TargetStackOption,
    cluster_options,
    fail,
    load_view,
    translate_errors,
    with_client,
)
from flyte_apps.cli.stackedit import add_apps, entries_yaml
from flyte_apps.cli.stackfile import DEFAULT_STACK, read_stack_config
from flyte_apps.core import constants as c
from flyte_apps.core.adopt import ADOPT_IMPORT, ADOPT_KEY, ADOPT_UPSERT, LiveApp, adopt_entry
from flyte_apps.core.adopt_check import compare_kservice
from flyte_apps.core.bounds import shown
from flyte_apps.core.config.keys import KEY_APPS, KEY_PLATFORM, PREFIX
from flyte_apps.core.config.knative_rules import knobs_from_template
from flyte_apps.core.errors import ConfigError
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.printable import printable
from flyte_apps.core.spec import decode_spec
from flyte_apps.core.stackfile import stack_file_name
from flyte_apps.kube.apps import app_selector, list_kservices

EXACT: Final = "exact"
CHANGES: Final = "changes"
REFUSED: Final = "refused"
DECLARED: Final = "declared"

DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Print the YAML it would add; write nothing.")]
ExactOnlyOption = Annotated[
    bool, typer.Option("--exact-only", help="Refuse every app whose KService would change.")
]


@dataclass
class Outcome:
    """One live app: its key, verdict, the entry to write (exact/changes), and the reasons."""

    key: str
    verdict: str
    entry: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)

    def line(self) -> str:
        detail = "; ".join(self.reasons)
        return f"{self.key}: {self.verdict}" + (f" ({detail})" if detail else "")


def register(app: typer.Typer) -> None:
    """Add ``import`` to the ``flyte-apps`` command line."""
    app.command("import")(cluster_options(TargetStackOption)(import_apps))


def import_apps(
    name: AppsArgument = None,
    *,
    project: ProjectOption = None,
    domain: DomainOption = None,
    flags: ClusterFlags,
    dry_run: DryRunOption = False,
    exact_only: ExactOnlyOption = False,
) -> None:
    """Write the apps Flyte runs into the stack file with `adopt`, for `pulumi up` to take them over."""
    with translate_errors():
        stack, config, project_dir = flags.stack, flags.config, flags.project_dir
        if stack is None and config is None:
            fail(EXIT_USAGE, "give --stack or --config: the stack file the apps are written into")
        view = load_view(flags)
        path = config if config is not None else project_dir / stack_file_name(stack or DEFAULT_STACK)
        settings = view.plan.platform.settings if view.plan is not None else view.platform.settings
        if not settings.adopt_namespace and not settings.retain_namespace:
            # Import sets adoptNamespace: the stack's Namespace resource would go, and with it the
            # namespace and every app in it.
            fail(
                EXIT_USAGE,
                f"{PREFIX}{KEY_PLATFORM}.retainNamespace is false: adopting apps sets adoptNamespace, "
                "and the namespace this stack created would be deleted; set retainNamespace: true first",
            )
        raw = read_stack_config(project_dir=project_dir, stack=stack, config_file=config)
        selector = app_selector(project or "", domain or "")
        items, _ = with_client(
            view, lambda api: list_kservices(api, view.namespace, label_selector=selector, retry=view.retry())
        )
        found = [item for item in items if name is None or _labels(item).get(c.LABEL_APP_NAME) == name]
        if name is not None and not found:
            fail(EXIT_NOT_FOUND, f"app {shown(name)} not found in namespace {view.namespace}")
        outcomes = [assess(item, view, raw, exact_only=exact_only) for item in found]
    for outcome in outcomes:
        typer.echo(printable(outcome.line()))
    entries = [outcome.entry for outcome in outcomes if outcome.verdict in (EXACT, CHANGES)]
    if any(outcome.verdict == REFUSED for outcome in outcomes):
        if dry_run and entries:
            # What the others would add, once the refused ones are dealt with (or filtered out).
            typer.echo(entries_yaml(entries), nl=False)
        typer.echo(f"error: some apps were refused; {path} was not changed", err=True)
        raise typer.Exit(EXIT_USAGE)
    if not entries:
        typer.echo("nothing to add", err=True)
        return
    if dry_run:
        typer.echo(entries_yaml(entries), nl=False)
        return
    with translate_errors():
        add_apps(path, entries, adopt_namespace=not view.platform.settings.adopt_namespace)
    typer.echo(f"wrote {len(entries)} app(s) to {path}", err=True)


KNATIVE_KEY: Final = "knative"
"""An app's Knative revision settings in the stack file (``AppInput.knative``)."""


def assess(
    item: Mapping[str, Any], view: ClusterView, raw: Mapping[str, Any], *, exact_only: bool
) -> Outcome:
    """The verdict on one live KService against the stack read from ``raw``."""
    labels = _labels(item)
    metadata = item.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    live = LiveApp(
        name=str(labels.get(c.LABEL_APP_NAME, "")),
        project=str(labels.get(c.LABEL_PROJECT, "")),
        domain=str(labels.get(c.LABEL_DOMAIN, "")),
        org=str(annotations.get(c.ANNOTATION_APP_ORG, "")),
        stopped=labels.get(c.LABEL_APP_STOPPED) == c.TRUE,
    )
    key = f"{live.project}/{live.domain}/{live.name}"
    # The stack file's own settings: ``--namespace`` only says where to look.
    platform = view.plan.platform if view.plan is not None else view.platform
    stack_namespace = platform.settings.namespace
    if metadata.get("namespace") != stack_namespace:
        reason = (
            f"KService in namespace {shown(metadata.get('namespace'))}, "
            f"the stack's is {shown(stack_namespace)} ({PREFIX}{KEY_PLATFORM}.namespace)"
        )
        return Outcome(key, REFUSED, reasons=[reason])
    if view.plan is not None and any(plan.key == key for plan in view.plan.apps):
        return Outcome(key, DECLARED, reasons=["already in the stack: left alone"])
    try:
        spec = decode_spec(str(annotations.get(c.ANNOTATION_SPEC, "")))
    except (ValueError, DecodeError):
        return Outcome(key, REFUSED, reasons=[f"{c.ANNOTATION_SPEC} does not decode as Flyte's app spec"])
    adoption = adopt_entry(spec, live)
    if adoption.refusals:
        return Outcome(key, REFUSED, reasons=[str(problem) for problem in adoption.refusals])
    entry = adoption.entry
    template = (item.get("spec") or {}).get("template") or {}
    knobs = knobs_from_template(template if isinstance(template, Mapping) else {}, stopped=live.stopped)
    if knobs:
        entry[KNATIVE_KEY] = knobs
    try:
        plan = plan_stack(_stack_with(raw, entry)).apps[0]
    except ConfigError as exc:
        return Outcome(
            key, REFUSED, reasons=[f"stack config cannot say it: {problem}" for problem in exc.problems]
        )
    comparison = compare_kservice(
        item,
        plan.kservice,
        platform,
        app_timeout=spec.timeouts.HasField("request_timeout"),
        path=f"{PREFIX}{KEY_APPS}[{live.name}]",
    )
    if comparison.refusals:
        return Outcome(key, REFUSED, reasons=[problem.message for problem in comparison.refusals])
    if comparison.exact:
        return Outcome(key, EXACT, entry=entry)
    if exact_only:
        return Outcome(key, REFUSED, reasons=["--exact-only", *comparison.changes])
    entry[ADOPT_KEY] = ADOPT_UPSERT
    return Outcome(key, CHANGES, entry=entry, reasons=comparison.changes)


def _stack_with(raw: Mapping[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """The stack's config with ``entry`` as its only app, its namespace adopted (as import writes it)."""
    values = {key: copy.deepcopy(value) for key, value in raw.items() if key != PREFIX + KEY_APPS}
    platform = values.get(PREFIX + KEY_PLATFORM)
    values[PREFIX + KEY_PLATFORM] = {
        **(platform if isinstance(platform, dict) else {}),
        "adoptNamespace": True,
    }
    values[PREFIX + KEY_APPS] = [{**entry, ADOPT_KEY: ADOPT_IMPORT}]
    return values


def _labels(item: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = (item.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


__all__: Sequence[str] = ("import_apps", "register")
