"""Benchmark: ``flyte-apps render --config FILE`` of 1,000- and 10,000-app stacks, end to end.

Our side is the installed ``flyte-apps`` command (process start, reading the YAML stack file,
validation, planning, YAML out). The floor is ``bench/yaml_floor.py``: a process that loads the same
objects, pre-rendered into JSON, and dumps them with PyYAML's standard ``yaml.dump`` call (libyaml's
safe dumper with the project's quoting rule). Both outputs must be byte-identical. Goals: at most
1.5x the floor at 10,000 apps, 2x at 1,000 (where process start-up weighs more). The 10,000-app
size runs if its projection from the 1,000-app rounds fits the time cap, else 5,000 or 2,000.
"""

from __future__ import annotations

import filecmp
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.measure import ROUNDS, VENV_BIN, Budget, Measurement, interleaved, progress, run_measured
from bench.report import FAIL, PASS, Row, compared, count, median, mib, no_more_than, seconds
from bench.stacks import stack_config, write_stack_file
from flyte_apps.core.plan import plan_stack

TITLE: Final = "render"
NOTE: Final = (
    "render: `.venv/bin/flyte-apps render --config FILE` (a Pulumi.<stack>.yaml of N apps), stdout to "
    "a file, process start included; floor = a process loading the same objects from JSON and "
    "dumping them with `yaml.dump` and the project's dumper (`bench/yaml_floor.py`); outputs compared "
    "byte for byte."
)
SMALL: Final = 1_000
LARGE_SIZES: Final = (10_000, 5_000, 2_000)
LIMITS: Final = {1_000: 2.0, 10_000: 1.5}
BUDGET_S: Final = 170.0
CLI: Final = VENV_BIN / "flyte-apps"


@dataclass(frozen=True)
class SizeRuns:
    apps: int
    ours: list[Measurement]
    floor: list[Measurement]

    @property
    def identical(self) -> bool:
        return all(
            filecmp.cmp(o.stdout, f.stdout, shallow=False) for o, f in zip(self.ours, self.floor, strict=True)
        )


def prepare(apps: int, workdir: Path) -> tuple[Path, Path]:
    """The stack file ``render`` reads, and the objects it prints as the floor's JSON input."""
    stack = write_stack_file(apps, workdir / f"Pulumi.bench-{apps}.yaml")
    objects = plan_stack(stack_config(apps)).objects()
    if any(obj.patch for obj in objects):
        msg = "the generated stack must not patch objects: the floor prints no patch comments"
        raise RuntimeError(msg)
    manifests = workdir / f"objects-{apps}.json"
    manifests.write_text(json.dumps([obj.manifest for obj in objects]), encoding="utf-8")
    return stack, manifests


def measure_size(apps: int, workdir: Path) -> SizeRuns:
    stack, manifests = prepare(apps, workdir)

    def side(argv: list[str], name: str) -> Callable[[int], Measurement]:
        return lambda round_: run_measured(argv, stdout=workdir / f"{name}-{apps}-{round_}.yaml")

    progress(f"{TITLE}: {apps:,} apps, {ROUNDS} rounds")
    ours, floor = interleaved(
        [
            side([str(CLI), "render", "--config", str(stack)], "ours"),
            side([sys.executable, "-m", "bench.yaml_floor", str(manifests)], "floor"),
        ]
    )
    return SizeRuns(apps, ours, floor)


def run(workdir: Path) -> list[Row]:
    workdir.mkdir(parents=True, exist_ok=True)
    budget = Budget(BUDGET_S)
    sizes = [measure_size(SMALL, workdir)]
    per_round = median([o.wall_s + f.wall_s for o, f in zip(sizes[0].ours, sizes[0].floor, strict=True)])
    for apps in LARGE_SIZES:
        projected = per_round * apps / SMALL * ROUNDS
        if budget.fits(projected):
            sizes.append(measure_size(apps, workdir))
            break
        progress(f"{TITLE}: {apps:,} apps would take about {projected:.0f} s; over the time cap")
    return rows(sizes)


def rows(sizes: list[SizeRuns]) -> list[Row]:
    out: list[Row] = []
    for size in sizes:
        label = f"{count(size.apps)} apps"
        if size.apps == sizes[-1].apps and size.apps != LARGE_SIZES[0] and size.apps != SMALL:
            label += f" (time cap; goal {count(LARGE_SIZES[0])})"
        limit = LIMITS.get(size.apps)
        out.append(
            compared(
                TITLE,
                "wall time",
                label,
                [m.wall_s for m in size.ours],
                [m.wall_s for m in size.floor],
                seconds,
                goal=f"<= {limit:g}x" if limit else "",
                check=no_more_than(limit) if limit else None,
            )
        )
        out.append(
            compared(
                TITLE, "CPU time", label, [m.cpu_s for m in size.ours], [m.cpu_s for m in size.floor], seconds
            )
        )
        out.append(
            compared(
                TITLE,
                "peak RSS",
                label,
                [m.peak_rss_mib for m in size.ours],
                [m.peak_rss_mib for m in size.floor],
                mib,
            )
        )
        out.append(
            Row(
                TITLE,
                "output",
                label,
                f"{size.ours[0].stdout.stat().st_size / 1e6:.1f} MB",
                f"{size.floor[0].stdout.stat().st_size / 1e6:.1f} MB",
                goal="byte-identical",
                result=PASS if size.identical else FAIL,
            )
        )
    return out
