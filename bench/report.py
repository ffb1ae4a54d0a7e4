"""Result rows and the one markdown table ``python -m bench.run`` prints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass
from typing import Final

PASS: Final = "PASS"
FAIL: Final = "FAIL"
COLUMNS: Final = ("benchmark", "measure", "apps", "ours", "floor", "ours / floor", "goal", "result")


@dataclass(frozen=True)
class Row:
    """One line of the table; ``goal`` and ``result`` stay empty for plain measurements."""

    benchmark: str
    measure: str
    apps: str
    ours: str
    floor: str = ""
    ratio: str = ""
    goal: str = ""
    result: str = ""

    def cells(self) -> tuple[str, ...]:
        return astuple(self)


def at_most(value: float, limit: float) -> str:
    """The result of a goal ``value <= limit``."""
    return PASS if value <= limit else FAIL


def seconds(value: float) -> str:
    return f"{value:.2f} s"


def mib(value: float) -> str:
    return f"{value:.0f} MiB"


def count(value: int) -> str:
    return f"{value:,}"


def times(value: float) -> str:
    return f"{value:.2f}x"


def markdown_table(rows: Sequence[Row]) -> str:
    right = {3, 4, 5}  # numbers
    lines = [
        "| " + " | ".join(COLUMNS) + " |",
        "| " + " | ".join("---:" if i in right else "---" for i in range(len(COLUMNS))) + " |",
    ]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)
