"""Plugin hosts started through ``tests.support.hosts`` show their port in a shell without
``PYTHONUNBUFFERED``, and a host that shows none fails the test within the bound, with its stderr, instead
of hanging it (issue 36: ``make test`` hung for ever in such a shell)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

import grpc  # type: ignore[import-untyped]
from google.protobuf import empty_pb2
from pulumi.runtime.proto import provider_pb2_grpc

from tests.support.hosts import (
    NO_ENGINE,
    STOP_TIMEOUT_S,
    HostStartError,
    dynamic_provider_command,
    running_host,
)

INTERPRETER_SETTINGS: Final = ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE")
"""Settings of the caller's shell that change how a host's interpreter writes (the sandbox sets both)."""
BOUND_S: Final = 3.0
"""The port timeout of the hosts that never print one: long after a bare interpreter has started."""
CALL_TIMEOUT_S: Final = 30.0
HANG_GUARD_S: Final = BOUND_S + STOP_TIMEOUT_S + 10.0
"""How long a failing start may take before this test calls it a hang (the bound, the kill, slack)."""
SILENT_FOR_EVER: Final = "import sys, time; sys.stderr.write('no port today\\n'); time.sleep(600)"
EXITS_AT_ONCE: Final = "import sys; sys.stderr.write('cannot bind\\n'); sys.exit(3)"
EXIT_CODE: Final = 3


def shell_without_interpreter_settings() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name not in INTERPRETER_SETTINGS}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def start_failure(command: list[str], env: Mapping[str, str], cwd: Path) -> HostStartError:
    """The error of a host that must not start, caught on a thread so that a wait that is not bounded
    fails this test instead of hanging the suite."""
    failures: list[BaseException] = []

    def start() -> None:
        try:
            with running_host(command, cwd=cwd, env=env, timeout=BOUND_S):
                pass
        except BaseException as failure:  # handed to the test below
            failures.append(failure)

    run_on_thread(start)
    (failure,) = failures
    assert isinstance(failure, HostStartError), repr(failure)
    return failure


def run_on_thread(call: Callable[[], None]) -> None:
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive(), f"starting the host still waits after {HANG_GUARD_S}s"


def test_a_dynamic_provider_host_shows_its_port_in_a_shell_without_interpreter_settings(
    tmp_path: Path,
) -> None:
    with (
        running_host(
            dynamic_provider_command(), cwd=tmp_path, env=shell_without_interpreter_settings()
        ) as host,
        grpc.insecure_channel(host.address) as channel,
    ):
        stub = provider_pb2_grpc.ResourceProviderStub(channel)
        assert stub.GetPluginInfo(empty_pb2.Empty(), timeout=CALL_TIMEOUT_S).version

    assert not alive(host.pid), "the host outlived its block"


def test_a_dynamic_provider_host_without_dash_u_shows_no_port_even_when_the_shell_sets_unbuffered(
    tmp_path: Path,
) -> None:
    """The bug itself: the SDK writes the port without a flush, so only the engine's ``-u`` brings it
    out; ``PYTHONUNBUFFERED`` from the shell does not reach the host to hide that."""
    without_u = [sys.executable, "-m", "pulumi.dynamic", NO_ENGINE]
    env = {**shell_without_interpreter_settings(), "PYTHONUNBUFFERED": "1"}

    failure = start_failure(without_u, env, tmp_path)

    assert f"printed no port within {BOUND_S:g}s" in str(failure)
    assert not alive(failure.pid)


def test_a_host_that_never_prints_a_port_fails_within_the_bound_with_its_stderr(tmp_path: Path) -> None:
    failure = start_failure(
        [sys.executable, "-c", SILENT_FOR_EVER], shell_without_interpreter_settings(), tmp_path
    )

    assert f"printed no port within {BOUND_S:g}s" in str(failure)
    assert str(failure).endswith("no port today\n")
    assert not alive(failure.pid), "the host outlived its failed start"


def test_a_host_that_exits_before_printing_a_port_fails_with_its_exit_code_and_stderr(
    tmp_path: Path,
) -> None:
    failure = start_failure(
        [sys.executable, "-c", EXITS_AT_ONCE], shell_without_interpreter_settings(), tmp_path
    )

    assert f"exited with code {EXIT_CODE} before printing its port" in str(failure)
    assert str(failure).endswith("cannot bind\n")


def test_every_test_runs_without_the_shells_pythonunbuffered() -> None:
    """``neutral_environment`` (tests/conftest.py) removes it, so a shell that sets it cannot hide a
    child process whose output only arrives when it is set."""
    assert "PYTHONUNBUFFERED" not in os.environ
