"""The processes the e2e harness starts, known by PID and start time, and stopped by them alone.

Every long-running process (etcd, the API server, Knative's, the relays, and a node's later) is started
by a ``Supervisor`` in a session of its own and recorded in ``DIR/state.json`` with its PID and start
time, so that ``down`` (this run's or another's, `make e2e-cluster-down`) signals exactly those
processes and never one that got a recorded PID after it exited. Commands the scenarios run to
completion (``run_bounded``) get a session of their own too, so a timeout or a Ctrl-C stops what they
started (a Pulumi CLI's plugins, each in a process group of its own) along with them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

REPO: Final = Path(__file__).resolve().parents[3]
LOOPBACK: Final = "127.0.0.1"
STATE_FILE: Final = "state.json"
PROXY_VARIABLES: Final = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")
STOP_GRACE_S: Final = 15.0
"""How long a recorded process gets between SIGTERM and SIGKILL."""
COMMAND_GRACE_S: Final = 10.0
"""How long a bounded command's process group gets between SIGTERM and SIGKILL."""
NETNS_PROBE_TIMEOUT_S: Final = 30.0
POLL_S: Final = 0.5
REAP_POLL_S: Final = 0.1
LOG_TAIL_LINES: Final = 8


class ClusterError(Exception):
    """The control plane could not be started, or is not running."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def clean_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without proxies (a proxy would see loopback traffic) or a caller's cluster."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k.upper() not in PROXY_VARIABLES and k not in ("KUBECONFIG", "PULUMI_HOME")
    }
    env.update(extra or {})
    return env


def wait_until(what: str, check: Callable[[], bool], timeout: float, alive: Callable[[], str | None]) -> None:
    """Poll ``check`` until it holds; ClusterError after ``timeout`` or if ``alive`` names a dead
    process (waiting on a part whose process died would only end at the timeout, saying less)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dead = alive()
        if dead:
            raise ClusterError(f"{dead} exited while waiting for {what}")
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(POLL_S)
    raise ClusterError(f"{what}: not ready after {timeout:.0f} s")


@dataclass
class Process:
    name: str
    pid: int
    argv: list[str]
    log: str
    started: int = 0
    """The process's start time (clock ticks since boot, /proc/<pid>/stat): a PID reused by another
    process after this one exited has another."""


@dataclass
class State:
    """What ``up`` started and where its files are (``DIR/state.json``): what a later ``down``, in
    another process, reads to stop exactly these processes."""

    workdir: str
    kubeconfig: str
    apiserver: str
    processes: list[Process] = field(default_factory=list)

    def save(self) -> None:
        data = {**self.__dict__, "processes": [p.__dict__ for p in self.processes]}
        Path(self.workdir, STATE_FILE).write_text(json.dumps(data, indent=2))

    @classmethod
    def load(cls, workdir: Path) -> State:
        path = workdir / STATE_FILE
        if not path.is_file():
            raise ClusterError(
                f"no control plane recorded in {workdir} "
                f"(run `python -m tests.e2e.cluster up --dir {workdir}`)"
            )
        data = json.loads(path.read_text())
        data["processes"] = [Process(**p) for p in data["processes"]]
        return cls(**data)


STAT_SESSION: Final = 3
STAT_UTIME: Final = 11
STAT_STIME: Final = 12
STAT_START: Final = 19
"""Indexes into ``live_stat``'s fields (``proc(5)``'s numbering less 3: the state is at 0)."""


def live_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after "pid (comm)" (comm may hold spaces), or None when no
    such process runs (gone, or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else fields


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), or None when no such process runs."""
    fields = live_stat(pid)
    return None if fields is None else int(fields[STAT_START])


def runs_recorded_command(process: Process) -> bool:
    """Whether the recorded process still runs (not another one that got its PID since)."""
    return start_time(process.pid) == process.started


def cpu_seconds(processes: Sequence[Process]) -> float:
    """The CPU time (user and system) the recorded processes that still run have used since they
    started, in seconds; one that has exited, or whose PID another process got since, counts nothing."""
    used = 0
    for process in processes:
        fields = live_stat(process.pid)
        if fields is not None and int(fields[STAT_START]) == process.started:
            used += int(fields[STAT_UTIME]) + int(fields[STAT_STIME])
    return used / os.sysconf("SC_CLK_TCK")


def stop_processes(processes: Sequence[Process]) -> None:
    """SIGTERM every recorded process (last started first), then SIGKILL what outlives the grace period."""
    live = [p for p in reversed(processes) if runs_recorded_command(p)]
    for p in live:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for p in live:
        while runs_recorded_command(p) and time.monotonic() < deadline:
            reap(p.pid)
            time.sleep(REAP_POLL_S)
        if runs_recorded_command(p):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
        reap(p.pid)


def reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM ignored for the block: a second Ctrl-C while processes are being stopped
    must not leave half of them running. The block must be bounded (``stop_processes`` is)."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def session_members(session: int) -> list[int]:
    """The live processes of ``session`` (a command started with ``start_new_session`` leads one, whose
    ID is its PID). What the command started stays in it even when it leads a process group of its
    own, as every plugin of a Pulumi CLI does (``cmdutil.RegisterProcessGroup``: ``Setpgid``), and
    after the command itself is gone."""
    members = []
    for entry in Path("/proc").iterdir():
        fields = live_stat(int(entry.name)) if entry.name.isdigit() else None
        if fields is not None and int(fields[STAT_SESSION]) == session:
            members.append(int(entry.name))
    return members


def kill_session(session: int) -> list[int]:
    """SIGKILL every live process of ``session``; wait (bounded) until none is left. The PIDs signalled."""
    members = session_members(session)
    for pid in members:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + COMMAND_GRACE_S
    while session_members(session) and time.monotonic() < deadline:  # a zombie is not a member
        time.sleep(REAP_POLL_S)
    return members


def stop_group(child: subprocess.Popen[str]) -> None:
    """Stop ``child`` and everything it started (it leads a session: ``start_new_session``): SIGTERM to
    its process group, then, after the grace period or once it has ended, SIGKILL to whatever is left
    of its session: a Pulumi CLI's plugins run in process groups of their own, which SIGKILL to the
    CLI's group does not reach."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=COMMAND_GRACE_S)
    kill_session(child.pid)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=COMMAND_GRACE_S)


