"""Hot spots of a benchmark run: the inputs ``bench.run`` would use, run once under py-spy
(``bench.profile``)::

    python -m bench.hotspots program --apps 1000                  # __main__.py under Pulumi mocks
    python -m bench.hotspots program --apps 1000 --floor design   # the design's floor, to compare
    python -m bench.hotspots program --apps 1000 --floor bare     # the bare floor
    python -m bench.hotspots render --apps 10000           # flyte-apps render --config FILE
    python -m bench.hotspots engine --apps 100 [--side same-graph] [--step up]
                                       # the real engine's `pulumi preview` (or `up`), py-spy attached to
                                       # the program by PID (needs `make e2e-tools`)

The summary (samples by thread and by package, the top functions) goes to stdout.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import engine_scale, program_scale
from bench.measure import REPO_ROOT
from bench.profile import record_argv, summary
from bench.stacks import write_stack_file


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.hotspots", description="Profile one benchmark run."
    )
    parser.add_argument("benchmark", choices=["program", "render", "engine"])
    parser.add_argument("--apps", type=int, default=1_000, help="stack size (default 1000)")
    parser.add_argument(
        "--floor", choices=["design", "bare"], help="profile a floor program instead (program)"
    )
    parser.add_argument(
        "--side",
        choices=list(engine_scale.SIDE_NAMES),
        default="ours",
        help="the engine's program (engine)",
    )
    parser.add_argument("--step", choices=["preview", "up"], default="preview", help="the command (engine)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="flyte-apps-profile-") as scratch:
        workdir = Path(scratch)
        raw = workdir / "samples.txt"
        if args.benchmark == "engine":
            print(engine_scale.profile(workdir / "engine", args.apps, args.side, args.step, raw))
            return
        if args.benchmark == "program":
            ours, floor = program_scale.prepare(args.apps, workdir)
            floors = {"design": program_scale.DESIGN_FLOOR, "bare": program_scale.FLOOR_PROGRAM}
            program, config = (
                (floors[args.floor], floor) if args.floor else (program_scale.MAIN_PROGRAM, ours)
            )
            command = [sys.executable, "-m", "bench.mocked_program", str(program), str(config)]
        else:
            stack = write_stack_file(args.apps, workdir / "Pulumi.profile.yaml")
            flyte_apps = str(Path(sys.executable).parent / "flyte-apps")
            command = [flyte_apps, "render", "--config", str(stack)]
        with (workdir / "out").open("wb") as out:
            subprocess.run([*record_argv(raw), *command], cwd=REPO_ROOT, check=True, stdout=out)
        print(summary(raw))


if __name__ == "__main__":
    main()
