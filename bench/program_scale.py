"""Benchmark: the program (``__main__.py``) under Pulumi's mocks with 1,000 and 5,000 apps.

Each run is a fresh process (``bench.mocked_program``), timed and measured from process start to exit.
Two floors, both registering the same KServices (from ``flyte_apps.core.plan.plan_stack``, computed
beforehand) through the same process setup:

- the design's floor (``bench/floor_components.py``), the main reference: each KService
  inside one bare component, in a process that imported pydantic, flyteidl2 and protovalidate; no
  validation, no namespace, no reapers, no exports. What ours spends above it is our own overhead.
- the bare floor (``bench/floor_program.py``), a second reference at 1,000 apps: bare
  ``CustomResource``s, nothing else imported.

No goals: the real engine's rows (``bench/engine_scale.py``) replace these (issue 39); this one stays
as the program's cost with the engine's out of the way. The 5,000-app size is run only if its
projection (from the 1,000-app rounds) fits the time cap, else the largest of 4,000, 3,000 and 2,000
that does; the table names the size used.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.measure import REPO_ROOT, ROUNDS, Budget, Measurement, interleaved, progress, run_measured
from bench.report import Row, compared, count, median, mib, seconds, spread, times
from bench.stacks import stack_config, summary
from flyte_apps.core.constants import TYPE_KSERVICE
from flyte_apps.core.plan import plan_stack

TITLE: Final = "program"
NOTE: Final = (
    "program: `__main__.py` under Pulumi mocks, one fresh process per run (process start included); "
    "design floor = the same KServices each inside one bare component, pydantic/flyteidl2/"
    "protovalidate imported, no validation/namespace/reapers/exports (`bench/floor_components.py`); "
    "bare floor = bare `CustomResource`s (`bench/floor_program.py`). Registrations counted by the "
    f"mocks. Generated stacks (`bench/stacks.py`): {summary()}."
)
GOAL_SIZE: Final = 1_000
LARGE_SIZES: Final = (5_000, 4_000, 3_000, 2_000)
"""The growth size: the first whose projection fits the time cap."""
BUDGET_S: Final = 360.0
GROWTH_SLACK: Final = 1.15
"""Per-app cost grows a little with the stack (the SDK's bookkeeping): projections allow for it."""
MAIN_PROGRAM: Final = REPO_ROOT / "__main__.py"
DESIGN_FLOOR: Final = Path(__file__).with_name("floor_components.py")
FLOOR_PROGRAM: Final = Path(__file__).with_name("floor_program.py")
FLOOR_CONFIG_KEY: Final = "bench:kservices"


@dataclass(frozen=True)
class ProgramRun:
    measurement: Measurement
    by_type: dict[str, int]

    @property
    def registrations(self) -> int:
        return sum(self.by_type.values())

    @property
    def wall(self) -> float:
        return self.measurement.wall_s

    @property
    def cpu(self) -> float:
        return self.measurement.cpu_s

    @property
    def rss(self) -> float:
        return self.measurement.peak_rss_mib


@dataclass(frozen=True)
class SizeRuns:
    apps: int
    ours: list[ProgramRun]
    design: list[ProgramRun]
    bare: list[ProgramRun]
    """Empty at sizes where only the design's floor runs."""


def prepare(apps: int, workdir: Path) -> tuple[Path, Path]:
    """The config files of the programs: our stack config, and the floors' pre-rendered KServices."""
    config = stack_config(apps)
    ours = workdir / f"stack-{apps}.json"
    ours.write_text(json.dumps(config), encoding="utf-8")
    kservices = workdir / f"kservices-{apps}.json"
    kservices.write_text(json.dumps([app.kservice for app in plan_stack(config).apps]), encoding="utf-8")
    floor = workdir / f"floor-{apps}.json"
    floor.write_text(json.dumps({FLOOR_CONFIG_KEY: str(kservices)}), encoding="utf-8")
    return ours, floor


def run_program(program: Path, config: Path, stdout: Path, *, apps: int) -> ProgramRun:
    argv = [sys.executable, "-m", "bench.mocked_program", str(program), str(config)]
    measurement = run_measured(argv, stdout=stdout)
    result = json.loads(stdout.read_text(encoding="utf-8"))
    run = ProgramRun(measurement=measurement, by_type={str(k): int(v) for k, v in result["by_type"].items()})
    if run.by_type.get(TYPE_KSERVICE) != apps:
        msg = f"{program.name} registered {run.by_type.get(TYPE_KSERVICE)} KServices for {apps} apps"
        raise RuntimeError(msg)
    return run


def measure_size(apps: int, workdir: Path, *, with_bare: bool) -> SizeRuns:
    ours_config, floor_config = prepare(apps, workdir)

    def side(program: Path, config: Path, name: str) -> Callable[[int], ProgramRun]:
        return lambda round_: run_program(program, config, workdir / f"{name}-{apps}-{round_}.out", apps=apps)

    sides = [side(MAIN_PROGRAM, ours_config, "ours"), side(DESIGN_FLOOR, floor_config, "design")]
    if with_bare:
        sides.append(side(FLOOR_PROGRAM, floor_config, "bare"))
    progress(f"{TITLE}: {apps:,} apps, {ROUNDS} rounds of {len(sides)} programs")
    runs = interleaved(sides)
    return SizeRuns(apps, runs[0], runs[1], runs[2] if with_bare else [])


def run(workdir: Path) -> list[Row]:
    workdir.mkdir(parents=True, exist_ok=True)
    budget = Budget(BUDGET_S)
    small = measure_size(GOAL_SIZE, workdir, with_bare=True)
    per_round = median([o.wall + d.wall for o, d in zip(small.ours, small.design, strict=True)])
    large: SizeRuns | None = None
    for apps in LARGE_SIZES:
        projected = per_round * apps / GOAL_SIZE * GROWTH_SLACK * ROUNDS
        if budget.fits(projected):
            large = measure_size(apps, workdir, with_bare=False)
            break
        progress(f"{TITLE}: {apps:,} apps would take about {projected:.0f} s; over the time cap")
    return rows(small, large)


def _label(apps: int) -> str:
    return f"{count(apps)} apps"


def _wall(run: ProgramRun) -> float:
    return run.wall


def _rss(run: ProgramRun) -> float:
    return run.rss


def _cpu(run: ProgramRun) -> float:
    return run.cpu


def rows(small: SizeRuns, large: SizeRuns | None) -> list[Row]:
    out: list[Row] = []
    metrics: tuple[tuple[str, Callable[[float], str], Callable[[ProgramRun], float]], ...] = (
        ("wall time", seconds, _wall),
        ("peak RSS", mib, _rss),
        ("CPU time", seconds, _cpu),
    )
    for measure, fmt, value in metrics:
        out.append(
            compared(
                TITLE,
                f"{measure} vs design floor",
                _label(small.apps),
                [value(r) for r in small.ours],
                [value(r) for r in small.design],
                fmt,
            )
        )
        out.append(
            compared(
                TITLE,
                f"{measure} vs bare floor (reference)",
                _label(small.apps),
                [value(r) for r in small.ours],
                [value(r) for r in small.bare],
                fmt,
            )
        )
        if large is not None:
            out.append(
                compared(
                    TITLE,
                    f"{measure} vs design floor",
                    _label(large.apps),
                    [value(r) for r in large.ours],
                    [value(r) for r in large.design],
                    fmt,
                )
            )
    if large is not None:
        cut = "" if large.apps == LARGE_SIZES[0] else f" (time cap; {count(LARGE_SIZES[0])} did not fit)"
        for measure, value in (("wall time", _wall), ("peak RSS", _rss)):
            ours_growth = median([value(r) for r in large.ours]) / median([value(r) for r in small.ours])
            floor_growth = median([value(r) for r in large.design]) / median([value(r) for r in small.design])
            out.append(
                Row(
                    TITLE,
                    f"{measure} growth vs design floor's",
                    f"{count(small.apps)} -> {count(large.apps)} apps{cut}",
                    times(ours_growth),
                    times(floor_growth),
                    times(ours_growth / floor_growth),
                )
            )
    else:
        out.append(
            Row(
                TITLE, "growth", f"{count(small.apps)} -> {count(LARGE_SIZES[-1])} apps", "not run (time cap)"
            )
        )
    for size in (small, large):
        if size is None:
            continue
        out.append(
            Row(
                TITLE,
                "registrations vs design floor",
                _label(size.apps),
                spread([r.registrations for r in size.ours], count),
                spread([r.registrations for r in size.design], count),
                times(size.ours[0].registrations / size.design[0].registrations),
            )
        )
    return out
