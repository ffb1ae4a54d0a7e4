"""Cluster text on a terminal: control characters shown as escapes, never acted on."""

from __future__ import annotations

import pytest

from flyte_apps.core.printable import printable


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("Ready", "Ready"),
        ("bad\x1b]0;owned\x07title", "bad\\x1b]0;owned\\x07title"),  # OSC: retitles the terminal
        (
            "ok\nproj/dev/evil  ACTIVE  9  https://evil.example",
            "ok\\nproj/dev/evil  ACTIVE  9  https://evil.example",
        ),
        ("50%\rDONE", "50%\\rDONE"),
        ("a\tb", "a\\tb"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("\x9b31m C1 CSI", "\\x9b31m C1 CSI"),
        ("user\u202eexe.txt", "user\\u202eexe.txt"),  # right-to-left override
        ("del\x7f", "del\\x7f"),
        ("naïve — ünïcode ✓", "naïve — ünïcode ✓"),
    ],
)
def test_control_characters_are_shown_as_escapes(given: str, shown: str) -> None:
    assert printable(given) == shown


def test_colour_may_be_kept_for_log_lines_but_nothing_else() -> None:
    line = "\x1b[32mINFO\x1b[0m started\x1b]0;t\x07\n"
    assert printable(line, keep_colour=True) == "\x1b[32mINFO\x1b[0m started\\x1b]0;t\\x07\\n"
