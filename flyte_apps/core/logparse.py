"""Pod log lines as Flyte's log tailing reads them, and how a broken stream resumes without gaps.

Pure. :class:`LineBuffer` cuts a stream's bytes into lines as upstream does (split on ``\\n``,
trailing ``\\r`` trimmed, a final unterminated line kept), :func:`parse_line` splits off the kubelet's
timestamp (upstream's ``parseLogLine``), :class:`ResumeCursor` decides which lines of a re-opened
stream were printed already. A timestamp is kept as the kubelet writes it, RFC 3339 in UTC with nine
fraction digits (:func:`parse_timestamp`): one width, so such strings sort as their instants, to the
nanosecond (``datetime`` stops at microseconds; de-duplication needs lines ns apart kept apart).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final, NamedTuple

from flyte_apps.core.bounds import size_text

_FRACTION_DIGITS: Final = 9
_SECONDS: Final = len("2024-01-15T10:30:00")
# RFC 3339 as Go's time.Parse(time.RFC3339Nano, ...) reads it: a fraction of any length (digits past
# the ninth are dropped, not rounded), "Z" or a numeric offset. ASCII digits only (``\d`` takes other
# scripts' digits). The calendar (days of a month, hours, leap years) is datetime's to check.
_RFC3339: Final = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.([0-9]+))?"
    r"(Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)

MAX_LINE_BYTES: Final = 2**20
"""Bytes of one log line kept; the rest of a longer line is dropped (a stream with no newline must
not fill memory) and the kept part ends with :func:`cut_marker`."""


def parse_timestamp(text: str) -> str | None:
    """The instant ``text`` writes in RFC 3339, as the kubelet writes it (UTC, nine fraction digits);
    None if it is none (a day or time that does not exist; the year 0000, which ``datetime`` lacks)."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    fraction, zone = match.group(1) or "", match.group(2)
    try:
        moment = datetime.fromisoformat(text[:_SECONDS] + zone)
        if zone == "Z" and len(fraction) == _FRACTION_DIGITS:
            return text  # the kubelet's own form
        moment = moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    digits = fraction[:_FRACTION_DIGITS].ljust(_FRACTION_DIGITS, "0")
    return f"{moment.replace(tzinfo=None).isoformat()}.{digits}Z"


class LogLine(NamedTuple):
    """One log line: the message, and the kubelet's timestamp (:func:`parse_timestamp`) if it had one."""

    message: str
    timestamp: str | None = None


def parse_line(line: str) -> LogLine:
    """Split ``"<RFC 3339> <message>"``; a line whose first word is not a timestamp is all message.

    Upstream's ``parseLogLine``: the text before the FIRST space must parse, and a line that starts
    with a space or has none keeps no timestamp. ``"2024-01-15T10:30:00Z "`` is an empty message.
    """
    head, space, rest = line.partition(" ")
    if space and head and (timestamp := parse_timestamp(head)) is not None:
        return LogLine(rest, timestamp)
    return LogLine(line)


def cut_marker(max_line: int) -> str:
    """What ends a log line cut at ``max_line`` bytes: `` [flyte-apps: line cut at 1.0 MiB]``."""
    return f" [flyte-apps: line cut at {size_text(max_line)}]"


class LineBuffer:
    """Cuts one stream's bytes into lines as they arrive (a character may span chunks; bytes that
    are not UTF-8 become U+FFFD). A line longer than ``max_line`` bytes comes cut, ending in
    :func:`cut_marker`, as soon as that much has arrived; the rest up to its newline is dropped. A
    broken stream's partial line stays here: the re-opened stream, with a new buffer, sends it whole."""

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._pending = bytearray()
        self._max = max_line
        self._marker = cut_marker(max_line).encode()
        self._skipping = False
        """The line being read was cut: drop its bytes up to the next newline."""

    def feed(self, chunk: bytes) -> list[str]:
        """Every line completed by ``chunk``, oldest first."""
        if self._skipping:
            start = chunk.find(b"\n")
            if start < 0:
                return []
            self._skipping, chunk = False, chunk[start + 1 :]
        end = chunk.rfind(b"\n")
        if end < 0:
            lines: list[str] = []
            self._pending += chunk
        else:
            complete = bytes(self._pending + chunk[:end]) if self._pending else chunk[:end]
            self._pending = bytearray(chunk[end + 1 :])
            if len(complete) > self._max:
                complete = b"\n".join(self._cut(line) for line in complete.split(b"\n"))
            text = complete.decode("utf-8", "replace")
            lines = [line.rstrip("\r") for line in text.split("\n")] if "\r" in text else text.split("\n")
        if len(self._pending) > self._max:  # an unfinished line past the bound: cut now, skip its rest
            lines.append(self._cut(bytes(self._pending)).decode("utf-8", "replace"))
            self._pending.clear()
            self._skipping = True
        return lines

    def finish(self) -> list[str]:
        """At a clean end of stream: the last line if it had no newline (upstream keeps it)."""
        last, self._pending, self._skipping = bytes(self._pending), bytearray(), False
        return [last.decode("utf-8", "replace").rstrip("\r")] if last else []

    def _cut(self, line: bytes) -> bytes:
        return line if len(line) <= self._max else line[: self._max] + self._marker


class ResumeCursor:
    """Which lines of one container's log were printed, so a re-opened stream neither repeats nor
    skips any. ``sinceTime`` has whole seconds, so a re-opened stream replays from the second of the
    last printed line: lines older than it are dropped, and of those sharing its exact timestamp as
    many as were printed; the first line past them ends the replay. Outside a replay every line is
    admitted: the cursor never hides lines of a live stream."""

    def __init__(self) -> None:
        self.last: str | None = None
        """Timestamp of the newest admitted line that had one."""
        self.started = False
        """A line was admitted (a re-open then resumes instead of tailing again)."""
        self._printed_at_last = 0
        self._to_skip: int | None = None
        """In a replay: how many more lines stamped ``last`` were printed already; None outside one."""

    def since_time(self) -> str | None:
        """``sinceTime`` for a re-opened stream: the last printed timestamp, truncated to seconds."""
        return None if self.last is None else f"{self.last[:_SECONDS]}Z"

    def reopen(self) -> None:
        """A new stream starts from :meth:`since_time`: replay until past the last printed line."""
        self._to_skip = None if self.last is None else self._printed_at_last

    def admit(self, line: LogLine) -> bool:
        """True if ``line`` is new and must be printed; records it as printed."""
        stamp = line.timestamp
        if stamp is None:  # cannot be placed, so cannot be a repeat: kept, and a replay goes on
            self.started = True
            return True
        if self._to_skip is not None and self.last is not None and stamp <= self.last:
            if stamp < self.last:
                return False
            if self._to_skip:
                self._to_skip -= 1
                return False
        self.started, self._to_skip = True, None
        # The kubelet stamps a container's lines in order; should one ever go back in time, the
        # newest instant stays the resume point (a replay must not repeat what follows it).
        if self.last is None or stamp > self.last:
            self.last, self._printed_at_last = stamp, 1
        elif stamp == self.last:
            self._printed_at_last += 1
        return True

    def admit_all(self, lines: Sequence[LogLine]) -> list[LogLine]:
        """The lines of ``lines`` that :meth:`admit` admits, in order, recorded as printed."""
        return [line for line in lines if self.admit(line)]
