"""The run's cgroups: one subtree, in every mounted hierarchy, that holds every process the node
starts (its own processes, containerd's shims, and kubelet's pods below ``cgroupRoot``), so ``down``
finds and stops all of them by the PIDs in it, then removes it.

On this machine (cgroup v1, hybrid: the v2 hierarchy is mounted at ``/sys/fs/cgroup/unified``) the
runner sits at ``/`` in most hierarchies but in a cgroup of the machinery's in another (memory:
``/process_api/<id>``). Kubelet's cgroupfs driver uses one ``cgroupRoot`` path in every hierarchy, so
the run's root is that deepest cgroup plus a name of its own: the node's processes stay inside the
cgroups the runner was given, and in the hierarchies where that path did not exist the directories
are created and recorded (``created``), and removed by ``down``. runc (1.1, cgroupfs) creates the
pods' cgroups in the v2 hierarchy too (seen: a container's cgroup appears in ``unified``), so every
hierarchy, v2 included, is covered.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

CGROUP_V1: Final = "cgroup"
CGROUP_V2: Final = "cgroup2"
FREEZER: Final = "freezer"
CPUSET: Final = "cpuset"
CPUSET_FILES: Final = ("cpuset.cpus", "cpuset.mems")
PROCS: Final = "cgroup.procs"
EMPTY_WAIT_S: Final = 30.0
FREEZE_WAIT_S: Final = 10.0
POLL_S: Final = 0.1


class CgroupError(Exception):
    """The run's cgroups cannot be made, emptied or removed."""


@dataclass(frozen=True)
class Hierarchy:
    """One mounted cgroup hierarchy."""

    mountpoint: Path
    version: int
    controllers: frozenset[str]
    """v1: the mount's controllers (``cpu``, ``name=systemd``); v2: empty."""

    def path(self, cgroup: str) -> Path:
        return self.mountpoint / cgroup.lstrip("/")


def hierarchies(mountinfo: str | None = None) -> list[Hierarchy]:
    """The cgroup hierarchies mounted here, each at its root (a bind of a sub-cgroup is refused)."""
    text = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
    found = []
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        fstype = tail[0]
        if fstype not in (CGROUP_V1, CGROUP_V2):
            continue
        if fields[3] != "/":
            msg = f"cgroup hierarchy at {fields[4]} is mounted from {fields[3]}, not its root"
            raise CgroupError(msg)
        options = frozenset(tail[2].split(",")) if len(tail) > 2 else frozenset()
        controllers = options - {"rw", "ro"}  # v1 super options: its controllers (and name=...)
        version = 2 if fstype == CGROUP_V2 else 1
        found.append(Hierarchy(Path(fields[4]), version, frozenset() if version == 2 else controllers))
    return found


def own_cgroups(proc_cgroup: str | None = None) -> dict[frozenset[str], str]:
    """This process's cgroup per hierarchy (controllers -> path; v2 under the empty set)."""
    text = Path("/proc/self/cgroup").read_text() if proc_cgroup is None else proc_cgroup
    found = {}
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        found[frozenset(c for c in controllers.split(",") if c)] = path
    return found


def runner_path(hierarchy: Hierarchy, own: dict[frozenset[str], str]) -> str:
    """Where this process is in ``hierarchy``."""
    for controllers, path in own.items():
        if hierarchy.version == 2 and not controllers:
            return path
        if hierarchy.version == 1 and controllers and controllers <= hierarchy.controllers:
            return path
    msg = f"this process is in no cgroup of the hierarchy at {hierarchy.mountpoint}"
    raise CgroupError(msg)


def deepest_common(paths: Iterable[str]) -> str:
    """The deepest of ``paths`` when every other is an ancestor of it (else CgroupError): the one
    path that is within the runner's cgroup in every hierarchy."""
    ordered = sorted({p.rstrip("/") or "/" for p in paths}, key=len)
    deepest = ordered[-1]
    for path in ordered:
        if not (path == "/" or deepest == path or deepest.startswith(path + "/")):
            msg = f"the runner's cgroups {ordered} do not nest; no cgroupRoot fits all hierarchies"
            raise CgroupError(msg)
    return deepest


