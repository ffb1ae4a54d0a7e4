"""A small sampling profiler: where the CPU time of a run goes, by ``file:function``.

cProfile hooks every call, which inflates code made of many tiny calls (the Pulumi SDK's) by several
times and skews the shares. This samples instead: every 2 ms of CPU time (``SIGPROF``) it
records the stack of every thread (the Pulumi SDK makes its monitor calls from a thread pool),
weighted by the CPU time that thread used since the previous sample (its own CPU clock: a thread
blocked on the GIL or a queue weighs nothing), so a function's share is the fraction of the run's
CPU time spent in it (``self``) or under it (``total``). Linux only; for finding hot spots, never
inside timed runs::

    python -m bench.sampler [--stdout FILE] TARGET [ARGS...]

runs TARGET (a module, run as ``__main__``, or ``module:function``) with ARGS as its ``sys.argv``,
then prints the profile on stderr; ``bench.hotspots`` prepares the benchmark inputs and calls this.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import runpy
import signal
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType, FrameType, TracebackType
from typing import Final

INTERVAL_S: Final = 0.002
REPO_ROOT: Final = Path(__file__).resolve().parents[1]


@functools.cache
def code_key(code: CodeType) -> str:
    """``path:qualified_function``, the path relative to site-packages, the stdlib or the repository
    (cached: the signal handler must stay far below the sampling interval)."""
    return f"{short_path(code.co_filename)}:{code.co_qualname}"


def short_path(filename: str) -> str:
    if "site-packages/" in filename:
        return filename.rsplit("site-packages/", 1)[1]
    path = Path(filename)
    if path.is_relative_to(REPO_ROOT):
        return str(path.relative_to(REPO_ROOT))
    if "/lib/python3" in filename:
        return "stdlib/" + filename.rsplit("/lib/python3", 1)[1].split("/", 1)[-1]
    return filename


def package_of(key: str) -> str:
    """The top-level package (or repository directory) a ``code_key`` belongs to."""
    path = key.split(":", 1)[0]
    head = path.split("/", 1)[0]
    if head == "stdlib":
        rest = path.split("/")
        return "stdlib/" + rest[1] if len(rest) > 2 else "stdlib"
    return head.removesuffix(".py")


@dataclass
class Profile:
    """CPU seconds; ``self_`` counts the innermost frame, ``total`` every distinct frame on the stack."""

    samples: float = 0.0
    """CPU seconds sampled."""
    self_: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    total: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))

    def add(self, frame: FrameType, weight: float) -> None:
        self.samples += weight
        self.self_[code_key(frame.f_code)] += weight
        seen: set[str] = set()
        current: FrameType | None = frame
        while current is not None:
            key = code_key(current.f_code)
            if key not in seen:
                seen.add(key)
                self.total[key] += weight
            current = current.f_back

    def share(self, count: float) -> float:
        return count / self.samples if self.samples else 0.0

    def by_package(self) -> dict[str, float]:
        grouped: defaultdict[str, float] = defaultdict(float)
        for key, count in self.self_.items():
            grouped[package_of(key)] += count
        return grouped

    def report(self, *, top: int = 25, focus: tuple[str, ...] = ("components/", "__main__.py")) -> str:
        """Three lists: self time by package, total time of the project's own functions (``focus``),
        and the functions with the most total and self time overall."""
        lines = [f"{self.samples:.1f} s of CPU time sampled", "", "self time by package:"]
        lines += self._rows(self.by_package(), 12)
        lines += ["", "total time of project functions (includes what they call):"]
        lines += self._rows({k: n for k, n in self.total.items() if k.startswith(focus)}, top)
        lines += ["", "total time, all functions:", *self._rows(self.total, top)]
        lines += ["", "self time, all functions:", *self._rows(self.self_, top)]
        return "\n".join(lines)

    def _rows(self, counts: dict[str, float], top: int) -> list[str]:
        ranked = sorted(counts.items(), key=lambda item: -item[1])[:top]
        return [f"  {self.share(n):6.1%}  {key}" for key, n in ranked]


class Sampler:
    """``with Sampler() as s: ...`` then ``s.profile.report()``; enter it on the main thread (signal
    handlers run there), it samples every thread."""

    def __init__(self, interval_s: float = INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.profile = Profile()
        self._main = threading.main_thread().ident
        self._cpu: dict[int, float] = {}
        """Each thread's CPU clock at the previous sample."""
        self._sampling = False

    def __enter__(self) -> Sampler:
        self._cpu = {ident: _thread_cpu(ident) for ident in sys._current_frames()}
        signal.signal(signal.SIGPROF, self._on_signal)
        signal.setitimer(signal.ITIMER_PROF, self.interval_s, self.interval_s)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)

    def _on_signal(self, _signum: int, frame: FrameType | None) -> None:
        # A signal that arrives while the handler runs would re-enter it; skipping it loses nothing,
        # as the next sample is weighted by all the CPU time used since this one.
        if self._sampling:
            return
        self._sampling = True
        try:
            # The handler runs on the main thread; its own frame stands in for the main thread's
            # stack in sys._current_frames(), so use the interrupted frame it was handed instead.
            for ident, current in sys._current_frames().items():
                now = _thread_cpu(ident)
                used, self._cpu[ident] = now - self._cpu.get(ident, 0.0), now  # a new thread starts at 0
                stack = frame if ident == self._main else current
                if stack is not None and used > 0:
                    self.profile.add(stack, used)
        finally:
            self._sampling = False


def _thread_cpu(ident: int) -> float:
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(ident))
    except OSError:  # the thread has just ended
        return 0.0


def run_target(target: str) -> None:
    """Run ``module`` as ``__main__``, or call ``module:function``; a zero ``SystemExit`` is success."""
    module, _, function = target.partition(":")
    try:
        if function:
            getattr(importlib.import_module(module), function)()
        else:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sampler", description="Profile one run.")
    parser.add_argument("--stdout", type=Path, help="send the target's stdout to this file")
    parser.add_argument("--top", type=int, default=25, help="lines per list (default 25)")
    parser.add_argument("target", help="module (run as __main__) or module:function")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the target's arguments")
    ns = parser.parse_args(argv)
    sys.argv = [ns.target, *ns.args]
    with contextlib.ExitStack() as stack:
        if ns.stdout is not None:
            stack.enter_context(contextlib.redirect_stdout(stack.enter_context(ns.stdout.open("w"))))
        sampler = stack.enter_context(Sampler())
        run_target(ns.target)
    print(sampler.profile.report(top=ns.top), file=sys.stderr)


if __name__ == "__main__":
    main()
