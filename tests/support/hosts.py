"""Plugin hosts (the dynamic provider, the component package's plugin, the policy pack) started the way
the Pulumi engine starts them, with every wait bounded.

The engine starts a plugin, reads the port it prints as its first line on stdout, then speaks gRPC to
it. Two ways that handshake hangs a test for ever (issue 36): a host started without the flags the engine
gives it (``python -m pulumi.dynamic`` without ``-u`` leaves its port in a block buffer when stdout is a
pipe, and ``readline`` waits), and a failure path that reads a living host's stderr pipe to its end. So
the commands below are the engine's own, the port is read with a deadline, stderr goes to a temporary
file that is read only after the host is killed, and the host is killed by its PID however the block
ends.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

NO_ENGINE: Final = "127.0.0.1:1"
"""The engine address the hosts are given: nothing listens there, and none of the calls the tests make
(GetSchema, Analyze, the dynamic provider's CRUD) reaches the engine; the hosts only record it."""
PORT_TIMEOUT_S: Final = 60.0
"""How long a host may take to print its port (imports of grpc, pulumi and the project on a busy machine)."""
STOP_TIMEOUT_S: Final = 10.0
"""How long a killed host may take to be reaped."""
STDERR_TAIL_BYTES: Final = 4000
"""How much of a failed host's stderr goes into the error: the end, where the traceback's cause is."""
READ_CHUNK: Final = 4096
UNBUFFERED_SETTING: Final = "PYTHONUNBUFFERED"
"""Removed from every host's environment: a host must show its port through the flags the engine gives
it, not through a setting of the shell that runs the tests (a shell that sets it hid issue 36)."""
LOOPBACK: Final = "127.0.0.1"
KILLED: Final = -signal.SIGKILL
"""``Popen.returncode`` of a host :func:`stop` killed."""


def dynamic_provider_command(engine: str = NO_ENGINE) -> list[str]:
    """What the Python SDK's ``pulumi-resource-pulumi-python`` script runs for a dynamic provider:
    ``python -u -m pulumi.dynamic`` with the engine's arguments. ``-u`` is needed: the SDK writes the
    port without a flush."""
    return [sys.executable, "-u", "-m", "pulumi.dynamic", engine]


def component_plugin_command(plugin_dir: Path, engine: str = NO_ENGINE) -> list[str]:
    """What the Python language host's ``RunPlugin`` runs for a plugin directory with a ``__main__.py``:
    ``python <dir> <engine>``, without ``-u`` (the provider SDK flushes the port itself, so a plugin that
    did not would hang here as it would hang the engine)."""
    return [sys.executable, str(plugin_dir), engine]


def policy_pack_command(pack_dir: Path, engine: str = NO_ENGINE) -> list[str]:
    """What the Python language host's ``RunPlugin`` runs for a policy pack (kind analyzer), in the
    pack's directory: ``python -u -m pulumi.policy <engine> <pack dir>``; pulumi-policy writes the port
    without a flush."""
    return [sys.executable, "-u", "-m", "pulumi.policy", engine, str(pack_dir)]


class HostStartError(Exception):
    """A host printed no port: it exited, printed something else, or ran out of time. The message
    carries the command, what it printed and the end of its stderr."""

    def __init__(self, message: str, *, pid: int) -> None:
        super().__init__(message)
        self.pid = pid
        """The host's process, already killed and reaped."""


@dataclass(frozen=True)
class RunningHost:
    pid: int
    port: int

    @property
    def address(self) -> str:
        """Where the host serves gRPC (every host here binds the loopback address)."""
        return f"{LOOPBACK}:{self.port}"


@contextmanager
def running_host(
    command: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float = PORT_TIMEOUT_S
) -> Iterator[RunningHost]:
    """Start ``command`` in ``cwd`` with ``env`` (less ``PYTHONUNBUFFERED``) and no stdin, as the engine
    does, and yield it once it has printed its port; it is killed when the block ends. Raises
    :class:`HostStartError` when no port comes within ``timeout`` seconds."""
    environment = {name: value for name, value in env.items() if name != UNBUFFERED_SETTING}
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        try:
            assert process.stdout is not None
            line = first_line(process.stdout, timeout)
            if not (line.endswith(b"\n") and line.strip().isdigit()):
                stop(process)  # first: its stderr is complete only once it is gone
                raise HostStartError(
                    failure_message(command, line, process.returncode, timeout, tail(stderr)), pid=process.pid
                )
            yield RunningHost(pid=process.pid, port=int(line))
        finally:
            stop(process)


def first_line(stdout: IO[bytes], timeout: float) -> bytes:
    """The first line the host prints, newline included; without one, what it printed before it closed
    stdout or ``timeout`` passed. Reads the pipe's descriptor only when it is readable, so the wait ends
    at the deadline whatever the host does."""
    descriptor = stdout.fileno()
    deadline = time.monotonic() + timeout
    printed = b""
    with selectors.DefaultSelector() as selector:
        selector.register(descriptor, selectors.EVENT_READ)
        while b"\n" not in printed:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(timeout=left):
                return printed
            chunk = os.read(descriptor, READ_CHUNK)
            if not chunk:
                return printed
            printed += chunk
    return printed[: printed.index(b"\n") + 1]


def stop(process: subprocess.Popen[bytes]) -> None:
    """Kill the host by its PID (a no-op once it is reaped) and reap it within a bound."""
    if process.poll() is None:
        process.kill()
    process.wait(timeout=STOP_TIMEOUT_S)
    if process.stdout is not None:
        process.stdout.close()


def tail(stderr: IO[bytes]) -> str:
    """The last ``STDERR_TAIL_BYTES`` of a stopped host's stderr."""
    size = stderr.seek(0, os.SEEK_END)
    stderr.seek(max(0, size - STDERR_TAIL_BYTES))
    return stderr.read().decode("utf-8", "replace")


def failure_message(
    command: Sequence[str], printed: bytes, returncode: int, timeout: float, stderr: str
) -> str:
    """Why a stopped host gave no port. A host killed by :func:`stop` was still running; any other
    status is its own exit (a kill lands on a host that is already exiting without changing its status)."""
    if printed.endswith(b"\n"):
        why = "printed something other than its port"
    elif returncode == KILLED:
        why = f"printed no port within {timeout:g}s"
    else:
        why = f"exited with code {returncode} before printing its port"
    return f"{' '.join(command)} {why}; its stdout: {printed!r}; the end of its stderr:\n{stderr}"
