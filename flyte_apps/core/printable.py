"""Pure: text from the cluster (or a stack file) made safe to print on a terminal.

A condition message, a label or a log line is written by whoever controls the cluster or the app. Raw,
an OSC escape in it retitles the terminal, a newline adds a row of its own making to ``status``, a
carriage return overwrites what was printed, and bidirectional overrides reorder what is read. Every
such character is shown as an escape instead (``\\x1b``, ``\\n``, ``\\u202e``), so the text stays on
its line, visibly. Colour (SGR sequences, ``ESC [ ... m``) may be kept for log lines, as ``less -R``
keeps it; click drops colour anyway when the output is not a terminal."""

from __future__ import annotations

import re
from typing import Final

_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""C0 and C1 controls, DEL, and the bidirectional marks and overrides (the "Trojan Source" set)."""
_CONTROL_OR_COLOUR: Final = re.compile("\x1b\\[[0-9;]*m|" + _CONTROL.pattern)
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if len(char) > 1:  # a colour sequence, kept
        return char
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, keep_colour: bool = False) -> str:
    """``text`` with every control character escaped (colour sequences kept with ``keep_colour``)."""
    pattern = _CONTROL_OR_COLOUR if keep_colour else _CONTROL
    return pattern.sub(_escape, text) if pattern.search(text) else text
