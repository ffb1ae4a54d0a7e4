"""``flyte-apps logs``: an app's logs, from every replica or one, optionally followed.

Output goes to stdout, one line per log line: ``<replica> | <message>`` for an app (the prefix is
left out for a single ``--replica``), with ``--timestamps`` the kubelet's RFC 3339 timestamp before
the message, or with ``-o json`` one object per line (``replica``, ``timestamp`` or null,
``message``). Notes such as "scaled to zero" go to stderr. Exit codes are those of
:mod:`flyte_apps.cli.common`; ``--follow`` ends by itself (0) once every replica is gone, or on
Ctrl-C (130).

Lines are formatted a batch at a time and written through one buffer that is flushed whenever no
more lines are waiting (and when it grows large): a flush per line cost more than reading the line
(``logs -f`` fell far behind a busy app), while flushing as soon as the readers are idle still
shows a lone line at once to ``logs -f | jq``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from contextlib import closing
from dataclasses import dataclass
from typing import Annotated, Final, Literal

import typer
from kubernetes import client as k8s

from flyte_apps.cli.common import (
    DEFAULT_PROJECT_DIR,
    DEFAULT_REQUEST_TIMEOUT,
    BaseDomainOption,
    ClusterView,
    ConfigOption,
    ContextOption,
    DomainOption,
    KubeconfigOption,
    LiveStackOption,
    NamespaceOption,
    ProjectDirOption,
    ProjectOption,
    RequestTimeoutOption,
    load_view,
    output_option,
    resolve_app,
    translate_errors,
    with_client,
)
from flyte_apps.cli.common import OutputFormat as OutputFormat
from flyte_apps.core.logparse import LogLine
from flyte_apps.core.printable import printable
from flyte_apps.kube.logs import (
    DEFAULT_POLL_INTERVAL,
    DEFAULT_TAIL_LINES,
    LogBatch,
    LogOptions,
    Notice,
    ReplicaLine,
    ReplicaLines,
    read_app,
    read_replica,
)
from flyte_apps.kube.retry import DEFAULT_RETRY, RetryPolicy

LogsFormat = Literal[OutputFormat.TEXT, OutputFormat.JSON]
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
    LogsFormat, output_option("text, or json: one object per line (replica, timestamp, message).")
]


@dataclass(frozen=True)
class LineStyle:
    """How a log line is printed."""

    output: OutputFormat = OutputFormat.TEXT
    prefix: bool = True
    """Prefix ``<replica> | `` (text output of an app, as opposed to one replica)."""
    timestamps: bool = False


_FLUSH_AT: Final = 256 * 1024
"""Characters of formatted output held back at most, even while more lines are waiting."""


def _shown(message: str) -> str:
    """A log message for the terminal: control characters escaped, colour kept (like ``less -R``)."""
    return printable(message, keep_colour=True)


def render_line(event: ReplicaLine, style: LineStyle) -> str:
    """One output line for one log line (no newline)."""
    return LineRenderer(style).line(event.replica, event.line)


class LineRenderer:
    """The output lines of log lines, a batch at a time, as ``style`` asks: per line, exactly
    ``json.dumps({"replica": ..., "timestamp": ..., "message": ...}, ensure_ascii=False)`` (the
    timestamp as the kubelet writes it, or null), or the text form."""

    def __init__(self, style: LineStyle) -> None:
        self.style = style

    def render(self, batch: ReplicaLines) -> str:
        """Every line of ``batch``, each followed by a newline."""
        return "".join(f"{self.line(batch.replica, line)}\n" for line in batch.lines)

    def line(self, replica: str, line: LogLine) -> str:
        """One log line as printed (no newline)."""
        stamp = None if line.timestamp is None else line.timestamp.rfc3339()
        if self.style.output is OutputFormat.JSON:
            record = {"replica": replica, "timestamp": stamp, "message": line.message}
            return json.dumps(record, ensure_ascii=False)
        prefix = f"{replica} | " if self.style.prefix else ""
        if self.style.timestamps and stamp is not None:
            return f"{prefix}{stamp} {_shown(line.message)}"
        return f"{prefix}{_shown(line.message)}"


class _Printer:
    """Formatted lines held back until :meth:`flush`: written with ``typer.echo`` (so colour codes
    are stripped as before when stdout is not a terminal), one write and one flush for many lines."""

    def __init__(self, echo: Callable[..., None] = typer.echo) -> None:
        self._echo = echo
        self._parts: list[str] = []
        self._size = 0

    def add(self, text: str) -> None:
        self._parts.append(text)
        self._size += len(text)
        if self._size >= _FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        if self._parts:
            text, self._parts, self._size = "".join(self._parts), [], 0
            self._echo(text, nl=False)


def print_events(events: Generator[LogBatch, None, None], style: LineStyle) -> None:
    """Print lines as they come, flushed whenever no more are waiting (:class:`CaughtUp`) and at
    the end, Ctrl-C included (lines read are printed); notes go to stderr after the lines before
    them. The source is closed however this ends."""
    printer = _Printer()
    render = LineRenderer(style).render
    try:
        with closing(events):
            for event in events:
                if isinstance(event, ReplicaLines):
                    printer.add(render(event))
                elif isinstance(event, Notice):
                    printer.flush()
                    typer.echo(printable(event.message), err=True)
                else:
                    printer.flush()
    finally:
        printer.flush()


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
        events = read_replica(api, app=app, namespace=view.namespace, name=replica, options=options)
    else:
        events = read_app(api, app=app, namespace=view.namespace, options=options)
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
        stack: LiveStackOption = None,
        config: ConfigOption = None,
        project_dir: ProjectDirOption = DEFAULT_PROJECT_DIR,
        kubeconfig: KubeconfigOption = None,
        context: ContextOption = None,
        namespace: NamespaceOption = None,
        base_domain: BaseDomainOption = None,
        request_timeout: RequestTimeoutOption = DEFAULT_REQUEST_TIMEOUT,
    ) -> None:
        """Print an app's logs, from every replica or one (--replica); --follow streams new lines."""
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
                request_timeout=request_timeout,
            )
            options = LogOptions(
                follow=follow,
                tail=None if tail < 0 else tail,
                poll_interval=poll_interval,
                retry=view.retry(retry),
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
