"""Run the benchmarks and print one markdown table of all their results::

    python -m bench.run                      # everything (1.5 to 2 hours on 2 cores: the engine's most of it)
    python -m bench.run --only render        # one benchmark (its TITLE, spaces as '-')

A benchmark is a module with ``TITLE`` (its name in the table), ``NOTE`` (one line on what it
compares), ``BUDGET_S`` (its time cap: sizes whose projection does not fit are not started, and the
table says which size was reached) and ``run(workdir) -> list[Row]``; add it to ``BENCHMARKS``.
Every row compares ours with a floor measured in the same run: medians of interleaved rounds, with
the spread. Progress goes to stderr, results to stdout.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Final, Protocol

from bench import (
    engine_pods,
    engine_scale,
    logs_follow,
    program_scale,
    render_scale,
    startup,
    status_scale,
    watch_fanout,
)
from bench.measure import load_average, machine_summary
from bench.report import Row, markdown_table


class Benchmark(Protocol):
    @property
    def TITLE(self) -> str: ...

    @property
    def NOTE(self) -> str: ...

    def run(self, workdir: Path) -> list[Row]: ...


BENCHMARKS: Final[tuple[Benchmark, ...]] = (
    startup,
    program_scale,
    render_scale,
    status_scale,
    watch_fanout,
    logs_follow,
    engine_scale,
    engine_pods,
)


def slug(benchmark: Benchmark) -> str:
    return benchmark.TITLE.replace(" ", "-")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description="Run the benchmarks.")
    parser.add_argument(
        "--only", action="append", choices=[slug(b) for b in BENCHMARKS], help="run only this benchmark"
    )
    parser.add_argument(
        "--keep", type=Path, metavar="DIR", help="keep the generated stacks and outputs in DIR"
    )
    args = parser.parse_args(argv)
    chosen = [b for b in BENCHMARKS if not args.only or slug(b) in args.only]
    machine = machine_summary()
    began = time.perf_counter()
    rows: list[Row] = []
    durations: list[str] = []
    with tempfile.TemporaryDirectory(prefix="flyte-apps-bench-") as scratch:
        root = args.keep if args.keep is not None else Path(scratch)
        for benchmark in chosen:
            print(f"bench: {benchmark.TITLE} ...", file=sys.stderr, flush=True)
            start = time.perf_counter()
            rows += benchmark.run(root / slug(benchmark))
            took = time.perf_counter() - start
            durations.append(f"{benchmark.TITLE} {took:.0f} s")
            print(f"bench: {benchmark.TITLE} done in {took:.0f} s", file=sys.stderr)
    total = time.perf_counter() - began
    print(f"Machine: {machine}\n")
    print(markdown_table(rows))
    print()
    for benchmark in chosen:
        print(f"- {benchmark.NOTE}")
    print(f"- time taken: {total / 60:.1f} min ({', '.join(durations)})")
    print(f"- load average at the end: {load_average()}")


if __name__ == "__main__":
    main()
