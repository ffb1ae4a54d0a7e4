"""Pod log lines as Flyte's log tailing reads them, and how a broken stream resumes without gaps.

Pure: no Kubernetes or Pulumi here. The API server sends log bytes; :class:`LineBuffer` cuts them
into lines exactly as upstream does (split on ``\\n``, trailing ``\\r``/``\\n`` trimmed, a final
unterminated line kept at the end of the stream), :func:`parse_line` splits off the kubelet's
timestamp (reference (c)19), and :class:`ResumeCursor` decides which lines of a re-opened stream
were already printed.

Timestamps keep the kubelet's nanoseconds: :class:`LogTime` is an integer count of nanoseconds
since the Unix epoch, because ``datetime`` stops at microseconds and two lines a few hundred
nanoseconds apart must stay distinct (and ordered) for de-duplication to be exact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from flyte_apps.core.durations import NANOS_PER_SECOND

_SECONDS_PER_DAY: Final = 86_400
_FRACTION_DIGITS: Final = 9

# RFC 3339 as Go's time.Parse(time.RFC3339Nano, ...) reads it: a fraction of any length (digits
# past the ninth are dropped, not rounded), "Z" or a numeric offset. ASCII digits only: Python's
# \d would also accept other scripts' digits.
_RFC3339: Final = re.compile(
    r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})"
    r"T(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
    r"(?:\.(?P<fraction>[0-9]+))?"
    r"(?:Z|(?P<sign>[+-])(?P<offset_hour>[0-9]{2}):(?P<offset_minute>[0-9]{2}))"
)


# --- timestamps ----------------------------------------------------------------------------------


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if _is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).

    Used instead of ``datetime`` so that every year RFC 3339 can write (0000-9999) works.
    """
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Inverse of :func:`_days_from_civil`: (year, month, day)."""
    days += 719_468
    era = days // 146_097
    day_of_era = days - era * 146_097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + (3 if shifted_month < 10 else -9)
    return year_of_era + era * 400 + (month <= 2), month, day


@dataclass(frozen=True, order=True)
class LogTime:
    """An instant with nanosecond precision: nanoseconds since 1970-01-01T00:00:00Z."""

    unix_nanos: int

    @classmethod
    def parse(cls, text: str) -> LogTime | None:
        """The instant ``text`` writes in RFC 3339 (fraction optional), or None if it is not one."""
        match = _RFC3339.fullmatch(text)
        if match is None:
            return None
        year, month, day = (int(match[key]) for key in ("year", "month", "day"))
        hour, minute, second = (int(match[key]) for key in ("hour", "minute", "second"))
        if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)):
            return None
        if hour > 23 or minute > 59 or second > 59:
            return None
        offset = 0
        if match["sign"] is not None:
            offset_hour, offset_minute = int(match["offset_hour"]), int(match["offset_minute"])
            if offset_hour > 23 or offset_minute > 59:
                return None
            offset = (offset_hour * 3600 + offset_minute * 60) * (1 if match["sign"] == "+" else -1)
        fraction = (match["fraction"] or "")[:_FRACTION_DIGITS].ljust(_FRACTION_DIGITS, "0")
        seconds = _days_from_civil(year, month, day) * _SECONDS_PER_DAY + hour * 3600 + minute * 60 + second
        return cls((seconds - offset) * NANOS_PER_SECOND + int(fraction))

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
        seconds = self.unix_nanos // NANOS_PER_SECOND
        days, second_of_day = divmod(seconds, _SECONDS_PER_DAY)
        year, month, day = _civil_from_days(days)
        hour, rest = divmod(second_of_day, 3600)
        minute, second = divmod(rest, 60)
        return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"

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


class LineBuffer:
    """Cuts a byte stream into lines as it arrives; multi-byte characters may span chunks.

    Bytes that are not UTF-8 become U+FFFD rather than failing the stream: a log is for reading.
    """

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> list[str]:
        """Every line completed by ``chunk``, oldest first."""
        self._pending.extend(chunk)
        end = self._pending.rfind(b"\n")
        if end < 0:
            return []
        complete = bytes(self._pending[:end])
        del self._pending[: end + 1]
        return [trim_line(part.decode("utf-8", "replace")) for part in complete.split(b"\n")]

    def finish(self) -> list[str]:
        """At a clean end of stream: the last line if it had no newline (upstream keeps it)."""
        if not self._pending:
            return []
        last = trim_line(self._pending.decode("utf-8", "replace"))
        self._pending.clear()
        return [last]

    def discard(self) -> None:
        """After a broken stream: forget a partial line; the resumed stream sends it whole."""
        self._pending.clear()


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
