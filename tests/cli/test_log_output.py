"""What ``logs`` writes per line. ``-o json``: exactly ``json.dumps({"replica", "timestamp", "message"},
ensure_ascii=False)``, whatever the message holds (issue "Correct before fast": a line ending in
``", `` broke the batch encoder and the next record), property-based over arbitrary strings, with the
vectors that broke it before. Text: the prefix, the timestamp, escaped control characters."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flyte_apps.cli.logs import LineStyle, json_lines, text_lines
from flyte_apps.core.logparse import LogLine, parse_line
from flyte_apps.kube.logs import ReplicaLines

PROPERTY = settings(max_examples=300, derandomize=True, database=None, deadline=None)
"""Reproducible (derandomized, no example database on disk) and untimed."""
REPLICA = "web-00001-deployment-7d9c-x2x4z"
STAMPS = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)).map(
    lambda moment: (
        f"{moment.replace(microsecond=0).isoformat()}.{moment.microsecond:06d}{moment.microsecond % 7}00Z"
    )
)
"""Timestamps as the kubelet writes them (UTC, nine fraction digits), from the year 1 to 9999."""
BROKE_BEFORE = ['ends in ", ', '", "', 'a", "b', "\\", '"', '", ', "\u2028", "\x00", "ü"]


def expected(replica: str, line: LogLine) -> str:
    record = {"replica": replica, "timestamp": line.timestamp, "message": line.message}
    return json.dumps(record, ensure_ascii=False)


def records(replica: str, lines: Sequence[LogLine]) -> list[str]:
    text = json_lines(ReplicaLines(replica, lines), LineStyle())
    assert text.endswith("\n") or not lines
    return text.split("\n")[:-1] if lines else []


@PROPERTY
@given(st.text(), st.lists(st.tuples(st.text(), st.none() | STAMPS), max_size=8))
def test_every_record_is_json_dumps_of_the_line(
    replica: str, given_lines: list[tuple[str, str | None]]
) -> None:
    lines = [LogLine(message, stamp) for message, stamp in given_lines]
    got = records(replica, lines)
    assert got == [expected(replica, line) for line in lines]
    for record, line in zip(got, lines, strict=True):
        assert list(json.loads(record)) == ["replica", "timestamp", "message"]
        assert json.loads(record)["message"] == line.message


@PROPERTY
@given(STAMPS, st.text())
def test_a_kubelet_line_round_trips_through_parse_and_json(stamp: str, message: str) -> None:
    line = parse_line(f"{stamp} {message}")
    assert line == LogLine(message, stamp)
    assert records(REPLICA, [line]) == [expected(REPLICA, line)]


def test_the_lines_that_broke_the_batch_encoder_are_each_one_valid_record() -> None:
    # As the log reader hands them over: a chunk of kubelet lines, parsed together.
    text = "\n".join(f"2026-01-01T00:00:00.000000001Z {message}" for message in BROKE_BEFORE)
    lines = [parse_line(line) for line in text.split("\n")]
    got = records(REPLICA, lines)
    assert got == [expected(REPLICA, line) for line in lines]
    assert [json.loads(record)["message"] for record in got] == BROKE_BEFORE


BATCH = ReplicaLines(
    "app-00001-deployment-1",
    [LogLine("say \x1b[1mhi\x1b[0m\x01", "2024-01-01T00:00:03.500000000Z"), LogLine("no stamp")],
)


@pytest.mark.parametrize(
    ("style", "text"),
    [
        (
            LineStyle(),
            "app-00001-deployment-1 | say \x1b[1mhi\x1b[0m\\x01\napp-00001-deployment-1 | no stamp\n",
        ),
        (LineStyle(prefix=False), "say \x1b[1mhi\x1b[0m\\x01\nno stamp\n"),
        (
            LineStyle(prefix=False, timestamps=True),
            "2024-01-01T00:00:03.500000000Z say \x1b[1mhi\x1b[0m\\x01\nno stamp\n",
        ),
    ],
)
def test_text_lines_have_prefix_and_timestamp_as_asked_and_control_characters_escaped(
    style: LineStyle, text: str
) -> None:
    assert text_lines(BATCH, style) == text
