"""Logs read in batches: a follower keeps each replica's order and says when it has caught up, so the
printer flushes a lone line at once and writes notes after the lines before them."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Generator

import pytest
from kubernetes import client

from flyte_apps.cli.logs import LineStyle, print_events
from flyte_apps.core.logparse import LogLine
from flyte_apps.kube.logs import CAUGHT_UP, CaughtUp, LogBatch, Notice, ReplicaLines, read_app
from tests.fakes.kube_api import FakeKubeApi
from tests.kube.test_logs import APP, FOLLOW, NS, at, drive, log_requests, serving, wait_until
from tests.kube.test_logs import watchdog as watchdog


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
