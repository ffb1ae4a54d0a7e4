"""Logs read in batches: the fast timestamp path means exactly what ``parse_line`` means, batches keep
each replica's order, a follower says when it has caught up (so a printer flushes a lone line at
once), and the CLI's batch formatting writes exactly what per-line ``json.dumps`` wrote."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Generator

import pytest
from kubernetes import client

from flyte_apps.cli.logs import LineRenderer, LineStyle, OutputFormat, print_events, render_line
from flyte_apps.core.logparse import LogLine, LogTime, parse_line
from flyte_apps.kube.logs import (
    CAUGHT_UP,
    CaughtUp,
    LineParser,
    LogBatch,
    Notice,
    ReplicaLine,
    ReplicaLines,
    read_app,
)
from tests.fakes.kube_api import FakeKubeApi
from tests.kube.test_logs import APP, FOLLOW, NS, at, drive, log_requests, serving, wait_until
from tests.kube.test_logs import watchdog as watchdog

LINES = [
    "2024-01-15T10:30:00.123456789Z Hello, world!",
    "2024-01-15T10:30:00.123456789Z ",
    "2024-01-15T10:30:00.123456789Z",
    "2024-01-15T10:30:00.000000000Z  two spaces",
    "2024-01-15T10:30:01.999999999Z next second",
    "2024-01-15T10:30:00Z whole seconds",
    "2024-01-15T10:30:00.5Z short fraction",
    "2024-01-15T10:30:00.1234567891Z ten digits",
    "2024-01-15T10:30:00.123456789+02:00 offset",
    "2024-01-15T10:30:00.123456789z lower z",
    "2024-02-30T10:30:00.123456789Z no such day",
    "2024-01-15T24:30:00.123456789Z no such hour",
    "2024-01-15 10:30:00.123456789Z a space inside",
    "2024-01-15T10:30:00.12345678\u0669Z an Arabic-Indic digit",
    "2024-01-15T10:30:00.12345678xZ a letter",
    "2024-01-15T10:30:00,123456789Z a comma",
    "0000-01-01T00:00:00.000000001Z year zero",
    "9999-12-31T23:59:59.999999999Z the last instant",
    "1969-12-31T23:59:59.999999999Z before the epoch",
    " 2024-01-15T10:30:00.123456789Z leading space",
    "plain message",
    "",
]


@pytest.mark.parametrize("text", LINES, ids=range(len(LINES)))
def test_the_fast_parser_reads_every_line_as_parse_line_does(text: str) -> None:
    assert LineParser()(text) == parse_line(text)


def test_the_fast_parser_keeps_its_second_across_lines_without_mixing_them_up() -> None:
    parse = LineParser()
    assert [parse(text) for text in LINES * 2] == [parse_line(text) for text in LINES * 2]


def test_a_follower_hands_lines_over_in_order_and_says_when_it_has_caught_up(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    first, second = serving(kube_server, pods=2)
    kube_server.append_log(NS, first, "app", *(f"a{i}" for i in range(50)), at=at(1))
    kube_server.append_log(NS, second, "app", *(f"b{i}" for i in range(50)), at=at(1))

    def scenario() -> None:
        wait_until(lambda: len(log_requests(kube_server)) == 2)
        wait_until(backlog_read.is_set)  # "late" must come alone, after both backlogs are handed over
        kube_server.append_log(NS, first, "app", "late", at=at(2))
        wait_until(lambda: seen_late.is_set())
        for pod in (first, second):
            kube_server.finish_pod(NS, pod)

    seen_late = threading.Event()
    backlog_read = threading.Event()
    drive(scenario)
    items: list[LogBatch] = []
    lines_read = 0
    for item in read_app(kube_api, app=APP, namespace=NS, options=FOLLOW):
        items.append(item)
        if isinstance(item, ReplicaLines):
            lines_read += len(item.lines)
        if lines_read >= 100:
            backlog_read.set()
        if isinstance(item, ReplicaLines) and any(line.message == "late" for line in item.lines):
            seen_late.set()
    by_replica: dict[str, list[str]] = {}
    for item in items:
        if isinstance(item, ReplicaLines):
            by_replica.setdefault(item.replica, []).extend(line.message for line in item.lines)
    assert by_replica == {
        first: [f"a{i}" for i in range(50)] + ["late"],
        second: [f"b{i}" for i in range(50)],
    }
    late = next(
        i
        for i, item in enumerate(items)
        if isinstance(item, ReplicaLines) and item.lines[-1].message == "late"
    )
    assert isinstance(items[late + 1], CaughtUp)  # nothing else waiting: a printer flushes the lone line
    assert not any(isinstance(a, CaughtUp) and isinstance(b, CaughtUp) for a, b in itertools.pairwise(items))


def stamp(text: str) -> LogTime:
    parsed = LogTime.parse(text)
    assert parsed is not None
    return parsed


BATCH = ReplicaLines(
    "app-00001-deployment-1",
    (
        LogLine('say "hi" ü \\ \x01 \u2028', stamp("2024-01-01T00:00:03.5Z")),
        LogLine("same second", stamp("2024-01-01T00:00:03.000000001Z")),
        LogLine("no stamp"),
        LogLine("", stamp("1999-12-31T23:59:59.999999999Z")),
        LogLine("next day", stamp("2000-01-01T00:00:00Z")),
    ),
)


def old_render(event: ReplicaLine, style: LineStyle) -> str:
    """How ``logs`` formatted a line before batches: one ``json.dumps`` (or f-string) per line."""
    line_stamp = event.line.timestamp
    if style.output is OutputFormat.JSON:
        record = {
            "replica": event.replica,
            "timestamp": line_stamp.rfc3339() if line_stamp is not None else None,
            "message": event.line.message,
        }
        return json.dumps(record, ensure_ascii=False)
    text = event.line.message
    if style.timestamps and line_stamp is not None:
        text = f"{line_stamp.rfc3339()} {text}"
    return f"{event.replica} | {text}" if style.prefix else text


STYLES = [
    LineStyle(),
    LineStyle(prefix=False),
    LineStyle(timestamps=True),
    LineStyle(prefix=False, timestamps=True),
    LineStyle(output=OutputFormat.JSON),
]


@pytest.mark.parametrize("style", STYLES, ids=str)
def test_a_batch_is_formatted_exactly_as_lines_were_one_by_one(style: LineStyle) -> None:
    events = [ReplicaLine(BATCH.replica, line) for line in BATCH.lines]
    expected = "".join(f"{old_render(event, style)}\n" for event in events)
    renderer = LineRenderer(style)
    assert renderer.render(BATCH) == expected
    assert renderer.render(BATCH) == expected  # the remembered second does not leak into the next batch
    assert [render_line(event, style) for event in events] == [old_render(event, style) for event in events]


def test_lines_are_flushed_when_caught_up_and_notes_come_after_the_lines_before_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    outputs: list[tuple[str, str]] = []

    def events() -> Generator[LogBatch, None, None]:
        yield ReplicaLines("r", (LogLine("one"), LogLine("two")))
        outputs.append(capsys.readouterr())
        yield CAUGHT_UP
        outputs.append(capsys.readouterr())
        yield ReplicaLines("r", (LogLine("three"),))
        yield Notice("a note")
        outputs.append(capsys.readouterr())
        yield ReplicaLines("r", (LogLine("four"),))

    print_events(events(), LineStyle(prefix=False))
    outputs.append(capsys.readouterr())
    assert outputs == [("", ""), ("one\ntwo\n", ""), ("three\n", "a note\n"), ("four\n", "")]
