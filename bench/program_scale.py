"""Benchmark 1, program scale: ``__main__.py`` under Pulumi's mocks with 100, 1,000 and 5,000 apps.

Each run is a fresh process (``bench.mocked_program``), timed and measured from process start to exit;
sizes up to 1,000 apps run twice and keep the faster run (other work on a 2-core machine easily adds
10 % to one run), 5,000 once to stay within the time budget.
The floor is ``bench/floor_program.py``: the same KServices (from ``flyte_apps.core.plan.plan_stack``,
computed beforehand) registered as bare ``CustomResource``s through the same process setup.
Goals: at 1,000 apps wall time and peak RSS at most 1.5x the floor's; from 1,000 to 5,000 apps our
growth at most 1.1x the floor's own growth.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.measure import REPO_ROOT, Measurement, run_measured
from bench.report import Row, at_most, count, mib, seconds, times
from bench.stacks import stack_config, summary
from flyte_apps.core.constants import TYPE_KSERVICE
from flyte_apps.core.plan import plan_stack

TITLE: Final = "program scale"
NOTE: Final = (
    "program scale: `__main__.py` under Pulumi mocks, one fresh process per run (process start "
    "included; best of 2 runs up to 1,000 apps); floor = the same KServices as bare `CustomResource`s, "
    "no components/validation (`bench/floor_program.py`). Registrations counted by the mocks. "
    f"Generated stacks (`bench/stacks.py`): {summary()}."
)
SIZES: Final = (100, 1_000, 5_000)
GOAL_SIZE: Final = 1_000
GROWTH_FROM: Final = 1_000
GROWTH_TO: Final = 5_000
REPEAT_UP_TO: Final = 1_000
"""Sizes up to this run twice, and the faster run counts."""
RATIO_LIMIT: Final = 1.5
GROWTH_LIMIT: Final = 1.1
MAIN_PROGRAM: Final = REPO_ROOT / "__main__.py"
FLOOR_PROGRAM: Final = Path(__file__).with_name("floor_program.py")
FLOOR_CONFIG_KEY: Final = "bench:kservices"


@dataclass(frozen=True)
class ProgramRun:
    measurement: Measurement
    by_type: dict[str, int]

    @property
    def registrations(self) -> int:
        return sum(self.by_type.values())


@dataclass(frozen=True)
class Pair:
    ours: ProgramRun
    floor: ProgramRun


def prepare(apps: int, workdir: Path) -> tuple[Path, Path]:
    """The config files of both programs: our stack config, and the floor's pre-rendered KServices."""
    config = stack_config(apps)
    ours = workdir / f"stack-{apps}.json"
    ours.write_text(json.dumps(config), encoding="utf-8")
    kservices = workdir / f"kservices-{apps}.json"
    kservices.write_text(json.dumps([app.kservice for app in plan_stack(config).apps]), encoding="utf-8")
    floor = workdir / f"floor-{apps}.json"
    floor.write_text(json.dumps({FLOOR_CONFIG_KEY: str(kservices)}), encoding="utf-8")
    return ours, floor


def run_program(program: Path, config: Path, stdout: Path) -> ProgramRun:
    argv = [sys.executable, "-m", "bench.mocked_program", str(program), str(config)]
    measurement = run_measured(argv, stdout=stdout)
    result = json.loads(stdout.read_text(encoding="utf-8"))
    return ProgramRun(measurement=measurement, by_type={str(k): int(v) for k, v in result["by_type"].items()})


def measure_pair(apps: int, workdir: Path) -> Pair:
    """Our program and the floor, back to back (a change in machine load hits both alike)."""
    ours_config, floor_config = prepare(apps, workdir)
    runs = [
        Pair(
            ours=run_program(MAIN_PROGRAM, ours_config, workdir / f"ours-{apps}.out"),
            floor=run_program(FLOOR_PROGRAM, floor_config, workdir / f"floor-{apps}.out"),
        )
        for _ in range(2 if apps <= REPEAT_UP_TO else 1)
    ]
    return Pair(
        ours=min((run.ours for run in runs), key=_wall), floor=min((run.floor for run in runs), key=_wall)
    )


def run(workdir: Path) -> list[Row]:
    workdir.mkdir(parents=True, exist_ok=True)
    pairs: dict[int, Pair] = {}
    for apps in SIZES:
        pair = measure_pair(apps, workdir)
        for side, result in (("ours", pair.ours), ("floor", pair.floor)):
            if result.by_type.get(TYPE_KSERVICE) != apps:
                msg = f"{side} registered {result.by_type.get(TYPE_KSERVICE)} KServices for {apps} apps"
                raise RuntimeError(msg)
        pairs[apps] = pair
    return rows(pairs)


def _wall(run: ProgramRun) -> float:
    return run.measurement.wall_s


def _rss(run: ProgramRun) -> float:
    return run.measurement.peak_rss_mib


def rows(pairs: dict[int, Pair]) -> list[Row]:
    out: list[Row] = []
    metrics: tuple[tuple[str, Callable[[float], str], Callable[[ProgramRun], float]], ...] = (
        ("wall time", seconds, _wall),
        ("peak RSS", mib, _rss),
    )
    for measure, fmt, value in metrics:
        for apps, pair in pairs.items():
            ratio = value(pair.ours) / value(pair.floor)
            goal = apps == GOAL_SIZE
            out.append(
                Row(
                    TITLE,
                    measure,
                    count(apps),
                    fmt(value(pair.ours)),
                    fmt(value(pair.floor)),
                    times(ratio),
                    f"<= {RATIO_LIMIT}x" if goal else "",
                    at_most(ratio, RATIO_LIMIT) if goal else "",
                )
            )
        if GROWTH_FROM in pairs and GROWTH_TO in pairs:
            low, high = pairs[GROWTH_FROM], pairs[GROWTH_TO]
            ours_growth = value(high.ours) / value(low.ours)
            floor_growth = value(high.floor) / value(low.floor)
            out.append(
                Row(
                    TITLE,
                    f"{measure} growth",
                    f"{count(GROWTH_FROM)} -> {count(GROWTH_TO)}",
                    times(ours_growth),
                    times(floor_growth),
                    times(ours_growth / floor_growth),
                    f"<= {GROWTH_LIMIT}x",
                    at_most(ours_growth / floor_growth, GROWTH_LIMIT),
                )
            )
    for apps, pair in pairs.items():
        cpu_ours, cpu_floor = pair.ours.measurement.cpu_s, pair.floor.measurement.cpu_s
        out.append(
            Row(
                TITLE,
                "CPU time",
                count(apps),
                seconds(cpu_ours),
                seconds(cpu_floor),
                times(cpu_ours / cpu_floor),
            )
        )
    for apps, pair in pairs.items():
        regs_ours, regs_floor = pair.ours.registrations, pair.floor.registrations
        out.append(
            Row(
                TITLE,
                "registrations",
                count(apps),
                count(regs_ours),
                count(regs_floor),
                times(regs_ours / regs_floor),
            )
        )
    return out
