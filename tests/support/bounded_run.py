"""Run a command with its wall time and peak memory bounded by the harness, not by the test.

:func:`run_bounded` kills the process when ``timeout`` passes (the test then fails on its exit
status, never waits on a hang) and reports the process's own peak resident memory, read from
``wait4`` for that one child: a test states the bound it needs ("at most 400 MiB") rather than a
duration it expects.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

KIB = 1024


@dataclass(frozen=True)
class BoundedRun:
    returncode: int
    stdout: str
    stderr: str
    peak_rss: int
    """Bytes: the child's maximum resident set size."""
    killed: bool
    """The harness killed it when its time ran out."""


def run_bounded(argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None) -> BoundedRun:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            process.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        return BoundedRun(
            returncode=process.returncode,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
            peak_rss=usage.ru_maxrss * KIB,
            killed=killed.is_set(),
        )
