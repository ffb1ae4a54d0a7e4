"""``logs -o json`` writes, for every line, exactly ``json.dumps({"replica", "timestamp", "message"},
ensure_ascii=False)``, whatever the message holds (issue "Correct before fast": a line ending in
``", `` broke the batch encoder and the next record). Property-based over arbitrary strings, with the
vectors that broke it before."""

from __future__ import annotations

import json
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from flyte_apps.cli.logs import LineRenderer, LineStyle, OutputFormat
from flyte_apps.core.logparse import LogLine, LogTime, parse_line, parse_lines
from flyte_apps.kube.logs import ReplicaLines

JSON_STYLE = LineStyle(output=OutputFormat.JSON)
PROPERTY = settings(max_examples=300, derandomize=True, database=None, deadline=None)
"""Reproducible (derandomized, no example database on disk) and untimed."""
REPLICA = "web-00001-deployment-7d9c-x2x4z"
NANOS = st.integers(min_value=0, max_value=253_402_300_799 * 10**9)  # up to 9999-12-31T23:59:59Z
BROKE_BEFORE = ['ends in ", ', '", "', 'a", "b', "\\", '"', '", ', "\u2028", "\x00", "ü"]


def expected(replica: str, line: LogLine) -> str:
    stamp = None if line.timestamp is None else line.timestamp.rfc3339()
    return json.dumps({"replica": replica, "timestamp": stamp, "message": line.message}, ensure_ascii=False)


def records(replica: str, lines: Sequence[LogLine]) -> list[str]:
    text = LineRenderer(JSON_STYLE).render(ReplicaLines(replica, lines))
    assert text.endswith("\n") or not lines
    return text.split("\n")[:-1] if lines else []


@PROPERTY
@given(st.text(), st.lists(st.tuples(st.text(), st.none() | NANOS), max_size=8))
def test_every_record_is_json_dumps_of_the_line(
    replica: str, given_lines: list[tuple[str, int | None]]
) -> None:
    lines = [LogLine(message, None if nanos is None else LogTime(nanos)) for message, nanos in given_lines]
    got = records(replica, lines)
    assert got == [expected(replica, line) for line in lines]
    for record, line in zip(got, lines, strict=True):
        assert list(json.loads(record)) == ["replica", "timestamp", "message"]
        assert json.loads(record)["message"] == line.message


@PROPERTY
@given(NANOS, st.text())
def test_a_kubelet_line_round_trips_through_parse_and_json(nanos: int, message: str) -> None:
    stamp = LogTime(nanos)
    line = parse_line(f"{stamp.rfc3339()} {message}")
    assert line == LogLine(message, stamp)
    assert records(REPLICA, [line]) == [expected(REPLICA, line)]


def test_the_lines_that_broke_the_batch_encoder_are_each_one_valid_record() -> None:
    # As the log reader hands them over: a chunk of kubelet lines, parsed together.
    text = "\n".join(f"2026-01-01T00:00:00.000000001Z {message}" for message in BROKE_BEFORE)
    lines = parse_lines(text)
    got = records(REPLICA, lines)
    assert got == [expected(REPLICA, line) for line in lines]
    assert [json.loads(record)["message"] for record in got] == BROKE_BEFORE
