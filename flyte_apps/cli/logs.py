"""``flyte-apps logs``: an app's logs, from every replica or one, optionally followed.

Output goes to stdout one line at a time, flushed as it comes: ``<replica> | <message>`` for an
app (the prefix is left out for a single ``--replica``), with ``--timestamps`` the kubelet's RFC
3339 timestamp before the message, or with ``-o json`` one object per line (``replica``,
``timestamp`` or null, ``message``). Notes such as "scaled to zero" go to stderr. Exit codes are
those of :mod:`flyte_apps.cli.common`; ``--follow`` ends by itself (0) once every replica is
gone, or on Ctrl-C (130).
"""

from __future__ import annotations

import json
from collections.abc import Generator
from contextlib import closing
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from kubernetes import client as k8s

from flyte_apps.cli.common import (
    BaseDomainOption,
    ClusterView,
    ConfigOption,
    ContextOption,
    DomainOption,
    KubeconfigOption,
    NamespaceOption,
    ProjectDirOption,
    ProjectOption,
    StackOption,
    load_view,
    resolve_app,
    translate_errors,
    with_client,
)
from flyte_apps.kube.logs import (
    DEFAULT_POLL_INTERVAL,
    DEFAULT_TAIL_LINES,
    LogEvent,
    LogOptions,
    Notice,
    ReplicaLine,
    tail_app,
    tail_replica,
)
from flyte_apps.kube.retry import DEFAULT_RETRY, RetryPolicy


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


NameArgument = Annotated[str, typer.Argument(help="The app's name (as in the stack config).")]
ReplicaOption = Annotated[
    str | None,
    typer.Option("--replica", "-r", help="Only this replica (pod name); it must belong to the app."),
]
FollowOption = Annotated[
    bool,
    typer.Option(
        "--follow",
        "-f",
        help="Keep streaming new lines, picking up replicas as they start; ends when none is left.",
    ),
]
TailOption = Annotated[
    int,
    typer.Option("--tail", min=-1, help="Lines of history per replica to start with; -1 for all."),
]
TimestampsOption = Annotated[
    bool, typer.Option("--timestamps", help="Print each line's RFC 3339 timestamp before it.")
]
OutputOption = Annotated[
    OutputFormat,
    typer.Option("--output", "-o", help="text, or json: one object per line (replica, timestamp, message)."),
]


@dataclass(frozen=True)
class LineStyle:
    """How a log line is printed."""

    output: OutputFormat = OutputFormat.TEXT
    prefix: bool = True
    """Prefix ``<replica> | `` (text output of an app, as opposed to one replica)."""
    timestamps: bool = False


def render_line(event: ReplicaLine, style: LineStyle) -> str:
    """One output line for one log line (no newline)."""
    stamp = event.line.timestamp
    if style.output is OutputFormat.JSON:
        record = {
            "replica": event.replica,
            "timestamp": stamp.rfc3339() if stamp is not None else None,
            "message": event.line.message,
        }
        return json.dumps(record, ensure_ascii=False)
    text = event.line.message
    if style.timestamps and stamp is not None:
        text = f"{stamp.rfc3339()} {text}"
    return f"{event.replica} | {text}" if style.prefix else text


def print_events(events: Generator[LogEvent, None, None], style: LineStyle) -> None:
    """Print as events come (typer.echo flushes); the source is closed however this ends."""
    with closing(events):
        for event in events:
            if isinstance(event, Notice):
                typer.echo(event.message, err=True)
            else:
                typer.echo(render_line(event, style))


def show_logs(
    view: ClusterView,
    api: k8s.ApiClient,
    *,
    name: str,
    project: str | None,
    domain: str | None,
    replica: str | None,
    options: LogOptions,
    style: LineStyle,
) -> None:
    """Resolve the app, then print its logs (or one replica's)."""
    app = resolve_app(view, api, name=name, project=project, domain=domain)
    if replica is not None:
        events = tail_replica(api, app=app, namespace=view.namespace, name=replica, options=options)
    else:
        events = tail_app(api, app=app, namespace=view.namespace, options=options)
    print_events(events, style)


def register(
    app: typer.Typer,
    *,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> None:
    """Add ``logs`` to ``app``; ``poll_interval`` and ``retry`` are there for tests."""

    @app.command("logs")
    def logs(
        name: NameArgument,
        *,
        project: ProjectOption = None,
        domain: DomainOption = None,
        replica: ReplicaOption = None,
        follow: FollowOption = False,
        tail: TailOption = DEFAULT_TAIL_LINES,
        timestamps: TimestampsOption = False,
        output: OutputOption = OutputFormat.TEXT,
        stack: StackOption = None,
        config: ConfigOption = None,
        project_dir: ProjectDirOption = Path(),
        kubeconfig: KubeconfigOption = None,
        context: ContextOption = None,
        namespace: NamespaceOption = None,
        base_domain: BaseDomainOption = None,
    ) -> None:
        """Print an app's logs, from every replica or one (--replica); --follow streams new lines."""
        options = LogOptions(
            follow=follow, tail=None if tail < 0 else tail, poll_interval=poll_interval, retry=retry
        )
        style = LineStyle(output=output, prefix=replica is None, timestamps=timestamps)
        with translate_errors():
            view = load_view(
                stack=stack,
                config=config,
                project_dir=project_dir,
                kubeconfig=kubeconfig,
                context=context,
                namespace=namespace,
                base_domain=base_domain,
            )
            with_client(
                view,
                lambda api: show_logs(
                    view,
                    api,
                    name=name,
                    project=project,
                    domain=domain,
                    replica=replica,
                    options=options,
                    style=style,
                ),
            )
