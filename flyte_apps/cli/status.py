"""``flyte-apps status``: apps as Flyte's app service reports them, plus drift from the stack."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal

import typer
from google.protobuf.json_format import MessageToDict
from kubernetes import client as k8s

from flyte_apps.cli.common import (
    EXIT_DRIFT,
    EXIT_NOT_FOUND,
    AppsArgument,
    ClusterFlags,
    DomainOption,
    OutputFormat,
    ProjectOption,
    cluster_options,
    fail,
    load_view,
    output_option,
    resolve_app,
    translate_errors,
    with_client,
)
from flyte_apps.core.adopt import ADOPT_UPSERT
from flyte_apps.core.adopt_check import compare_kservice
from flyte_apps.core.config.models import PlatformConfig
from flyte_apps.core.plan import AppPlan
from flyte_apps.core.printable import printable
from flyte_apps.core.readiness import no_ready_replica, nodes_of, unready_replicas
from flyte_apps.core.status import (
    PHASE_UNKNOWN,
    AppConversionError,
    Drift,
    app_key,
    field_drift,
    find_drift,
    knob_drift,
    latest_ready_revision,
    namespace_drift,
    summarize,
)
from flyte_apps.core.status_details import status_extras
from flyte_apps.core.yamlout import dump_yaml
from flyte_apps.kube.api import namespace_labels
from flyte_apps.kube.apps import AppSettings, AppSnapshot, node_states, snapshot_app, snapshot_apps
from flyte_apps.kube.domains import list_domain_mappings

PHASE_COLOURS: Final = {
    "ACTIVE": typer.colors.GREEN,
    "DEPLOYING": typer.colors.YELLOW,
    "PENDING": typer.colors.YELLOW,
    "FAILED": typer.colors.RED,
    "STOPPED": typer.colors.BLUE,
    PHASE_UNKNOWN: typer.colors.WHITE,
}
_COLUMNS: Final = ("APP", "PHASE", "REPLICAS", "URL", "AGE", "MESSAGE")
_WIDE_COLUMNS: Final = ("APP", "PHASE", "REPLICAS", "URL", "AGE", "PODS", "REVISION", "MESSAGE")
_NONE: Final = "-"
_NO_URL: Final = "-"
ADOPT_MISSING: Final = "adopt: no live KService"
ADOPT_CHANGES: Final = "adopt: changes (`pulumi up` would update the live KService)"
ADOPT_REFUSED: Final = (
    "adopt: the live KService differs (`pulumi up` would refuse to import it; `adopt: upsert` updates it)"
)
ADOPT_REASONS_SHOWN: Final = 3
DRIFT_ADOPT: Final = "adopt"
KUBE_LOGGER: Final = "flyte_apps.kube"
"""The logger every module of the kube layer logs under (``logging.getLogger(__name__)``)."""


StatusFormat = Literal[OutputFormat.TABLE, OutputFormat.WIDE, OutputFormat.JSON, OutputFormat.YAML]
OutputOption = Annotated[
    StatusFormat,
    output_option(
        "table; wide (adds the replicas' pod names and revision); json (protobuf JSON of"
        " App/Replica); yaml (the same data as json)."
    ),
]


def register(app: typer.Typer) -> None:
    """Add ``status`` to the ``flyte-apps`` command line."""
    app.command("status")(cluster_options()(status))


def status(
    name: AppsArgument = None,
    project: ProjectOption = None,
    domain: DomainOption = None,
    output: OutputOption = OutputFormat.TABLE,
    *,
    exit_code: Annotated[
        bool,
        typer.Option(
            "--exit-code",
            help=f"Exit {EXIT_DRIFT} when the cluster drifts from the stack (0 without), for CI.",
        ),
    ] = False,
    flags: ClusterFlags,
) -> None:
    """Show apps (phase, replicas, URL, age, message); with --stack/--config, also drift from the stack."""
    with translate_errors(), warnings_to_stderr():
        view = load_view(flags)
        retry = view.retry()
        settings = AppSettings.from_platform(view.platform)
        now = datetime.now(UTC)

        def fetch(api: k8s.ApiClient) -> list[AppSnapshot]:
            if name is None:
                return snapshot_apps(
                    api, settings, project=project or "", domain=domain or "", now=now, retry=retry
                )
            app_id = resolve_app(view, api, name=name, project=project, domain=domain)
            try:
                return [snapshot_app(api, settings, app_id, now=now, retry=retry)]
            except AppConversionError as exc:
                fail(EXIT_NOT_FOUND, str(exc))

        snapshots = with_client(view, fetch)
        plans = {plan.key: plan for plan in view.plan.apps} if view.plan is not None else {}
        drift = {
            app_key(s.app.metadata.id): [
                *drift_of(s, plans.get(app_key(s.app.metadata.id))),
                *adopt_drift(s, plans.get(app_key(s.app.metadata.id)), view.platform),
            ]
            for s in snapshots
        }
        # Profile, links and custom URLs, and DomainMappings exposing stopped apps (core.status_details).
        mappings = with_client(view, lambda api: list_domain_mappings(api, settings.namespace, retry=retry))
        planned = {
            key: [mapping["metadata"]["name"] for mapping in plan.domains.mappings]
            for key, plan in plans.items()
        }
        extras = status_extras(
            [(s.app, s.kservice) for s in snapshots],
            mappings.items,
            settings.namespace,
            planned=None if mappings.unread else planned,
        )
        for key, found in extras.drift.items():
            drift[key] = [*drift.get(key, []), *found]
        # Replicas none of which is Ready (a lost node, a failing readiness probe): a note per app.
        unready = {app_key(s.app.metadata.id): unready_replicas(s.kservice, s.pods) for s in snapshots}
        nodes = nodes_of(pod for pods in unready.values() for pod in pods)
        states = with_client(view, lambda api: node_states(api, nodes, retry=retry)) if nodes else {}
        for key, pods in unready.items():
            drift[key] = [*drift.get(key, []), *no_ready_replica(pods, states)]
        if mappings.unread:
            typer.echo(f"warning: custom domains not read: {mappings.unread}", err=True)
        missing: list[str] = []
        if name is None and view.plan is not None:
            missing = sorted(
                key
                for key, plan in plans.items()
                if key not in drift
                and project in (None, plan.config.id.project)
                and domain in (None, plan.config.id.domain)
            )
        if name is None and view.plan is not None:
            rendered = view.plan.namespace.manifest
            labels = with_client(view, lambda api: namespace_labels(api, settings.namespace, retry=retry))
            drift[f"namespace {settings.namespace}"] = namespace_drift(labels, rendered)
        drifted = bool(missing) or any(d.is_drift for found in drift.values() for d in found)
        if output in (OutputFormat.JSON, OutputFormat.YAML):
            entries = status_json(snapshots, drift)
            for entry, snapshot in zip(entries, snapshots, strict=True):
                entry.update(extras.json_fields(app_key(snapshot.app.metadata.id)))
            if output is OutputFormat.YAML:
                typer.echo(dump_yaml(entries), nl=False)
            else:
                typer.echo(json.dumps(entries, indent=2))
            exit_on_drift(drifted=drifted and exit_code)
            return
        if not snapshots:
            typer.echo(f"no apps found in namespace {settings.namespace}", err=True)
        else:
            for line in status_table(snapshots, now=now, wide=output is OutputFormat.WIDE):
                typer.echo(line)
            details = extras.lines()
            for line in ["", *details] if details else []:
                typer.echo(printable(line))
        differences = [(key, d.message) for key, found in drift.items() for d in found if d.is_drift]
        differences += [(key, missing_note(plans[key])) for key in missing]
        if differences:
            typer.echo("")
            typer.secho("drift:", fg=typer.colors.YELLOW, bold=True)
            for key, message in differences:
                typer.secho(printable(f"  {key}: {message}"), fg=typer.colors.YELLOW)
        notes = [(key, d.message) for key, found in drift.items() for d in found if not d.is_drift]
        if notes:
            typer.echo("")
            typer.echo("notes:")
            for key, message in notes:
                typer.echo(printable(f"  {key}: {message}"))
        exit_on_drift(drifted=drifted and exit_code)


def exit_on_drift(*, drifted: bool) -> None:
    """``--exit-code``: drift from the stack is exit 4, for CI (the output is written first)."""
    if drifted:
        raise typer.Exit(EXIT_DRIFT)


def missing_note(plan: AppPlan) -> str:
    """Why an app of the stack that the cluster does not have is drift."""
    if plan.config.input.adopt:
        return f"{ADOPT_MISSING}: `pulumi up` would create it instead of adopting it"
    return (
        "in the stack but not in the cluster: `pulumi up --refresh` creates it (a plain `pulumi up` does not "
        "see an object deleted by hand)"
    )


def adopt_drift(snapshot: AppSnapshot, plan: AppPlan | None, platform: PlatformConfig) -> list[Drift]:
    """An ``adopt`` app whose live KService the next ``pulumi up`` would change (the import option
    would be refused, or the upsert provider would update it): what would change."""
    if plan is None or not plan.config.input.adopt or not snapshot.kservice:
        return []
    timeouts = plan.config.input.timeouts
    comparison = compare_kservice(
        snapshot.kservice,
        plan.kservice,
        platform,
        app_timeout=timeouts is not None and timeouts.request is not None,
        path=plan.config.path,
    )
    if comparison.exact:
        return []
    reasons = [*comparison.changes, *(str(problem) for problem in comparison.refusals)]
    more = f" and {len(reasons) - ADOPT_REASONS_SHOWN} more" if len(reasons) > ADOPT_REASONS_SHOWN else ""
    # ``adopt: true`` imports the object as it is: Pulumi refuses an import whose inputs differ.
    verdict = ADOPT_CHANGES if plan.config.input.adopt == ADOPT_UPSERT else ADOPT_REFUSED
    return [Drift(DRIFT_ADOPT, f"{verdict}: {'; '.join(reasons[:ADOPT_REASONS_SHOWN])}{more}")]


def drift_of(snapshot: AppSnapshot, plan: AppPlan | None) -> list[Drift]:
    """Drift against the stack's plan of this app (only the woken check without one)."""
    app = snapshot.app
    replicas = max(app.status.current_replicas, len(snapshot.replicas))
    found = find_drift(
        snapshot.kservice,
        expected=plan.blob if plan is not None else None,
        expected_stopped=bool(plan.config.input.stopped) if plan is not None else None,
        replicas=replicas,
    )
    if plan is not None and snapshot.kservice and not plan.config.input.adopt:
        # An adopt app's differences, these among them, are what adopt_drift reports.
        found.extend(knob_drift(snapshot.kservice, plan.kservice))
        found.extend(field_drift(snapshot.kservice, plan.kservice))
    return found


