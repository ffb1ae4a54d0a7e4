"""Exit codes and standard-output helpers of ``flyte-apps``, standard library only: ``main`` imports
this module (not ``common``) so that ``flyte-apps --help`` pays for neither the Kubernetes client nor
the core."""

from __future__ import annotations

import errno
import os
import select
import sys
from typing import Final

EXIT_OK: Final = 0
EXIT_NOT_FOUND: Final = 1
EXIT_USAGE: Final = 2
EXIT_CLUSTER: Final = 3
EXIT_DRIFT: Final = 4
EXIT_INTERRUPTED: Final = 130


def stdout_reader_gone() -> bool:
    """Whether standard output is a pipe whose reading end was closed (click turns the resulting
    ``EPIPE`` into exit 1; it is not a failure of ours)."""
    try:
        poller = select.poll()
        poller.register(sys.__stdout__.fileno() if sys.__stdout__ else 1, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def stop_if_reader_gone() -> None:
    """Raise ``BrokenPipeError`` when nobody reads standard output any more: a command calls it before
    writing anything else (a summary on stderr, more records), so that ``| head`` ends it quietly.

    Needed because a large write into a pipe that closes half-way can return without an error (the
    rest stays in Python's buffer until exit)."""
    if stdout_reader_gone():
        raise BrokenPipeError(errno.EPIPE, "standard output was closed by its reader")


def silence_stdout_if_reader_gone() -> None:
    if stdout_reader_gone():
        silence_stdout()


def silence_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass
