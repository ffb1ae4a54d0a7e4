"""The machine's kernel settings, read before, during and after a node runs: none may move.

kubelet writes six global sysctls unless ``protectKernelDefaults`` (``configs.PROTECTED_KERNEL_DEFAULTS``),
kube-proxy writes ``nf_conntrack_max`` and the conntrack hash size unless ``conntrack.maxPerCore:
0``; the node is configured so neither does, and this module is how that is checked rather than
assumed: every readable file under the non-network parts of ``/proc/sys`` (read in the caller's
mount namespace, where no shadow is mounted), plus the few network settings that are global (read
from inside a network namespace, a per-namespace key shows that namespace's value, so those are
left out: the node's own namespace is its to change) and the conntrack hash size in ``/sys``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Final

PROC_SYS: Final = Path("/proc/sys")
GLOBAL_PARTS: Final = ("kernel", "vm", "fs", "user", "dev", "debug", "abi")
GLOBAL_NETWORK_KEYS: Final = ("net/netfilter/nf_conntrack_max", "net/nf_conntrack_max")
"""Global although under net/ (a network namespace other than the first reads the global value)."""
GLOBAL_FILES: Final = (Path("/sys/module/nf_conntrack/parameters/hashsize"),)
VOLATILE: Final = frozenset(
    {
        "kernel/ns_last_pid",
        "kernel/random/uuid",
        "kernel/random/entropy_avail",
        "kernel/pty/nr",
        "kernel/perf_event_max_sample_rate",
        "fs/dentry-state",
        "fs/file-nr",
        "fs/inode-nr",
        "fs/inode-state",
        "fs/aio-nr",
    }
)
"""Counters and values the kernel changes by itself (seen changing here with no node running)."""
VOLATILE_PREFIXES: Final = ("fs/quota/",)
WATCH_INTERVAL_S: Final = 2.0


def kernel_settings() -> dict[str, str]:
    """The machine's global kernel settings, key -> value (keys relative to /proc/sys, or a /sys path)."""
    found: dict[str, str] = {}
    for part in GLOBAL_PARTS:
        for directory, _, files in os.walk(PROC_SYS / part):
            for name in files:
                path = Path(directory) / name
                key = str(path.relative_to(PROC_SYS))
                if key in VOLATILE or key.startswith(VOLATILE_PREFIXES):
                    continue
                value = read(path)
                if value is not None:
                    found[key] = value
    for key in GLOBAL_NETWORK_KEYS:
        value = read(PROC_SYS / key)
        if value is not None:
            found[key] = value
    for path in GLOBAL_FILES:
        value = read(path)
        if value is not None:
            found[str(path)] = value
    return found


def read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None  # write-only, or gone


def moved(before: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """Each setting read both times whose value is not what it was, as ``key: before -> now``. A key
    read only once is not a change: ``net/nf_conntrack_max`` exists in the first network namespace
    only, so which keys there are depends on where the reader runs, not on the machine."""
    return [
        f"{key}: {before[key]} -> {now[key]}"
        for key in sorted(set(before) & set(now))
        if before[key] != now[key]
    ]


class SettingsWatch:
    """Reads the settings every ``WATCH_INTERVAL_S`` while the node runs and keeps every change seen
    (a setting changed and put back between two reads by ``up`` and ``down`` is caught here)."""

    def __init__(self, before: Mapping[str, str]) -> None:
        self.before = dict(before)
        self.seen: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kernel-settings-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(WATCH_INTERVAL_S):
            self.record(moved(self.before, kernel_settings()))

    def record(self, changes: list[str]) -> None:
        for change in changes:
            if change not in self.seen:
                self.seen.append(change)

    def stop(self) -> list[str]:
        """Stop watching; every change seen, with a last read."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(WATCH_INTERVAL_S * 2)
        self.record(moved(self.before, kernel_settings()))
        return list(self.seen)
