"""Log lines as upstream's TailLogs parses them, and resuming a broken stream without gaps."""

from __future__ import annotations

import pytest

from flyte_apps.core.logparse import (
    MAX_LINE_BYTES,
    LineBuffer,
    LogLine,
    ResumeCursor,
    cut_marker,
    parse_line,
    parse_timestamp,
)


def stamped(second: int, nanos: int = 0, message: str = "") -> LogLine:
    return LogLine(message=message, timestamp=f"2024-01-15T10:30:{second:02d}.{nanos:09d}Z")


# --- upstream vectors (reference (g) "Log line parsing") ----------------------------------------


def test_timestamped_line_keeps_nanoseconds_and_message() -> None:
    line = parse_line("2024-01-15T10:30:00.123456789Z Hello, world!")
    assert line == LogLine("Hello, world!", "2024-01-15T10:30:00.123456789Z")


def test_plain_line_is_all_message_without_timestamp() -> None:
    assert parse_line("just a plain log message") == LogLine("just a plain log message")


def test_first_word_that_is_not_a_timestamp_leaves_the_line_whole() -> None:
    assert parse_line("not-a-timestamp some message") == LogLine("not-a-timestamp some message")


def test_timestamp_followed_by_a_space_only_is_an_empty_message() -> None:
    assert parse_line("2024-01-15T10:30:00Z ") == LogLine("", "2024-01-15T10:30:00.000000000Z")


# --- more of Go's RFC3339Nano parsing ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-15T10:30:00.5Z", "2024-01-15T10:30:00.500000000Z"),
        ("2024-01-15T10:30:00.000000001Z", "2024-01-15T10:30:00.000000001Z"),
        # Go reads any number of fraction digits and drops those past the ninth (no rounding).
        ("2024-01-15T10:30:00.1234567891Z", "2024-01-15T10:30:00.123456789Z"),
        ("2024-01-15T12:30:00+02:00", "2024-01-15T10:30:00.000000000Z"),
        ("2024-01-15T05:00:00.25-05:30", "2024-01-15T10:30:00.250000000Z"),
        ("2024-01-01T00:30:00+01:00", "2023-12-31T23:30:00.000000000Z"),
        ("2024-02-29T00:00:00Z", "2024-02-29T00:00:00.000000000Z"),
        ("1969-12-31T23:59:59.5Z", "1969-12-31T23:59:59.500000000Z"),
        ("0999-01-01T00:00:00Z", "0999-01-01T00:00:00.000000000Z"),
    ],
)
def test_rfc3339_forms_parse_to_the_kubelets_form_of_the_same_instant(text: str, expected: str) -> None:
    assert parse_timestamp(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "2024-01-15 10:30:00Z",  # space instead of T
        "2024-01-15T10:30:00",  # no zone
        "2024-01-15T10:30:00z",  # lower-case zone
        "2024-01-15t10:30:00Z",
        "2024-01-15T10:30:00.Z",  # dot without digits
        "2024-01-15T10:30Z",
        "2023-02-29T00:00:00Z",  # not a leap year
        "2024-13-01T00:00:00Z",
        "2024-01-15T24:00:00Z",
        "2024-01-15T10:60:00Z",
        "2024-01-15T10:30:60Z",  # Go refuses leap seconds
        "2024-01-15T10:30:00+0200",
        "2024-01-15T10:30:00+24:00",
        "2024-01-15T10:30:00+05:60",
        "0001-01-01T00:00:00+01:00",  # before the year 1 in UTC
        "\uff12\uff10\uff12\uff14-01-15T10:30:00Z",  # fullwidth digits: \d would take them
        "2024-01-15T10:30:00Z\n",
    ],
)
def test_near_misses_are_not_timestamps(text: str) -> None:
    assert parse_timestamp(text) is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (" 2024-01-15T10:30:00Z message", LogLine(" 2024-01-15T10:30:00Z message")),  # space first
        ("2024-01-15T10:30:00Z", LogLine("2024-01-15T10:30:00Z")),  # no space: no split
        ("", LogLine("")),
        ("2024-01-15T10:30:00Z  two spaces", LogLine(" two spaces", "2024-01-15T10:30:00.000000000Z")),
    ],
)
def test_only_the_text_before_the_first_space_can_be_the_timestamp(line: str, expected: LogLine) -> None:
    assert parse_line(line) == expected


