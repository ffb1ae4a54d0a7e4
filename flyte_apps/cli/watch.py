"""``flyte-apps watch``: the current apps as create events, then every change, one line each."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Annotated, Final, Literal

import typer
from flyteidl2.app.app_payload_pb2 import WatchResponse
from google.protobuf.json_format import MessageToDict
from kubernetes import client as k8s

from flyte_apps.cli.common import (
    AppsArgument,
    ClusterFlags,
    ClusterView,
    DomainOption,
    OutputFormat,
    ProjectOption,
    cluster_options,
    load_view,
    output_option,
    resolve_app,
    translate_errors,
    with_client,
)
from flyte_apps.cli.status import PHASE_COLOURS, warnings_to_stderr
from flyte_apps.core import constants as c
from flyte_apps.core.printable import printable
from flyte_apps.core.status import app_key, summarize
from flyte_apps.kube.apps import app_selector, list_kservices_page
from flyte_apps.kube.watch import Subscription, WatchHub, WatchTarget, event_app

_POLL: Final = 0.25
"""Seconds between checks of --timeout while no event arrives."""
_KINDS: Final = {"create_event": "CREATED", "update_event": "UPDATED", "delete_event": "DELETED"}


WatchFormat = Literal[OutputFormat.TEXT, OutputFormat.JSON]
OutputOption = Annotated[WatchFormat, output_option("text, or json (one WatchResponse per line).")]


def register(app: typer.Typer) -> None:
    """Add ``watch`` to the ``flyte-apps`` command line."""
    app.command("watch")(cluster_options()(watch))


def watch(
    name: AppsArgument = None,
    *,
    project: ProjectOption = None,
    domain: DomainOption = None,
    output: OutputOption = OutputFormat.TEXT,
    flags: ClusterFlags,
    max_events: Annotated[
        int | None, typer.Option("--max-events", hidden=True, min=1, help="Exit after this many events.")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", hidden=True, min=0, help="Exit after this many seconds.")
    ] = None,
) -> None:
    """Stream app events: the current apps first (as CREATED), then changes as they happen. Ctrl-C ends."""
    with translate_errors(), warnings_to_stderr():
        view = load_view(flags)
        target = with_client(view, lambda api: watch_target(view, api, name, project, domain))
        settings = view.platform.settings
        hub = WatchHub(
            view.client,
            namespace=settings.namespace,
            base_domain=settings.base_domain,
            scheme=settings.scheme,
            ingress_apps_port=settings.ingress_apps_port,
            buffer_size=settings.watch_buffer_size,
            retry=view.retry(),
        )
        hub.start()
        try:
            subscription = hub.subscribe(target)
            stream(subscription, output=output, max_events=max_events, timeout=timeout)
        finally:
            hub.stop()
        if subscription.failure is not None:
            raise subscription.failure  # the hub gave up: the cluster kept answering garbage


def watch_target(
    view: ClusterView, api: k8s.ApiClient, name: str | None, project: str | None, domain: str | None
) -> WatchTarget:
    """Which apps to watch. A NAME is resolved like ``status`` does, except that a name found
    nowhere (neither in the stack nor in the cluster) is waited for, in every project/domain the
    flags allow."""
    if name is None:
        return WatchTarget(project=project, domain=domain)
    if project is None or domain is None:
        in_stack = view.plan is not None and any(
            plan.config.id.name == name
            and project in (None, plan.config.id.project)
            and domain in (None, plan.config.id.domain)
            for plan in view.plan.apps
        )
        if not in_stack and not _in_cluster(view, api, name, project, domain):
            where = str(WatchTarget(project=project, domain=domain, name=name))
            typer.echo(
                f"app '{name}' not found yet; waiting for {where} in namespace {view.namespace}", err=True
            )
            return WatchTarget(project=project, domain=domain, name=name)
    app_id = resolve_app(view, api, name=name, project=project, domain=domain)
    return WatchTarget(project=app_id.project, domain=app_id.domain, name=app_id.name)


def _in_cluster(
    view: ClusterView, api: k8s.ApiClient, name: str, project: str | None, domain: str | None
) -> bool:
    selector = f"{app_selector(project or '', domain or '')},{c.LABEL_APP_NAME}={name}"
    items, _, _ = list_kservices_page(
        api, view.namespace, label_selector=selector, limit=1, retry=view.retry()
    )
    return bool(items)


def stream(
    subscription: Subscription, *, output: WatchFormat, max_events: int | None, timeout: float | None
) -> int:
    """Print events as they come (flushed per line) until ``max_events``, ``timeout`` or the end of
    the subscription; returns how many were printed."""
    deadline = time.monotonic() + timeout if timeout is not None else None
    printed = 0
    while max_events is None or printed < max_events:
        wait = _POLL
        if deadline is not None:
            wait = min(wait, deadline - time.monotonic())
            if wait <= 0:
                break
        event = subscription.get(wait)
        if event is None:
            if subscription.closed:
                break
            continue
        typer.echo(event_json(event) if output is OutputFormat.JSON else event_line(event))
        printed += 1
    return printed


def event_json(event: WatchResponse) -> str:
    return json.dumps(MessageToDict(event), separators=(",", ":"))


def event_line(event: WatchResponse, *, now: datetime | None = None) -> str:
    """``2025-05-01T10:00:00Z UPDATED proj/dev/myapp DEPLOYING -> ACTIVE  replicas 1  URL  message``."""
    kind = str(event.WhichOneof("event"))
    app = event_app(event)
    phase, message = summarize(app)
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    shown = typer.style(phase, fg=PHASE_COLOURS.get(phase))
    if kind == "update_event" and event.update_event.HasField("old_app"):
        old_phase, _ = summarize(event.update_event.old_app)
        if old_phase != phase:
            shown = f"{typer.style(old_phase, fg=PHASE_COLOURS.get(old_phase))} -> {shown}"
    parts = [stamp, _KINDS.get(kind, kind).ljust(7), printable(app_key(app.metadata.id)), shown]
    if kind != "delete_event":
        parts.append(f"replicas {app.status.current_replicas}")
        if app.status.ingress.public_url:
            parts.append(printable(app.status.ingress.public_url))
        if message:
            parts.append(printable(message))
    return "  ".join(parts)
