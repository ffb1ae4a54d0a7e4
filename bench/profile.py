"""Where the CPU time of one run goes, sampled by py-spy (a dependency of the benchmarks only:
``bench/requirements.txt``, installed by ``make bench``).

py-spy samples a running interpreter from outside: no hook in every call (cProfile inflates code made
of many tiny calls, the Pulumi SDK's, by several times), every thread (the SDK calls its monitor
from a thread pool; the day-2 commands read in threads of their own) and, with ``--subprocesses``,
the Python children of the process it starts (the Pulumi language host's program). Idle threads are
left out, so a function's share is its share of the samples of running threads. ``record_argv`` is
the command that records one run in py-spy's raw (collapsed-stack) form; ``summary`` reads it::

    python -m bench.profile FILE   # the summary of a recording
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from bench.measure import REPO_ROOT

RATE_HZ: Final = 500
TOP: Final = 15
REQUIREMENTS: Final = "bench/requirements.txt"
_THREAD_FRAME: Final = ";thread ("
_OWN_LINE: Final = b"py-spy> "
"""How py-spy's own messages start: it writes them to the stdout it shares with the recorded command."""


class ProfilerMissing(SystemExit):
    """py-spy is not installed where the benchmarks run."""


def py_spy() -> str:
    """The py-spy of this interpreter's environment (else one on PATH)."""
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.is_file() else shutil.which("py-spy")
    if found is None:
        msg = f"py-spy is not installed: `make bench` installs it, or `pip install -r {REQUIREMENTS}`"
        raise ProfilerMissing(msg)
    return found


def record_argv(out: Path) -> list[str]:
    """The command prefix that runs a command under py-spy, its raw samples written to ``out``."""
    rate = str(RATE_HZ)
    return [
        py_spy(),
        "record",
        "--format",
        "raw",
        "--threads",
        "--subprocesses",
        "--rate",
        rate,
        "-o",
        str(out),
        "--",
    ]


def strip_profiler_lines(stdout: Path) -> None:
    """Remove py-spy's own messages (and the empty lines it writes around them) from a recorded command's
    stdout file: the benchmarks' commands write JSON, never an empty line."""
    with stdout.open("rb") as lines:
        kept = [line for line in lines if line.strip() and not line.startswith(_OWN_LINE)]
    stdout.write_bytes(b"".join(kept))


@dataclass
class Profile:
    samples: int = 0
    by_thread: Counter[str] = field(default_factory=Counter)
    by_package: Counter[str] = field(default_factory=Counter)
    self_time: Counter[str] = field(default_factory=Counter)
    total_time: Counter[str] = field(default_factory=Counter)

    def add(self, line: str) -> None:
        stack, _, count_text = line.rstrip("\n").rpartition(" ")
        if not stack or not count_text.isdigit():
            return
        count = int(count_text)
        cut = stack.find(_THREAD_FRAME)
        process, _, rest = (stack[:cut], "", stack[cut + 1 :]) if cut >= 0 else ("", "", stack)
        thread, *lines = rest.split(";")
        frames = [_function(frame) for frame in lines]
        self.samples += count
        self.by_thread[f"{_process_name(process)} {thread}".strip()] += count
        if frames:
            self.self_time[frames[-1]] += count
            self.by_package[_package(frames[-1])] += count
        for frame in set(frames):
            self.total_time[frame] += count

    def report(self, top: int = TOP) -> str:
        def table(title: str, counts: Counter[str]) -> list[str]:
            rows = [f"{100 * n / self.samples:5.1f}%  {name}" for name, n in counts.most_common(top)]
            return [title, *rows, ""]

        return "\n".join(
            [
                f"{self.samples:,} samples at {RATE_HZ} Hz of running threads",
                "",
                *table("by thread:", self.by_thread),
                *table("by package (where the sample was):", self.by_package),
                *table("top functions, self:", self.self_time),
                *table("top functions, total (the function or what it called):", self.total_time),
            ]
        )


def _process_name(frame: str) -> str:
    """``process 123:"python -m x"`` -> ``123 python -m x`` (shortened)."""
    text = frame.removeprefix("process ").replace('"', "")
    return text if len(text) <= 60 else text[:57] + "..."


def _function(frame: str) -> str:
    """``fn (path:12)`` -> ``fn (path)``: a function's samples on all its lines together."""
    name, _, where = frame.rpartition(" (")
    path, _, line = where.removesuffix(")").rpartition(":")
    return f"{name} ({path})" if name and path and line.isdigit() else frame


def _package(frame: str) -> str:
    """``fn (pulumi/runtime/rpc.py)`` -> ``pulumi``; the stdlib's modules and frozen ones by name."""
    where = frame.rpartition(" (")[2].rstrip(")")
    if where.startswith("<"):
        return where
    path = Path(where)
    if path.is_relative_to(REPO_ROOT):
        path = path.relative_to(REPO_ROOT)
    elif "site-packages" in path.parts:
        path = Path(*path.parts[path.parts.index("site-packages") + 1 :])
    return path.parts[0] if len(path.parts) > 1 else where


def summary(raw: Path, top: int = TOP) -> str:
    profile = Profile()
    with raw.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            profile.add(line)
    return profile.report(top)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.profile", description="Summarize a py-spy recording."
    )
    parser.add_argument("raw", type=Path, help="py-spy record --format raw output")
    parser.add_argument("--top", type=int, default=TOP)
    args = parser.parse_args(argv)
    print(summary(args.raw, args.top))


if __name__ == "__main__":
    main()