def test_timestamps_in_the_kubelets_form_sort_as_the_instants_they_name() -> None:
    texts = ["2024-01-15T12:30:00.5+02:00", "2024-01-15T10:30:00.000000001Z", "1999-12-31T23:59:59Z"]
    stamps = [parse_timestamp(text) or "" for text in texts]
    assert sorted(stamps) == [stamps[2], stamps[1], stamps[0]]
    assert stamps[0] == "2024-01-15T10:30:00.500000000Z"


def test_since_time_truncates_to_the_whole_second() -> None:
    cursor = ResumeCursor()
    assert cursor.admit(LogLine("x", "2024-01-15T10:30:07.999999999Z"))
    assert cursor.since_time() == "2024-01-15T10:30:07Z"


# --- cutting a stream into lines ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("line-1\nline-2\nline-3\n", ["line-1", "line-2", "line-3"]),
        ("a\r\nb\r\r\n", ["a", "b"]),  # every trailing \r goes
        ("a\n\nb\n", ["a", "", "b"]),  # empty lines are lines
        ("no newline at the end", ["no newline at the end"]),
        ("a\rb\n", ["a\rb"]),  # only trailing \r is trimmed
        ("", []),
    ],
)
def test_lines_are_cut_like_upstream(text: str, lines: list[str]) -> None:
    buffer = LineBuffer()
    assert buffer.feed(text.encode()) + buffer.finish() == lines


def test_line_buffer_joins_chunks_and_multibyte_characters_split_between_them() -> None:
    data = "héllo wörld\nsecond\n".encode()
    buffer = LineBuffer()
    out: list[str] = []
    for index in range(len(data)):
        out += buffer.feed(data[index : index + 1])
    assert out == ["héllo wörld", "second"]
    assert buffer.finish() == []


def test_line_buffer_keeps_the_unterminated_last_line_at_a_clean_end() -> None:
    clean = LineBuffer()
    assert clean.feed(b"one\ntw") == ["one"]
    assert clean.finish() == ["tw"]
    assert clean.finish() == []


def test_invalid_utf8_becomes_replacement_characters() -> None:
    buffer = LineBuffer()
    assert buffer.feed(b"bad \xff byte\n") == ["bad \ufffd byte"]


# --- resuming ----------------------------------------------------------------------------------


def admitted(cursor: ResumeCursor, lines: list[LogLine]) -> list[str]:
    return [line.message for line in lines if cursor.admit(line)]


def test_a_fresh_stream_admits_everything() -> None:
    cursor = ResumeCursor()
    assert not cursor.started
    assert cursor.since_time() is None
    lines = [stamped(0, message="a"), stamped(0, message="b"), LogLine("untimed")]
    assert admitted(cursor, lines) == ["a", "b", "untimed"]
    assert cursor.started


def test_resume_asks_from_the_second_of_the_last_printed_line() -> None:
    cursor = ResumeCursor()
    admitted(cursor, [stamped(3, 750_000_000, "x")])
    assert cursor.since_time() == "2024-01-15T10:30:03Z"


def test_replay_drops_what_was_printed_and_keeps_what_was_not() -> None:
    cursor = ResumeCursor()
    first = [stamped(1, 100, "a"), stamped(1, 200, "b"), stamped(1, 300, "c")]
    assert admitted(cursor, first) == ["a", "b", "c"]
    cursor.reopen()
    replay = [stamped(1, 100, "a"), stamped(1, 200, "b"), stamped(1, 300, "c"), stamped(1, 400, "d")]
    assert admitted(cursor, replay) == ["d"]


