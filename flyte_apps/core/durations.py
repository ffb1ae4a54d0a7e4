"""Go-style durations (``90s``, ``5m``, ``1h30m``): parsed as Go's ``time.ParseDuration`` does and
printed as Go's ``time.Duration.String()`` does, because Knative reads and Flyte writes them that way."""

from __future__ import annotations

import re
from typing import Final

NANOS_PER_SECOND: Final = 1_000_000_000
MAX_NANOS: Final = 2**63 - 1
"""Go's ``time.Duration`` is an int64 of nanoseconds (about 292 years); longer is an error, as in Go."""
_OVERFLOW: Final = 2**63
"""Go accumulates in a uint64 and fails beyond this (the magnitude of the most negative duration)."""
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
_DIGITS: Final = re.compile(r"[0-9]*")
_UNIT: Final = re.compile(r"[^0-9.]*")
_MAX_INT_DIGITS: Final = len(str(_OVERFLOW))
"""A leading integer with more significant digits than this overflows whatever its value."""


class DurationSyntaxError(ValueError):
    """The text is not a Go duration."""


class DurationRangeError(DurationSyntaxError):
    """The text is a Go duration, but beyond what Go's ``time.Duration`` holds (Go rejects it too)."""


def parse_duration(text: str) -> int:
    """Return the duration in nanoseconds; raise ``DurationSyntaxError`` for anything Go rejects.

    Go's ``time.ParseDuration``, step for step (a uint64 accumulator, overflow checked before each
    multiplication, fraction digits beyond 64 bits ignored, the fraction scaled in float64), so the
    result is exactly Go's and the work is linear in the text: no regular expression that can
    backtrack, no arithmetic on numbers longer than 20 digits."""
    body = text
    negative = False
    if body[:1] in ("-", "+"):
        negative = body[0] == "-"
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        raise DurationSyntaxError(text)
    total = 0
    position = 0
    while position < len(body):
        if not (body[position] == "." or (body[position].isascii() and body[position].isdigit())):
            raise DurationSyntaxError(text)
        digits = _run(_DIGITS, body, position)
        position += len(digits)
        whole = _leading_int(digits, text)
        fraction, scale, fraction_digits = 0, 1.0, ""
        if body[position : position + 1] == ".":
            fraction_digits = _run(_DIGITS, body, position + 1)
            position += 1 + len(fraction_digits)
            fraction, scale = _leading_fraction(fraction_digits)
        if not digits and not fraction_digits:
            raise DurationSyntaxError(text)  # no digits at all (".s")
        unit_text = _run(_UNIT, body, position)
        position += len(unit_text)
        unit = _UNIT_NANOS.get(unit_text)
        if unit is None:
            raise DurationSyntaxError(text)  # missing or unknown unit
        if whole > _OVERFLOW // unit:
            raise DurationRangeError(text)
        value = whole * unit
        if fraction > 0:
            value += int(float(fraction) * (float(unit) / scale))
            if value > _OVERFLOW:
                raise DurationRangeError(text)
        total += value
        if total > _OVERFLOW:
            raise DurationRangeError(text)
    if negative:
        return -total
    if total > MAX_NANOS:
        raise DurationRangeError(text)
    return total


def _run(pattern: re.Pattern[str], text: str, position: int) -> str:
    """What ``pattern`` (a single character class, starred: it cannot backtrack) matches there."""
    found = pattern.match(text, position)
    return found.group() if found else ""


def _leading_int(digits: str, text: str) -> int:
    """Go's ``leadingInt``: the integer, or an error once it would pass 2**63."""
    significant = digits.lstrip("0")
    if len(significant) > _MAX_INT_DIGITS:
        raise DurationRangeError(text)
    value = int(significant or "0")
    if value > _OVERFLOW:
        raise DurationRangeError(text)
    return value


def _leading_fraction(digits: str) -> tuple[int, float]:
    """Go's ``leadingFraction``: digits are taken while they fit in 63 bits; the rest are ignored."""
    value, scale = 0, 1.0
    for char in digits[: _MAX_INT_DIGITS + 1]:
        if value > (_OVERFLOW - 1) // 10:
            break
        following = value * 10 + int(char)
        if following > _OVERFLOW:
            break
        value, scale = following, scale * 10
    return value, scale


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
