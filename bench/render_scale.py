"""Benchmark 2, render: ``flyte-apps render --config FILE`` of 1,000- and 10,000-app stacks, end to end.

Our side is the installed ``flyte-apps`` command (process start, reading the YAML stack file,
validation, planning, YAML out). The floor is ``bench/yaml_floor.py``: a process that loads the same
objects, pre-rendered into JSON, and dumps them with the same ``yaml.dump`` call (libyaml's safe
dumper, as ``flyte_apps.core.yamlout.yaml_text``). Both outputs
must be byte-identical. Goals: 10,000 apps in under 5 s, and at most 3x the floor.
"""

from __future__ import annotations

import filecmp
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.measure import VENV_BIN, Measurement, run_measured
from bench.report import FAIL, PASS, Row, at_most, count, mib, seconds, times
from bench.stacks import stack_config, write_stack_file
from flyte_apps.core.plan import plan_stack

TITLE: Final = "render"
NOTE: Final = (
    "render: `.venv/bin/flyte-apps render --config FILE` (a Pulumi.<stack>.yaml of N apps), stdout to "
    "a file, process start included; floor = a process loading the same objects from JSON and "
    "dumping them with the same `yaml.dump` call (`bench/yaml_floor.py`); outputs compared "
    "byte for byte."
)
SIZES: Final = (1_000, 10_000)
GOAL_SIZE: Final = 10_000
RATIO_LIMIT: Final = 3.0
SECONDS_LIMIT: Final = 5.0
CLI: Final = VENV_BIN / "flyte-apps"


@dataclass(frozen=True)
class Pair:
    ours: Measurement
    floor: Measurement

    @property
    def identical(self) -> bool:
        return filecmp.cmp(self.ours.stdout, self.floor.stdout, shallow=False)


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


def run(workdir: Path) -> list[Row]:
    workdir.mkdir(parents=True, exist_ok=True)
    pairs: dict[int, Pair] = {}
    for apps in SIZES:
        stack, manifests = prepare(apps, workdir)
        ours = run_measured(
            [str(CLI), "render", "--config", str(stack)], stdout=workdir / f"ours-{apps}.yaml"
        )
        floor = run_measured(
            [sys.executable, "-m", "bench.yaml_floor", str(manifests)], stdout=workdir / f"floor-{apps}.yaml"
        )
        pairs[apps] = Pair(ours=ours, floor=floor)
    return rows(pairs)


def rows(pairs: dict[int, Pair]) -> list[Row]:
    out: list[Row] = []
    for apps, pair in pairs.items():
        ratio = pair.ours.wall_s / pair.floor.wall_s
        goal = apps == GOAL_SIZE
        out.append(
            Row(
                TITLE,
                "wall time",
                count(apps),
                seconds(pair.ours.wall_s),
                seconds(pair.floor.wall_s),
                times(ratio),
                f"<= {RATIO_LIMIT:g}x" if goal else "",
                at_most(ratio, RATIO_LIMIT) if goal else "",
            )
        )
        if goal:
            out.append(
                Row(
                    TITLE,
                    "wall time",
                    count(apps),
                    seconds(pair.ours.wall_s),
                    goal=f"< {SECONDS_LIMIT:g} s",
                    result=at_most(pair.ours.wall_s, SECONDS_LIMIT),
                )
            )
    for apps, pair in pairs.items():
        out.append(
            Row(
                TITLE,
                "CPU time",
                count(apps),
                seconds(pair.ours.cpu_s),
                seconds(pair.floor.cpu_s),
                times(pair.ours.cpu_s / pair.floor.cpu_s),
            )
        )
    for apps, pair in pairs.items():
        rss_ours, rss_floor = pair.ours.peak_rss_mib, pair.floor.peak_rss_mib
        out.append(
            Row(TITLE, "peak RSS", count(apps), mib(rss_ours), mib(rss_floor), times(rss_ours / rss_floor))
        )
    for apps, pair in pairs.items():
        size_ours, size_floor = pair.ours.stdout.stat().st_size, pair.floor.stdout.stat().st_size
        out.append(
            Row(
                TITLE,
                "output",
                count(apps),
                f"{size_ours / 1e6:.1f} MB",
                f"{size_floor / 1e6:.1f} MB",
                goal="byte-identical",
                result=PASS if pair.identical else FAIL,
            )
        )
    return out
