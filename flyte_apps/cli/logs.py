"""``flyte-apps logs``: an app's logs, from every replica or one, optionally followed.

Lines go to stdout as :func:`text_lines` or :func:`json_lines` encode them (``docs/operating.md``
shows both), notes such as "scaled to zero" to stderr; the output is flushed whenever no more lines
are waiting, not per line. Exit codes are :mod:`flyte_apps.cli.common`'s (Ctrl-C: 130).
"""

from __future__ import annotations

import io
import json
from collections.abc import Generator
from contextlib import closing
from dataclasses import dataclass
from typing import Annotated, Final, Literal

import typer
from kubernetes import client as k8s

from flyte_apps.cli.common import (
    ClusterFlags,
    DomainOption,
    ProjectOption,
    cluster_options,
    load_view,
    output_option,
    resolve_app,
    translate_errors,
    with_client,
)
from flyte_apps.cli.common import OutputFormat as OutputFormat
from flyte_apps.core.printable import printable
from flyte_apps.kube.logs import (
    DEFAULT_POLL_INTERVAL,
    DEFAULT_TAIL_LINES,
    LogBatch,
    LogOptions,
    Notice,
    ReplicaLines,
    read_app,
    read_replica,
)
from flyte_apps.kube.retry import DEFAULT_RETRY, RetryPolicy

LogsFormat = Literal[OutputFormat.TEXT, OutputFormat.JSON]
_FOLLOW_HELP: Final = "Keep streaming new lines, picking up replicas as they start; ends when none is left."
NameArgument = Annotated[str, typer.Argument(help="The app's name (as in the stack config).")]
ReplicaOption = Annotated[
    str | None,
    typer.Option("--replica", "-r", help="Only this replica (pod name); it must belong to the app."),
]
FollowOption = Annotated[bool, typer.Option("--follow", "-f", help=_FOLLOW_HELP)]
_TAIL_HELP: Final = (
    "Lines of history per replica to start with; -1 for all. Following, a replica that starts later is read "
    "from its first line."
)
TailOption = Annotated[int, typer.Option("--tail", min=-1, help=_TAIL_HELP)]
TimestampsOption = Annotated[
    bool, typer.Option("--timestamps", help="Print each line's RFC 3339 timestamp before it.")
]
OutputOption = Annotated[
    LogsFormat, output_option("text, or json: one object per line (replica, timestamp, message).")
]


@dataclass(frozen=True)
class LineStyle:
    """How a log line is printed: ``prefix`` ``<replica> | `` (an app's text output, not one replica's)."""

    output: OutputFormat = OutputFormat.TEXT
    prefix: bool = True
    timestamps: bool = False


_FLUSH_AT: Final = 256 * 1024
"""Characters of formatted output held back at most, even while more lines are waiting."""
_JSON: Final = json.JSONEncoder(ensure_ascii=False)
"""The encoder ``json.dumps(..., ensure_ascii=False)`` builds at every call (it holds no state)."""


def json_lines(batch: ReplicaLines, _style: LineStyle) -> str:
    """``-o json``: per line exactly ``json.dumps({"replica": ..., "timestamp": ..., "message": ...},
    ensure_ascii=False)`` (the timestamp as the kubelet writes it, or null), and a newline."""
    return "".join(
        [
            _JSON.encode({"replica": batch.replica, "timestamp": stamp, "message": message}) + "\n"
            for message, stamp in batch.lines
        ]
    )


def text_lines(batch: ReplicaLines, style: LineStyle) -> str:
    """Text: ``[<replica> | ][<timestamp> ]<message>`` and a newline per line; control characters of
    the message escaped, colour kept (like ``less -R``)."""
    prefix, stamps = f"{batch.replica} | " if style.prefix else "", style.timestamps
    return "".join(
        [
            f"{prefix}{stamp + ' ' if stamps and stamp else ''}{printable(message, keep_colour=True)}\n"
            for message, stamp in batch.lines
        ]
    )


def print_events(events: Generator[LogBatch, None, None], style: LineStyle) -> None:
    """Print lines as they come through one buffer, written with ``typer.echo`` (colour codes are
    stripped when stdout is not a terminal) whenever no more lines are waiting (:class:`CaughtUp`),
    at 256 KiB and at the end, Ctrl-C included; notes go to stderr after the lines before them. The
    source is closed however this ends."""
    encode = json_lines if style.output is OutputFormat.JSON else text_lines
    held = io.StringIO()

    def flush() -> None:
        if held.tell():
            typer.echo(held.getvalue(), nl=False)
            held.seek(0)
            held.truncate()

    try:
        with closing(events):
            for event in events:
                if isinstance(event, ReplicaLines):
                    if held.write(encode(event, style)) and held.tell() >= _FLUSH_AT:
                        flush()
                else:
                    flush()
                    if isinstance(event, Notice):
                        typer.echo(printable(event.message), err=True)
    finally:
        flush()


def register(
    app: typer.Typer,
    *,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> None:
    """Add ``logs`` to ``app``; ``poll_interval`` and ``retry`` are there for tests."""

    @app.command("logs")
    @cluster_options()
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
        flags: ClusterFlags,
    ) -> None:
        """Print an app's logs, from every replica or one (--replica); --follow streams new lines."""
        style = LineStyle(output=output, prefix=replica is None, timestamps=timestamps)
        with translate_errors():
            view = load_view(flags)
            options = LogOptions(follow, None if tail < 0 else tail, poll_interval, retry=view.retry(retry))

            def show(api: k8s.ApiClient) -> None:
                app = resolve_app(view, api, name=name, project=project, domain=domain)
                if replica is not None:
                    events = read_replica(
                        api, app=app, namespace=view.namespace, name=replica, options=options
                    )
                else:
                    events = read_app(api, app=app, namespace=view.namespace, options=options)
                print_events(events, style)

            with_client(view, show)