@dataclass
class CgroupTree:
    """The run's subtree: ``root`` in every hierarchy; ``created`` lists each directory made (also
    ancestors that did not exist), so removal takes exactly those."""

    root: str
    created: list[str]

    @classmethod
    def plan(cls, name: str) -> CgroupTree:
        """The root for a run called ``name``: below the runner's deepest cgroup."""
        own = own_cgroups()
        base = deepest_common(runner_path(h, own) for h in hierarchies())
        return cls(root=f"{base.rstrip('/')}/{name}", created=[])

    def create(self, *children: str) -> None:
        """``root`` and ``root/<child>`` in every hierarchy; cpuset levels get their parent's CPUs
        and memory nodes (a v1 cpuset starts empty and takes no process)."""
        for hierarchy in hierarchies():
            for cgroup in (self.root, *(f"{self.root}/{c}" for c in children)):
                self._make(hierarchy, cgroup)

    def _make(self, hierarchy: Hierarchy, cgroup: str) -> None:
        parts = [p for p in cgroup.split("/") if p]
        for depth in range(1, len(parts) + 1):
            path = hierarchy.path("/".join(parts[:depth]))
            if path.is_dir():
                continue
            path.mkdir()
            self.created.append(str(path))
            if CPUSET in hierarchy.controllers:
                for name in CPUSET_FILES:
                    (path / name).write_text((path.parent / name).read_text())

    def procs_files(self, child: str) -> list[Path]:
        """The ``cgroup.procs`` of ``root/<child>`` in every hierarchy: writing a PID to each puts
        that process (and what it starts later) there."""
        return [h.path(f"{self.root}/{child}") / PROCS for h in hierarchies()]

    def pids(self) -> set[int]:
        """Every process in the subtree, in any hierarchy."""
        found: set[int] = set()
        for hierarchy in hierarchies():
            top = hierarchy.path(self.root)
            if not top.is_dir():
                continue
            for directory, _, files in os.walk(top):
                if PROCS in files:
                    with contextlib.suppress(OSError):
                        found.update(int(p) for p in (Path(directory) / PROCS).read_text().split())
        return found

    def directories(self) -> list[Path]:
        """Every directory of the subtree that exists, deepest first."""
        found = []
        for hierarchy in hierarchies():
            top = hierarchy.path(self.root)
            if top.is_dir():
                found += [Path(d) for d, _, _ in os.walk(top, topdown=False)]
        return found

    def kill(self) -> None:
        """SIGKILL every process in the subtree, frozen first (v1 freezer) so none forks in between;
        CgroupError if any is left after ``EMPTY_WAIT_S``."""
        freezer = next((h for h in hierarchies() if FREEZER in h.controllers), None)
        state = freezer.path(self.root) / "freezer.state" if freezer else None
        if state is not None and state.exists():
            state.write_text("FROZEN")
            deadline = time.monotonic() + FREEZE_WAIT_S
            while state.read_text().strip() != "FROZEN" and time.monotonic() < deadline:
                time.sleep(POLL_S)
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if state is not None and state.exists():
            state.write_text("THAWED")
        deadline = time.monotonic() + EMPTY_WAIT_S
        while self.pids() and time.monotonic() < deadline:
            for pid in self.pids():
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
            time.sleep(POLL_S)
        left = self.pids()
        if left:
            msg = f"processes {sorted(left)} are still in {self.root} after SIGKILL"
            raise CgroupError(msg)

    def remove(self) -> list[str]:
        """Remove the subtree (deepest first) and the ancestors this tree created; what could not be
        removed, named."""
        left = []
        for directory in self.directories():
            try:
                directory.rmdir()
            except OSError as exc:
                left.append(f"{directory}: {exc.strerror}")
        for created in reversed(self.created):
            path = Path(created)
            if path.is_dir():
                try:
                    path.rmdir()
                except OSError as exc:
                    left.append(f"{path}: {exc.strerror}")
        return left

    def leftovers(self) -> list[str]:
        """What of the tree (and the ancestors it created) still exists."""
        return [str(d) for d in self.directories()] + [c for c in self.created if Path(c).is_dir()]
