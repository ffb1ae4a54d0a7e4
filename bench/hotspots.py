"""Hot spots of a benchmark run: the inputs ``bench.run`` would use, run once under ``bench.sampler``::

    python -m bench.hotspots program --apps 1000                  # __main__.py under Pulumi mocks
    python -m bench.hotspots program --apps 1000 --floor design   # the design's floor, to compare
    python -m bench.hotspots program --apps 1000 --floor bare     # the bare floor
    python -m bench.hotspots render --apps 10000           # flyte-apps render --config FILE

The profile (CPU time by package, by project function, and the top functions overall) goes to stderr.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import program_scale
from bench.measure import REPO_ROOT
from bench.stacks import write_stack_file


def sampler_argv(*target: str, stdout: Path | None = None) -> list[str]:
    redirect = ["--stdout", str(stdout)] if stdout is not None else []
    return [sys.executable, "-m", "bench.sampler", *redirect, *target]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.hotspots", description="Profile one benchmark run."
    )
    parser.add_argument("benchmark", choices=["program", "render"])
    parser.add_argument("--apps", type=int, default=1_000, help="stack size (default 1000)")
    parser.add_argument(
        "--floor", choices=["design", "bare"], help="profile a floor program instead (program)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="flyte-apps-profile-") as scratch:
        workdir = Path(scratch)
        if args.benchmark == "program":
            ours, floor = program_scale.prepare(args.apps, workdir)
            floors = {"design": program_scale.DESIGN_FLOOR, "bare": program_scale.FLOOR_PROGRAM}
            program, config = (
                (floors[args.floor], floor) if args.floor else (program_scale.MAIN_PROGRAM, ours)
            )
            command = sampler_argv("bench.mocked_program", str(program), str(config))
        else:
            stack = write_stack_file(args.apps, workdir / "Pulumi.profile.yaml")
            command = sampler_argv(
                "flyte_apps.cli.main:main", "render", "--config", str(stack), stdout=workdir / "out.yaml"
            )
        subprocess.run(command, cwd=REPO_ROOT, check=True)


if __name__ == "__main__":
    main()
