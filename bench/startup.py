"""Benchmark: CLI start-up, ``flyte-apps --help`` and ``flyte-apps render --help`` against a bare
two-command typer app's ``--help`` (``bench/bare_typer.py``), each a fresh process.

``flyte-apps`` imports a command's module only when that command runs (``flyte_apps.cli.main``), so
``--help`` pays for typer and what ``main`` itself imports, and ``render --help`` for ``render``'s
imports as well. Goal: each at most 1.5x the bare app.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final

from bench.measure import VENV_BIN, Measurement, interleaved, progress, run_measured
from bench.report import Row, compared, mib, no_more_than, seconds

TITLE: Final = "start-up"
NOTE: Final = (
    "start-up: `.venv/bin/flyte-apps --help` and `flyte-apps render --help`, each a fresh process; "
    "floor = a bare two-command typer app's `--help` (`bench/bare_typer.py`); 5 interleaved rounds."
)
ROUNDS: Final = 5
"""Cheap runs (well under a second each): more rounds, a steadier median."""
RATIO_LIMIT: Final = 1.5
CLI: Final = VENV_BIN / "flyte-apps"
BARE: Final = Path(__file__).with_name("bare_typer.py")


def _side(workdir: Path, name: str, argv: list[str]) -> Callable[[int], Measurement]:
    def once(round_: int) -> Measurement:
        return run_measured(argv, stdout=workdir / f"{name}-{round_}.txt")

    return once


def run(workdir: Path) -> list[Row]:
    workdir.mkdir(parents=True, exist_ok=True)
    progress(f"{TITLE}: {ROUNDS} rounds")
    help_, render_help, bare = interleaved(
        [
            _side(workdir, "help", [str(CLI), "--help"]),
            _side(workdir, "render-help", [str(CLI), "render", "--help"]),
            _side(workdir, "bare", [sys.executable, str(BARE), "--help"]),
        ],
        rounds=ROUNDS,
    )
    rows = []
    for label, ours in (("`flyte-apps --help`", help_), ("`flyte-apps render --help`", render_help)):
        rows.append(
            compared(
                TITLE,
                f"wall time, {label}",
                "",
                [m.wall_s for m in ours],
                [m.wall_s for m in bare],
                seconds,
                goal=f"<= {RATIO_LIMIT}x",
                check=no_more_than(RATIO_LIMIT),
            )
        )
        rows.append(
            compared(
                TITLE,
                f"peak RSS, {label}",
                "",
                [m.peak_rss_mib for m in ours],
                [m.peak_rss_mib for m in bare],
                mib,
            )
        )
    return rows
