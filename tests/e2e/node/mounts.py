"""The node's mount namespace: where containerd, kubelet and everything they start see a machine
they cannot change.

A holder process (``python -m tests.e2e.node _holder``) is started under ``unshare --mount
--propagation private``, so no mount made inside ever propagates to the machine, and before it says
it is ready it:

1. bind-mounts the work directory onto itself (a mount of its own, writable after step 4);
2. bind-mounts directories of the work directory over ``/run``, ``/var/lib`` and ``/var/log``: what
   containerd and kubelet write to fixed paths there (shim sockets ``/run/containerd/s``, kubelet's
   ``/var/log/containers`` links, libcni's ``/var/lib/cni`` cache) stays in the work directory;
3. bind-mounts, over each ``/proc/sys`` file kubelet checks (``configs.PROTECTED_KERNEL_DEFAULTS``),
   a file holding the value kubelet wants, so that with ``protectKernelDefaults: true`` it starts
   and writes none of them (the machine keeps ``kernel.panic=1``, ``vm.overcommit_memory=0``, ...);
4. remounts ``/`` read-only in the namespace: anything that would still write elsewhere on the
   machine fails loudly instead.

Every other process joins the namespace with ``nsenter --mount=/proc/<holder>/ns/mnt``. When the
last process in it exits the namespace goes, and every mount made in it (overlay root filesystems,
pod volumes, network namespace pins) goes with it: ``down`` checks no process is left in it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

SHADOWED_DIRECTORIES: Final = ("/run", "/var/lib", "/var/log")
READY_FILE: Final = "holder.ready"
SYSCTL_DIR: Final = "sysctl"
MOUNT_TIMEOUT_S: Final = 30.0


def host_directory(host: Path, target: str) -> Path:
    """The work directory's stand-in for ``target`` (``/var/lib`` -> ``host/var-lib``)."""
    return host / target.strip("/").replace("/", "-")


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True, timeout=MOUNT_TIMEOUT_S)


def check_workdir(workdir: Path) -> None:
    """The work directory must not be under a directory the namespace hides."""
    for target in SHADOWED_DIRECTORIES:
        if workdir == Path(target) or Path(target) in workdir.parents:
            msg = f"the node's work directory {workdir} is under {target}, which its mount namespace replaces"
            raise ValueError(msg)


def prepare(workdir: Path, host: Path, shadows: Mapping[str, str]) -> None:
    """Steps 1-4 above, in the caller's (new, private) mount namespace."""
    check_workdir(workdir)
    mount("--bind", str(workdir), str(workdir))
    for target in SHADOWED_DIRECTORIES:
        source = host_directory(host, target)
        source.mkdir(parents=True, exist_ok=True)
        mount("--bind", str(source), target)
    shadow_dir = host / SYSCTL_DIR
    for key, value in shadows.items():
        shadow = shadow_dir / key
        shadow.parent.mkdir(parents=True, exist_ok=True)
        shadow.write_text(f"{value}\n")
        mount("--bind", str(shadow), f"/proc/sys/{key}")
    mount("-o", "remount,bind,ro", "/")


def holder_main(workdir: Path, host: Path, shadows: Mapping[str, str]) -> int:
    """The holder: prepare the namespace, say so (``READY_FILE`` holds the namespace's inode), then
    wait for SIGTERM or SIGINT."""
    stop = False

    def on_signal(_signum: int, _frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    prepare(workdir, host, shadows)
    (host / READY_FILE).write_text(namespace_id(os.getpid()) + "\n")
    while not stop:
        signal.pause()
    return 0


def namespace_id(pid: int, kind: str = "mnt") -> str:
    """``mnt:[4026531841]``: the namespace ``pid`` is in (its inode names it machine-wide)."""
    return os.readlink(f"/proc/{pid}/ns/{kind}")


def enter_argv(holder_pid: int, workdir: Path) -> list[str]:
    """The prefix that runs a command in the holder's mount namespace."""
    return ["nsenter", f"--mount=/proc/{holder_pid}/ns/mnt", f"--wd={workdir}", "--"]


def processes_in(namespace: str, kind: str = "mnt") -> list[int]:
    """Every process in the namespace ``namespace`` (as ``namespace_id`` names it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.readlink(entry / "ns" / kind) == namespace:
                found.append(int(entry.name))
    return sorted(found)


def mount_table() -> list[tuple[str, str, str]]:
    """This process's mounts (mount point, file system type, source), from /proc/self/mountinfo."""
    table = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        table.append((fields[4], tail[0], tail[1] if len(tail) > 1 else ""))
    return table


def new_mounts(before: Sequence[Sequence[str]], after: Sequence[Sequence[str]]) -> list[str]:
    """The mounts in ``after`` that ``before`` did not have (each named by its mount point)."""
    known = {tuple(m) for m in before}
    return [f"{m[0]} ({m[1]} {m[2]})" for m in after if tuple(m) not in known]
