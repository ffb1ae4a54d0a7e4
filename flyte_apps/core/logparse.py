"""Pod log lines as Flyte's log tailing reads them, and how a broken stream resumes without gaps.

Pure: no Kubernetes or Pulumi here. The API server sends log bytes; :class:`LineBuffer` cuts them
into lines exactly as upstream does (split on ``\\n``, trailing ``\\r``/``\\n`` trimmed, a final
unterminated line kept at the end of the stream), :func:`parse_line` splits off the kubelet's
timestamp (as upstream's ``parseLogLine`` does), and :class:`ResumeCursor` decides which lines of a
re-opened stream were already printed.

Timestamps keep the kubelet's nanoseconds: :class:`LogTime` is an integer count of nanoseconds
since the Unix epoch, because ``datetime`` stops at microseconds and two lines a few hundred
nanoseconds apart must stay distinct (and ordered) for de-duplication to be exact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from flyte_apps.core.bounds import size_text
from flyte_apps.core.durations import NANOS_PER_SECOND

_SECONDS_PER_DAY: Final = 86_400
_FRACTION_DIGITS: Final = 9
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

# RFC 3339 as Go's time.Parse(time.RFC3339Nano, ...) reads it: a fraction of any length (digits
# past the ninth are dropped, not rounded), "Z" or a numeric offset. ASCII digits only: Python's
# \d would also accept other scripts' digits.
_RFC3339: Final = re.compile(
    r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})"
    r"T(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
    r"(?:\.(?P<fraction>[0-9]+))?"
    r"(?:Z|(?P<sign>[+-])(?P<offset_hour>[0-9]{2}):(?P<offset_minute>[0-9]{2}))"
)


_TRAILING_CR: Final = re.compile("\r+$", re.MULTILINE)


# --- timestamps ----------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class LogTime:
    """An instant with nanosecond precision: nanoseconds since 1970-01-01T00:00:00Z."""

    unix_nanos: int

    @classmethod
    def parse(cls, text: str) -> LogTime | None:
        """The instant ``text`` writes in RFC 3339 (fraction optional), or None if it is not one (a day
        or time of day that does not exist; the year 0000, which ``datetime`` cannot hold)."""
        match = _RFC3339.fullmatch(text)
        if match is None:
            return None
        year, month, day, hour, minute, second = (
            int(match[key]) for key in ("year", "month", "day", "hour", "minute", "second")
        )
        offset = timedelta()
        if match["sign"] is not None:
            hours, minutes = int(match["offset_hour"]), int(match["offset_minute"])
            if hours > 23 or minutes > 59:
                return None
            offset = timedelta(hours=hours, minutes=minutes) * (1 if match["sign"] == "+" else -1)
        try:
            moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC) - offset
        except (ValueError, OverflowError):
            return None
        since = moment - _EPOCH
        fraction = (match["fraction"] or "")[:_FRACTION_DIGITS].ljust(_FRACTION_DIGITS, "0")
        return cls((since.days * _SECONDS_PER_DAY + since.seconds) * NANOS_PER_SECOND + int(fraction))

    @property
    def whole_seconds(self) -> LogTime:
        """This instant truncated to its second (the precision of the API's ``sinceTime``)."""
        return LogTime(self.unix_nanos - self.unix_nanos % NANOS_PER_SECOND)

    def rfc3339(self) -> str:
        """UTC with all nine fractional digits, as the kubelet writes it (columns stay aligned)."""
        return f"{self._date_time()}.{self.unix_nanos % NANOS_PER_SECOND:09d}Z"

    def rfc3339_seconds(self) -> str:
        """UTC, whole seconds (fraction dropped): the form ``sinceTime`` travels in."""
        return f"{self._date_time()}Z"

    def _date_time(self) -> str:
        moment = _EPOCH + timedelta(seconds=self.unix_nanos // NANOS_PER_SECOND)
        return (
            f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
            f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
        )

    def __str__(self) -> str:
        return self.rfc3339()


# --- lines ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogLine:
    """One log line: the message, and the kubelet's timestamp when the line carried one."""

    message: str
    timestamp: LogTime | None = None


def parse_line(line: str) -> LogLine:
    """Split ``"<RFC 3339> <message>"``; a line whose first word is not a timestamp is all message.

    Upstream's ``parseLogLine``: the text before the FIRST space must parse, and a line that starts
    with a space or has none keeps no timestamp. ``"2024-01-15T10:30:00Z "`` is an empty message.
    """
    head, space, rest = line.partition(" ")
    if space and head:
        timestamp = LogTime.parse(head)
        if timestamp is not None:
            return LogLine(message=rest, timestamp=timestamp)
    return LogLine(message=line)


def trim_line(raw: str) -> str:
    """Drop every trailing ``\\r`` and ``\\n`` (Go's ``strings.TrimRight(line, "\\r\\n")``)."""
    return raw.rstrip("\r\n")


def split_lines(text: str) -> list[str]:
    """A whole log body as lines: split on ``\\n``, trimmed; no phantom line after a final newline."""
    buffer = LineBuffer()
    return buffer.feed(text.encode()) + buffer.finish()


MAX_LINE_BYTES: Final = 2**20
"""Bytes of one log line kept; the rest of a longer line is dropped (a stream with no newline must
not fill memory) and the kept part ends with :func:`cut_marker`."""


def cut_marker(max_line: int) -> str:
    """What ends a log line cut at ``max_line`` bytes: `` [flyte-apps: line cut at 1.0 MiB]``."""
    return f" [flyte-apps: line cut at {size_text(max_line)}]"


class LineBuffer:
    """Cuts a byte stream into lines as it arrives; multi-byte characters may span chunks.

    Bytes that are not UTF-8 become U+FFFD rather than failing the stream: a log is for reading. A
    line longer than ``max_line`` bytes is cut: its first ``max_line`` bytes come as a line ending in
    :func:`cut_marker` as soon as they have arrived, and the rest up to its newline is dropped.
    """

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._pending = bytearray()
        self._max = max_line
        self._marker = cut_marker(max_line).encode()
        self._skipping = False
        """The line being read was cut: drop its bytes up to the next newline."""

    def feed(self, chunk: bytes) -> list[str]:
        """Every line completed by ``chunk``, oldest first."""
        text = self.feed_text(chunk)
        return [] if text is None else text.split("\n")

    def feed_text(self, chunk: bytes) -> str | None:
        """The lines completed by ``chunk`` as one text, joined by ``\\n`` (None if it completes none):
        what :meth:`feed` returns, without a string per line. Decoded and trimmed as a whole, which is
        the same as line by line: a ``\\n`` byte ends any UTF-8 sequence left open before it."""
        if self._skipping:
            start = chunk.find(b"\n")
            if start < 0:
                return None
            self._skipping = False
            chunk = chunk[start + 1 :]
        end = chunk.rfind(b"\n")
        if end < 0:
            self._pending.extend(chunk)
            return self._cut_pending()
        if self._pending:
            self._pending.extend(memoryview(chunk)[:end])
            complete = bytes(self._pending)
            self._pending.clear()
        else:
            complete = chunk[:end]
        self._pending.extend(memoryview(chunk)[end + 1 :])
        if len(complete) > self._max:
            complete = b"\n".join(self._cut(line) for line in complete.split(b"\n"))
        text = _trimmed(complete.decode("utf-8", "replace"))
        cut = self._cut_pending()
        return text if cut is None else f"{text}\n{cut}"

    def _cut(self, line: bytes) -> bytes:
        return line if len(line) <= self._max else line[: self._max] + self._marker

    def _cut_pending(self) -> str | None:
        """The unfinished line, cut, once it is longer than the bound (then its rest is skipped)."""
        if len(self._pending) <= self._max:
            return None
        line = self._cut(bytes(self._pending)).decode("utf-8", "replace")
        self._pending.clear()
        self._skipping = True
        return line

    def finish(self) -> list[str]:
        """At a clean end of stream: the last line if it had no newline (upstream keeps it)."""
        text = self.finish_text()
        return [] if text is None else [text]

    def finish_text(self) -> str | None:
        """:meth:`finish`'s line, or None."""
        self._skipping = False
        if not self._pending:
            return None
        last = trim_line(self._pending.decode("utf-8", "replace"))
        self._pending.clear()
        return last

    def discard(self) -> None:
        """After a broken stream: forget a partial line; the resumed stream sends it whole."""
        self._pending.clear()
        self._skipping = False


def _trimmed(text: str) -> str:
    """Every line of ``text`` (joined by ``\\n``) trimmed as :func:`trim_line` trims it."""
    return _TRAILING_CR.sub("", text) if "\r" in text else text


def parse_lines(text: str) -> list[LogLine]:
    """The lines of ``text`` (joined by ``\\n``, as :meth:`LineBuffer.feed_text` returns them), each
    read by :func:`parse_line`."""
    return [parse_line(line) for line in text.split("\n")]


# --- resuming ------------------------------------------------------------------------------------


class ResumeCursor:
    """Which lines of one container's log were printed, so a re-opened stream neither repeats nor
    skips any.

    The API's ``sinceTime`` has whole-second precision, so a re-opened stream starts at the second
    of the last printed line and replays lines already printed. While replaying, lines older than
    the last printed one are dropped, and of the lines sharing its exact timestamp (a burst can
    share one), as many are dropped as were printed; the first line past those ends the replay.
    Outside a replay every line is admitted: the cursor never hides lines of a live stream.
    """

    def __init__(self) -> None:
        self._last: LogTime | None = None
        self._printed_at_last = 0
        self._to_skip_at_last = 0
        self._replaying = False
        self._admitted = 0

    @property
    def started(self) -> bool:
        """True once a line was admitted (a re-open then resumes instead of tailing again)."""
        return self._admitted > 0

    @property
    def last(self) -> LogTime | None:
        """Timestamp of the newest admitted line that had one."""
        return self._last

    def since_time(self) -> str | None:
        """``sinceTime`` for a re-opened stream: the last printed timestamp, truncated to seconds."""
        return self._last.rfc3339_seconds() if self._last is not None else None

    def reopen(self) -> None:
        """A new stream starts from :meth:`since_time`: replay until past the last printed line."""
        self._replaying = self._last is not None
        self._to_skip_at_last = self._printed_at_last

    def admit(self, line: LogLine) -> bool:
        """True if ``line`` is new and must be printed; records it as printed."""
        stamp = line.timestamp
        if stamp is not None and self._replaying and self._repeats(stamp):
            return False
        self._admitted += 1
        if stamp is None:
            return True  # cannot be placed, so cannot be a repeat: kept, and a replay goes on
        self._replaying = False
        # The kubelet stamps a container's lines in order; should one ever go back in time, the
        # newest instant stays the resume point (a replay must not repeat what follows it).
        if self._last is None or stamp > self._last:
            self._last, self._printed_at_last = stamp, 1
        elif stamp == self._last:
            self._printed_at_last += 1
        return True

    def admit_all(self, lines: Sequence[LogLine]) -> list[LogLine]:
        """The lines of ``lines`` that :meth:`admit` admits, in order, recorded as printed."""
        admit = self.admit
        return [line for line in lines if admit(line)]

    def _repeats(self, stamp: LogTime) -> bool:
        """During a replay: is a line stamped ``stamp`` one already printed?"""
        if self._last is None or stamp > self._last:
            return False
        if stamp < self._last:
            return True
        if self._to_skip_at_last > 0:
            self._to_skip_at_last -= 1
            return True
        return False
