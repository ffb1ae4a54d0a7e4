"""Run one command in a fresh process and measure it: wall time, CPU time and peak RSS of that process;
run ours and a floor in interleaved rounds; keep a benchmark within its time cap.

``bench/launcher.py`` starts the command and reaps it with ``os.wait4``, which returns the resource
usage of exactly that child (``RUSAGE_CHILDREN`` would give the maximum over all children so far);
the launcher's docstring says why it sits in between.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, TypeVar

T = TypeVar("T")

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
ROUNDS: Final = 3
"""Runs of each side per size: the table shows their median and spread."""
VENV_BIN: Final = Path(sys.executable).parent
"""The ``bin`` directory of the interpreter running the benchmarks (``.venv/bin`` under ``make bench``)."""
LAUNCHER: Final = Path(__file__).with_name("launcher.py")
KIB: Final = 1024
_SCRUBBED_ENV: Final = ("PULUMI_CONFIG", "PULUMI_CONFIG_SECRET_KEYS")
"""Config the Pulumi SDK would read from the environment on top of the mocks' config."""


class CommandFailed(RuntimeError):
    """A measured command exited non-zero; the message ends with the tail of its stderr."""


@dataclass(frozen=True)
class Measurement:
    wall_s: float
    cpu_s: float
    """User plus system time of the process (all its threads)."""
    peak_rss_mib: float
    stdout: Path


def run_measured(argv: Sequence[str], *, stdout: Path) -> Measurement:
    """Run ``argv`` in the repository root with stdout to the file ``stdout``; raise ``CommandFailed``
    if it exits non-zero (its stderr is kept next to ``stdout``)."""
    child_env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
    stderr_path = stdout.with_suffix(stdout.suffix + ".stderr")
    usage_path = stdout.with_suffix(stdout.suffix + ".usage.json")
    launcher = [sys.executable, "-I", "-S", str(LAUNCHER), str(usage_path)]
    with stdout.open("wb") as out, stderr_path.open("wb") as err:
        launched = subprocess.run(
            [*launcher, *argv], cwd=REPO_ROOT, env=child_env, stdout=out, stderr=err, check=False
        )
    usage = json.loads(usage_path.read_text(encoding="utf-8")) if launched.returncode == 0 else {}
    if usage.get("exit") != 0:
        tail = stderr_path.read_text(encoding="utf-8", errors="replace")[-3000:]
        msg = f"{' '.join(argv)} exited {usage.get('exit', launched.returncode)}:\n{tail}"
        raise CommandFailed(msg)
    # Linux reports ru_maxrss in KiB (macOS in bytes).
    rss_kib = usage["maxrss"] / KIB if sys.platform == "darwin" else usage["maxrss"]
    return Measurement(
        wall_s=float(usage["wall_s"]), cpu_s=float(usage["cpu_s"]), peak_rss_mib=rss_kib / KIB, stdout=stdout
    )


def machine_summary() -> str:
    """One line: cores (as ``nproc`` counts them), memory (total and available, as ``free`` reports
    them), Python, OS, date and the load average."""
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / KIB**3
    return (
        f"nproc {len(os.sched_getaffinity(0))}, {mem_gib:.1f} GiB RAM ({_available_gib()} available), "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {load_average()} at the start"
    )


def _available_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemAvailable:"):
                return f"{int(line.split()[1]) / KIB**2:.1f} GiB"
    except OSError:
        pass
    return "?"


def load_average() -> str:
    """1, 5 and 15 minute load averages: other work on the machine shows up in wall times."""
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def interleaved(sides: Sequence[Callable[[int], T]], rounds: int = ROUNDS) -> list[list[T]]:
    """Run every side once per round, in order (ours, floor, ours, floor, ...): a change of machine
    load hits each side about alike. ``sides[i](round)`` makes one run; the result holds each side's
    runs in round order."""
    results: list[list[T]] = [[] for _ in sides]
    for round_ in range(rounds):
        for runs, side in zip(results, sides, strict=True):
            runs.append(side(round_))
    return results


@dataclass
class Budget:
    """A benchmark's time cap. A size is started only if its projected time fits what is left, so
    the benchmark reports the largest size it reached instead of overrunning ``make bench``."""

    seconds: float
    started: float = field(default_factory=time.perf_counter)

    def spent(self) -> float:
        return time.perf_counter() - self.started

    def left(self) -> float:
        return self.seconds - self.spent()

    def fits(self, projected_s: float) -> bool:
        return projected_s <= self.left()


def progress(message: str) -> None:
    """One line of progress on stderr (results go to stdout)."""
    print(f"bench: {message}", file=sys.stderr, flush=True)
