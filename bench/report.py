"""Result rows, the statistics behind them, and the one markdown table ``python -m bench.run`` prints.

Every figure is the median of the runs made (at least 3, ours and the floor interleaved) with the
spread in brackets (the lowest and highest run). A ratio is the median of the per-round ratios
(ours in round i over the floor in round i), so a change of machine load during the run, which hits
both runs of a round alike, moves it less than a ratio of medians would.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass
from typing import Final

PASS: Final = "PASS"
FAIL: Final = "FAIL"
COLUMNS: Final = ("benchmark", "measure", "size", "ours", "floor", "ours / floor", "goal", "result")


@dataclass(frozen=True)
class Row:
    """One line of the table; ``goal`` and ``result`` stay empty for plain measurements."""

    benchmark: str
    measure: str
    size: str
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


def at_least(value: float, limit: float) -> str:
    """The result of a goal ``value >= limit``."""
    return PASS if value >= limit else FAIL


def no_more_than(limit: float) -> Callable[[float], str]:
    """A goal check: the ratio is at most ``limit``."""
    return lambda value: at_most(value, limit)


def no_less_than(limit: float) -> Callable[[float], str]:
    """A goal check: the ratio is at least ``limit``."""
    return lambda value: at_least(value, limit)


def seconds(value: float) -> str:
    return f"{value:.2f} s"


def millis(value: float) -> str:
    return f"{value * 1000:.1f} ms"


def mib(value: float) -> str:
    return f"{value:.0f} MiB"


def count(value: float) -> str:
    return f"{value:,.0f}"


def per_second(value: float) -> str:
    return f"{value:,.0f}/s"


def times(value: float) -> str:
    return f"{value:.2f}x"


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def spread(values: Sequence[float], fmt: Callable[[float], str]) -> str:
    """``median [lowest - highest]``, or the one value of a single run."""
    if len(values) == 1:
        return fmt(values[0])
    return f"{fmt(median(values))} [{fmt(min(values))} - {fmt(max(values))}]"


def ratios(ours: Sequence[float], floor: Sequence[float]) -> list[float]:
    """Per-round ratios (the rounds are the runs' positions in both lists)."""
    return [o / f for o, f in zip(ours, floor, strict=False) if f]


def compared(
    benchmark: str,
    measure: str,
    size: str,
    ours: Sequence[float],
    floor: Sequence[float],
    fmt: Callable[[float], str],
    *,
    goal: str = "",
    check: Callable[[float], str] | None = None,
) -> Row:
    """A row of ours against the floor: both with their spread, and the median per-round ratio
    (checked by ``check`` when there is a goal)."""
    per_round = ratios(ours, floor)
    ratio = median(per_round) if per_round else float("nan")
    return Row(
        benchmark,
        measure,
        size,
        spread(ours, fmt),
        spread(floor, fmt),
        spread(per_round, times) if per_round else "",
        goal,
        check(ratio) if check is not None and per_round else "",
    )


def markdown_table(rows: Sequence[Row]) -> str:
    right = {3, 4, 5}  # numbers
    lines = [
        "| " + " | ".join(COLUMNS) + " |",
        "| " + " | ".join("---:" if i in right else "---" for i in range(len(COLUMNS))) + " |",
    ]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)
