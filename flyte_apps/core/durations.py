"""Go-style durations (``90s``, ``5m``, ``1h30m``): parsed as Go's ``time.ParseDuration`` does and
printed as Go's ``time.Duration.String()`` does, because Knative reads and Flyte writes them that way."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Final

NANOS_PER_SECOND: Final = 1_000_000_000
_UNIT_NANOS: Final = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": NANOS_PER_SECOND,
    "m": 60 * NANOS_PER_SECOND,
    "h": 3600 * NANOS_PER_SECOND,
}
_TERM: Final = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


class DurationSyntaxError(ValueError):
    """The text is not a Go duration."""


def parse_duration(text: str) -> int:
    """Return the duration in nanoseconds; raise ``DurationSyntaxError`` for anything Go rejects."""
    body = text
    sign = 1
    if body[:1] in "+-" and body:
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        raise DurationSyntaxError(text)
    position = 0
    total = Decimal(0)
    while position < len(body):
        match = _TERM.match(body, position)
        if match is None:
            raise DurationSyntaxError(text)
        total += Decimal(match.group(1)) * _UNIT_NANOS[match.group(2)]
        position = match.end()
    return sign * int(total)


def format_duration(nanos: int) -> str:
    """Render nanoseconds exactly like Go's ``time.Duration.String()`` (``1m30s``, ``1h0m0s``, ``1.5s``)."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    value = abs(nanos)
    if value < NANOS_PER_SECOND:
        for unit, size in (("ns", 1), ("\u00b5s", 1_000), ("ms", 1_000_000)):
            if value < size * 1_000:
                return sign + _with_fraction(value, size) + unit
    hours, rest = divmod(value, 3600 * NANOS_PER_SECOND)
    minutes, rest = divmod(rest, 60 * NANOS_PER_SECOND)
    seconds = _with_fraction(rest, NANOS_PER_SECOND) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    if minutes:
        return f"{sign}{minutes}m{seconds}"
    return sign + seconds


def _with_fraction(value: int, unit: int) -> str:
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    digits = str(fraction).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"