def status_json(snapshots: Sequence[AppSnapshot], drift: dict[str, list[Drift]]) -> list[dict[str, Any]]:
    """``[{"app": App, "replicas": [Replica, ...]}]`` in protobuf JSON (plus ``drift`` and ``notes``
    when any)."""
    result = []
    for snapshot in snapshots:
        entry: dict[str, Any] = {
            "app": MessageToDict(snapshot.app),
            "replicas": [MessageToDict(replica) for replica in snapshot.replicas],
        }
        found = drift.get(app_key(snapshot.app.metadata.id), [])
        for key, wanted in (("drift", True), ("notes", False)):
            chosen = [{"kind": d.kind, "message": d.message} for d in found if d.is_drift is wanted]
            if chosen:
                entry[key] = chosen
        result.append(entry)
    return result


def status_table(snapshots: Sequence[AppSnapshot], *, now: datetime, wide: bool = False) -> list[str]:
    """Aligned rows; the phase is coloured (click drops colour when stdout is not a terminal).
    ``wide`` adds the replicas' pod names and the revision they run."""
    columns = _WIDE_COLUMNS if wide else _COLUMNS
    rows = []
    for snapshot in snapshots:
        app = snapshot.app
        phase, message = summarize(app)
        created = app.status.created_at.ToDatetime(tzinfo=UTC) if app.status.HasField("created_at") else None
        given = (
            app_key(app.metadata.id),
            phase,
            str(app.status.current_replicas),
            app.status.ingress.public_url or _NO_URL,
            age(created, now) if created is not None else "-",
            *(replica_columns(snapshot) if wide else ()),
            message,
        )
        rows.append(tuple(printable(cell) for cell in given))  # the cluster wrote most of them
    widths = [max(len(row[i]) for row in [columns, *rows]) for i in range(len(columns) - 1)]
    lines = [
        "  ".join(
            [*(title.ljust(width) for title, width in zip(columns[:-1], widths, strict=True)), columns[-1]]
        )
    ]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        cells[1] = typer.style(cells[1], fg=PHASE_COLOURS.get(row[1]), bold=row[1] == "FAILED")
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return lines


def replica_columns(snapshot: AppSnapshot) -> tuple[str, str]:
    """``wide``'s PODS and REVISION cells: the replicas' pod names, and the Knative revision they
    belong to (the latest ready one: the replicas are its pods, see ``flyte_apps.kube.replicas``)."""
    pods = ",".join(replica.metadata.id.name for replica in snapshot.replicas)
    return pods or _NONE, latest_ready_revision(snapshot.kservice) or _NONE


def age(created: datetime, now: datetime) -> str:
    """kubectl-style age: 45s, 12m, 5h, 3d."""
    seconds = max(0, int((now - created).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 120 * 60:
        return f"{seconds // 60}m"
    if seconds < 48 * 3600:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


class _EchoHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        typer.echo(f"warning: {record.getMessage()}", err=True)


@contextmanager
def warnings_to_stderr() -> Iterator[None]:
    """While a command runs, the Kubernetes layer's warnings (skipped KServices, dropped events,
    watch retries, the Revision fallback) go to stderr as ``warning: ...`` lines."""
    logger = logging.getLogger(KUBE_LOGGER)
    handler = _EchoHandler(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