def test_replay_skips_exactly_as_many_lines_as_were_printed_at_the_same_timestamp() -> None:
    cursor = ResumeCursor()
    burst = [stamped(2, 5, f"burst {i}") for i in range(4)]
    assert admitted(cursor, [stamped(1, 0, "before"), *burst[:2]]) == ["before", "burst 0", "burst 1"]
    cursor.reopen()
    assert admitted(cursor, [stamped(1, 0, "before"), *burst, stamped(3, 0, "after")]) == [
        "burst 2",
        "burst 3",
        "after",
    ]


def test_two_breaks_in_one_burst_still_print_each_line_once() -> None:
    cursor = ResumeCursor()
    burst = [stamped(2, 5, f"burst {i}") for i in range(5)]
    printed = admitted(cursor, burst[:1])
    cursor.reopen()
    printed += admitted(cursor, burst[:3])
    cursor.reopen()
    printed += admitted(cursor, burst)
    assert printed == [f"burst {i}" for i in range(5)]


def test_a_replay_that_ends_before_passing_the_last_line_resumes_the_skip_next_time() -> None:
    cursor = ResumeCursor()
    burst = [stamped(2, 5, f"burst {i}") for i in range(3)]
    assert admitted(cursor, burst) == ["burst 0", "burst 1", "burst 2"]
    cursor.reopen()
    assert admitted(cursor, burst[:2]) == []  # broke again inside the replay
    cursor.reopen()
    assert admitted(cursor, [*burst, stamped(2, 6, "new")]) == ["new"]


def test_a_live_stream_is_never_filtered_even_if_time_goes_back() -> None:
    cursor = ResumeCursor()
    lines = [stamped(5, message="late"), stamped(1, message="early"), stamped(5, message="late again")]
    assert admitted(cursor, lines) == ["late", "early", "late again"]
    assert cursor.last == stamped(5).timestamp  # the newest instant stays the resume point
    assert cursor.since_time() == "2024-01-15T10:30:05Z"


def test_untimed_lines_in_a_replay_are_kept_and_do_not_end_it() -> None:
    cursor = ResumeCursor()
    admitted(cursor, [stamped(1, message="a")])
    cursor.reopen()
    replay = [LogLine("untimed"), stamped(1, message="a"), stamped(2, message="b")]
    assert admitted(cursor, replay) == ["untimed", "b"]


def test_a_line_longer_than_the_bound_is_cut_with_a_marker_and_its_rest_dropped() -> None:
    buffer = LineBuffer(max_line=10)
    assert buffer.feed(b"short\n0123456789") == ["short"]
    assert buffer.feed(b"ABC") == ["0123456789" + cut_marker(10)]  # as soon as the bound is passed
    assert buffer.feed(b"DEF, still the same line") == []
    assert buffer.feed(b" ...\nnext\nlast") == ["next"]
    assert buffer.finish() == ["last"]


def test_a_long_line_inside_one_chunk_is_cut_like_one_that_spans_chunks() -> None:
    data = b"a\n" + b"x" * 25 + b"\nb\n"
    expected = ["a", "x" * 10 + cut_marker(10), "b"]
    assert LineBuffer(max_line=10).feed(data) == expected
    pieces = LineBuffer(max_line=10)
    assert [line for i in range(len(data)) for line in pieces.feed(data[i : i + 1])] == expected


def test_the_default_bound_is_a_mebibyte() -> None:
    buffer = LineBuffer()
    assert buffer.feed(b"y" * MAX_LINE_BYTES + b"\n") == ["y" * MAX_LINE_BYTES]
    cut = "z" * MAX_LINE_BYTES + cut_marker(MAX_LINE_BYTES)
    assert buffer.feed(b"z" * (MAX_LINE_BYTES + 1) + b"\n") == [cut]
    assert cut_marker(MAX_LINE_BYTES) == " [flyte-apps: line cut at 1.0 MiB]"


def test_the_year_0000_is_not_read_as_a_timestamp() -> None:
    # datetime holds years 1 to 9999; the kubelet, which stamps every line, writes the current year.
    assert parse_timestamp("0000-01-01T00:00:00Z") is None
    assert parse_line("0000-01-01T00:00:00Z message") == LogLine("0000-01-01T00:00:00Z message")
