"""Logs read in batches: batches keep each replica's order, a follower says when it has caught up (so a
printer flushes a lone line at once), the CLI formats a batch as it formats each line, and a stream
is cut into lines and read as urllib3 reads it."""

from __future__ import annotations

import http.client
import io
import itertools
import json
import random
import threading
from collections.abc import Generator, Iterator, Sequence
from typing import Any, cast

import pytest
import urllib3
from kubernetes import client

from flyte_apps.cli.logs import LineRenderer, LineStyle, OutputFormat, print_events, render_line
from flyte_apps.core.logparse import LineBuffer, LogLine, LogTime
from flyte_apps.core.printable import printable
from flyte_apps.kube.logs import (
    CAUGHT_UP,
    CaughtUp,
    LogBatch,
    Notice,
    ReplicaLine,
    ReplicaLines,
    read_app,
)
from flyte_apps.kube.logs import _chunks as logs_chunks
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
    """How ``logs`` formats one line: one ``json.dumps`` (or f-string) per line; the text form shows
    control characters as escapes (``flyte_apps.core.printable``)."""
    line_stamp = event.line.timestamp
    if style.output is OutputFormat.JSON:
        record = {
            "replica": event.replica,
            "timestamp": line_stamp.rfc3339() if line_stamp is not None else None,
            "message": event.line.message,
        }
        return json.dumps(record, ensure_ascii=False)
    text = printable(event.line.message, keep_colour=True)
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


# --- cutting a stream into lines --------------------------------------------------------------


def old_feed(pending: bytearray, chunk: bytes) -> list[str]:
    """``LineBuffer.feed`` before lines were decoded in bulk: a decode and a trim per line."""
    pending.extend(chunk)
    end = pending.rfind(b"\n")
    if end < 0:
        return []
    complete = bytes(pending[:end])
    del pending[: end + 1]
    return [part.decode("utf-8", "replace").rstrip("\r\n") for part in complete.split(b"\n")]


def test_a_chunk_is_cut_into_the_same_lines_as_one_line_at_a_time() -> None:
    rng = random.Random(18)
    alphabet = [
        b"a",
        b" ",
        b"\n",
        b"\r",
        b"\r\n",
        "é".encode(),
        "€".encode(),
        "😀".encode(),
        b"\xff",
        b"\xe2\x82",
    ]
    for _ in range(300):
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randrange(60)))
        cuts = sorted(rng.randrange(len(data) + 1) for _ in range(rng.randrange(4)))
        pieces = [data[a:b] for a, b in itertools.pairwise([0, *cuts, len(data)])]
        buffer, pending = LineBuffer(), bytearray()
        for piece in pieces:
            assert buffer.feed(piece) == old_feed(pending, piece), data
        assert buffer.finish() == ([pending.decode("utf-8", "replace").rstrip("\r\n")] if pending else [])


class Trickle(io.RawIOBase):
    """A socket that delivers ``data`` a few bytes per read (``sizes`` cycled)."""

    def __init__(self, data: bytes, sizes: Sequence[int]) -> None:
        self._data = data
        self._sizes = itertools.cycle(sizes)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = min(len(buffer), next(self._sizes), len(self._data))
        buffer[:size], self._data = self._data[:size], self._data[size:]
        return size


class TrickleSocket:
    def __init__(self, data: bytes, sizes: Sequence[int]) -> None:
        self._data, self._sizes = data, sizes

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(Trickle(self._data, self._sizes), buffer_size=16)


def chunked_response(body: bytes, sizes: Sequence[int]) -> urllib3.HTTPResponse:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n"
    original = http.client.HTTPResponse(cast(Any, TrickleSocket(head + body, sizes)), method="GET")
    original.begin()
    return urllib3.HTTPResponse(
        body=original,
        headers=dict(original.msg.items()),
        status=original.status,
        preload_content=False,
        original_response=original,
    )


def read_body(chunks: Iterator[bytes]) -> tuple[bytes, str | None]:
    data = bytearray()
    try:
        for chunk in chunks:
            data.extend(chunk)
    except Exception as exc:
        return bytes(data), f"{type(exc).__name__}: {exc}"
    return bytes(data), None


def chunk(data: bytes, size_line: bytes | None = None) -> bytes:
    return (size_line if size_line is not None else b"%x\r\n" % len(data)) + data + b"\r\n"


BODIES = {
    "lines": chunk(b"one\n") + chunk(b"two\n") + chunk(b"three\n") + b"0\r\n\r\n",
    "empty": b"0\r\n\r\n",
    "big chunk": chunk(b"x" * 5000 + b"\n") + chunk(b"y\n") + b"0\r\n\r\n",
    "extension and padding": chunk(b"ab\n", b"3;name=value\r\n") + chunk(b"cd\n", b"  3 \r\n") + b"0\r\n\r\n",
    "upper case and many digits": chunk(b"z" * 26, b"1A\r\n") + chunk(b"q", b"000000001\r\n") + b"0\r\n\r\n",
    "bare LF size line": chunk(b"ab\n", b"3\n") + b"0\n\n",
    "trailers": chunk(b"ab\n") + b"0\r\nX-Trailer: 1\r\nY: 2\r\n\r\nignored",
    "no final CRLF": chunk(b"ab\n") + b"0\r\n",
    "no terminal chunk": chunk(b"ab\n") + chunk(b"cd\n"),
    "cut in a size line": chunk(b"ab\n") + b"1",
    "cut in a chunk": chunk(b"ab\n") + b"10\r\nabc",
    "cut before a CRLF": chunk(b"ab\n") + b"3\r\nabc",
    "cut in a CRLF": chunk(b"ab\n") + b"3\r\nabc\r",
    "not a size": chunk(b"ab\n") + b"zz\r\nab\r\n0\r\n\r\n",
    "no size": chunk(b"ab\n") + b";ext\r\n",
    "size line too long": chunk(b"ab\n") + b"1" * 70_000,
    "size line just too long": b"0" * 65_535 + b"1\n",
    "size line at the limit": b"0" * 65_533 + b"2\r\nab\r\n0\r\n\r\n",
    "trailer too long": chunk(b"ab\n") + b"0\r\n" + b"t" * 70_000,
    "size -1": chunk(b"ab\n") + b"-1\r\nthe rest",
    "size -5": chunk(b"ab\n") + b"-5\r\nthe rest",
    "wrong CRLF": b"3\r\nabcXY4\r\ndefgZZ0\r\n\r\n",
}


@pytest.mark.parametrize("sizes", [(1,), (7, 1, 3), (16,), (100_000,)], ids=str)
@pytest.mark.parametrize("name", list(BODIES))
def test_the_body_is_read_as_urllib3_reads_it_chunk_by_chunk(name: str, sizes: tuple[int, ...]) -> None:
    expected = read_body(chunked_response(BODIES[name], sizes).read_chunked())
    assert read_body(logs_chunks(chunked_response(BODIES[name], sizes))) == expected


def test_random_bodies_are_read_as_urllib3_reads_them() -> None:
    rng = random.Random(42)
    for _ in range(300):
        parts = [chunk(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))) for _ in range(5)]
        body = b"".join(parts) + b"0\r\n\r\n"
        body = body[: rng.randrange(len(body) + 1)] if rng.random() < 0.5 else body
        sizes = [rng.randrange(1, 50) for _ in range(3)]
        expected = read_body(chunked_response(body, sizes).read_chunked())
        assert read_body(logs_chunks(chunked_response(body, sizes))) == expected, body