def run_bounded(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` with output captured, in a session of its own: on a timeout (raised as
    ``subprocess.TimeoutExpired``), an exception or a Ctrl-C the whole process group is stopped, not
    only ``argv[0]`` (``subprocess.run`` would SIGKILL the CLI and leave its plugins running)."""
    child = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = child.communicate(stdin, timeout=timeout)
    except BaseException:
        stop_group(child)
        raise
    return subprocess.CompletedProcess(list(argv), child.returncode, out, err)


def run_checked(
    argv: Sequence[str], *, what: str, timeout: float, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``run_bounded``, failing with ``ClusterError`` that names ``what`` and says the command's own
    complaint (its stderr, else its stdout) when it exits non-zero."""
    done = run_bounded(argv, timeout=timeout, cwd=cwd)
    if done.returncode != 0:
        msg = f"{what}: {done.stderr.strip() or done.stdout.strip() or f'exit {done.returncode}'}"
        raise ClusterError(msg)
    return done


def network_namespace_prefix() -> list[str]:
    """``unshare`` for a network namespace of its own: as root directly, else inside a user namespace."""
    candidates = [["unshare", "--net"], ["unshare", "--user", "--map-root-user", "--net"]]
    errors = []
    for prefix in candidates:
        probe = subprocess.run(
            [*prefix, "true"], capture_output=True, text=True, timeout=NETNS_PROBE_TIMEOUT_S, check=False
        )
        if probe.returncode == 0:
            return prefix
        errors.append(f"`{' '.join(prefix)}`: {probe.stderr.strip() or probe.returncode}")
    raise ClusterError(
        "Knative's processes need network namespaces of their own (two of them bind :8080 on every "
        "interface), and none can be made here: " + "; ".join(errors)
    )


class Supervisor:
    """Starts long-running processes for one work directory and records each in its ``State``.

    Every part of a cluster (the control plane, Knative, a node's runtime and kubelet later) starts
    its processes through the one supervisor, so ``stop`` and a later ``down`` stop all of them.
    """

    def __init__(self, state: State, logs: Path) -> None:
        self.state = state
        self.logs = logs
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    def start(self, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> Process:
        """Start ``argv`` in a session of its own (``down`` signals its group), logging to logs/<name>.log."""
        log = self.logs / f"{name}.log"
        with log.open("ab") as out:
            child = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=clean_environment({"PYTHONPATH": str(REPO), **(env or {})}),
                cwd=self.state.workdir,
                start_new_session=True,
            )
        self._children[child.pid] = child
        process = Process(name, child.pid, argv, str(log), start_time(child.pid) or 0)
        self.state.processes.append(process)
        self.state.save()
        return process

    def dead(self) -> str | None:
        """The first recorded process that is no longer running, with its log's last lines."""
        for p in self.state.processes:
            child = self._children.get(p.pid)
            if (child is not None and child.poll() is not None) or (
                child is None and not runs_recorded_command(p)
            ):
                log = Path(p.log)
                tail = log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:] if log.exists() else []
                return f"{p.name} (pid {p.pid})" + ("; its log ends:\n  " + "\n  ".join(tail) if tail else "")
        return None

    def retire(self, name: str) -> None:
        """Stop the processes recorded under ``name``, by PID, and forget them: a part that moves
        elsewhere (Knative's autoscaler, into a pod on a node) is not a process that died."""
        leaving = [p for p in self.state.processes if p.name == name]
        stop_processes(leaving)
        self.state.processes = [p for p in self.state.processes if p.name != name]
        for process in leaving:
            self._children.pop(process.pid, None)
        self.state.save()

    def stop(self) -> None:
        """Stop every recorded process, by PID, and keep in the record only what still runs."""
        stop_processes(self.state.processes)
        for child in self._children.values():
            with contextlib.suppress(Exception):
                child.wait(timeout=1)
        self.state.processes = [p for p in self.state.processes if runs_recorded_command(p)]
        self.state.save()
