"""Start one command, wait for it, and write its own resource usage as JSON (stdlib only)::

    python -I -S bench/launcher.py USAGE_JSON COMMAND [ARGS...]

Why a separate, small process: Linux carries a process's peak RSS across ``exec``, and a child that
the benchmark process spawns directly starts as a copy of it (``vfork``), so its ``ru_maxrss`` would
be at least the benchmark process's own size (hundreds of MiB once it has planned a large stack).
Spawned from this ~9 MiB interpreter instead, the inherited peak is below any program's own.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    report, *argv = sys.argv[1:]
    start = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, os.environ)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    result = {
        "exit": os.waitstatus_to_exitcode(status),
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "maxrss": usage.ru_maxrss,
    }
    with open(report, "w", encoding="utf-8") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main()
