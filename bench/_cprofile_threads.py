"""cProfile of every thread of a run, timed by each thread's own CPU clock::

    python -m bench._cprofile_threads [--out FILE.prof] [--top N] TARGET [ARGS...]

runs TARGET (a module, run as ``__main__``, or ``module:function``, as ``bench.sampler`` does) with
ARGS as its ``sys.argv``. ``python -m cProfile`` sees only the main thread, and the day-2 commands do
their work in others (the watch hub's thread, log readers, subscribers), so every thread started
during the run gets its own ``cProfile.Profile(time.thread_time)``: time a thread spends waiting (for
the GIL, a lock, the network) is not counted, and a function's share is its share of the CPU time
of all threads. Threads still running when TARGET returns are left out. The merged ``pstats`` go to
FILE; the report (top functions by self and by total time, ``file:line(function)``) to stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.sampler import run_target, short_path

_Key = tuple[str, int, str]


def _label(key: _Key) -> str:
    filename, line, function = key
    return f"{short_path(filename)}:{line}({function})"


def report(stats: pstats.Stats, *, top: int, focus: tuple[str, ...] = ("components/", "bench/")) -> str:
    """Top functions by self time, by total time, and the project's own functions by total time."""
    table: dict[_Key, tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    total = sum(float(row[2]) for row in table.values()) or 1.0
    by_self = sorted(table.items(), key=lambda item: -float(item[1][2]))[:top]
    by_total = sorted(table.items(), key=lambda item: -float(item[1][3]))
    ours = [item for item in by_total if short_path(item[0][0]).startswith(focus)][:top]
    lines = [f"{total:.2f} s of CPU time (all threads, cProfile overhead included)", "", "self time:"]
    lines += [
        f"  {float(row[2]) / total:6.1%}  {int(row[1]):>9} calls  {_label(key)}" for key, row in by_self
    ]
    lines += ["", "total time (includes callees; threads summed, so shares can exceed 100%):"]
    lines += [f"  {float(row[3]) / total:6.1%}  {_label(key)}" for key, row in by_total[:top]]
    lines += ["", "total time of project functions:"]
    lines += [f"  {float(row[3]) / total:6.1%}  {_label(key)}" for key, row in ours]
    return "\n".join(lines)


def profile_run(target: str) -> pstats.Stats:
    """Run ``target`` with every thread profiled; the merged statistics."""
    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()
    original: Callable[[threading.Thread], None] = threading.Thread.run

    def profiled(thread: threading.Thread) -> None:
        profile = cProfile.Profile(time.thread_time)
        profile.enable()
        try:
            original(thread)
        finally:
            profile.disable()
            with lock:
                profiles.append(profile)

    threading.Thread.run = profiled  # type: ignore[method-assign,assignment]
    main = cProfile.Profile(time.thread_time)
    main.enable()
    try:
        run_target(target)
    finally:
        main.disable()
        threading.Thread.run = original  # type: ignore[method-assign,assignment]
    stats = pstats.Stats(main)
    with lock:
        for profile in profiles:
            stats.add(profile)
    return stats


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._cprofile_threads", description="Profile one run.")
    parser.add_argument("--out", type=Path, help="write the merged pstats here")
    parser.add_argument("--top", type=int, default=25, help="lines per list (default 25)")
    parser.add_argument("target", help="module (run as __main__) or module:function")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the target's arguments")
    ns = parser.parse_args(argv)
    sys.argv = [ns.target, *ns.args]
    stats = profile_run(ns.target)
    if ns.out is not None:
        stats.dump_stats(ns.out)
    print(report(stats, top=ns.top), file=sys.stderr)


if __name__ == "__main__":
    main()
