"""Benchmark 4, logs: ``flyte-apps logs NAME -f -o json`` of 10 replicas x N lines from the fake API server.

Our side is the installed command, ``flyte-apps logs NAME -p P -d D -f -o json --tail -1 --kubeconfig K
--namespace N``, as a process writing to a file (``--tail -1``: the default keeps only each replica's
last 1,000 lines). The floor is a process reading the same 10 streams with the raw ``kubernetes``
client (``read_namespaced_pod_log(..., follow=True, timestamps=True, _preload_content=False)``, one
thread per pod, ``read1`` as ours reads) and writing whole lines to a file through one buffer (ours
flushes every line: it prints lines as they come).

The lines are loaded into the fake server (in the benchmark process) before either side starts, and
every pod has ended (``Succeeded``) after its last line, so ``logs -f`` ends by itself and the
measurement is of streaming, not of making lines. Rates are lines over the wall time of the whole
process (start, listing the replicas, streaming, exit); the marginal rate between the two sizes
leaves the fixed costs out. Our output is checked (the number of lines of each replica, and its
last line), the floor's by its number of lines.

Sizes: 10 x 10,000 lines, then 10 x 100,000, or as many lines as fit the time budget (projected from
the small run; the table says how many were used: our side alone needs about 2.5 minutes for 10 x
100,000 on 2 cores). Goals, at the large size: at least 0.8x the floor's lines per second; peak RSS
of the logs process constant in the number of lines (at most 1.1x the small run's).

The floor is also a command of this module (the benchmark starts it)::

    python -m bench.logs_follow floor --kubeconfig K --namespace N --container C POD...
    python -m bench.logs_follow profile [--lines N]   # our side once, under bench._cprofile_threads
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from bench.measure import VENV_BIN, Measurement, run_measured
from bench.report import FAIL, PASS, Row, at_most, count, mib, seconds, times

if TYPE_CHECKING:
    from tests.fakes.kube_api import FakeKubeApi

# The floor process imports only the kubernetes client: never the fake server (``tests.fakes``
# brings pytest), which is imported where the benchmark process uses it.

TITLE: Final = "logs follow"
NOTE: Final = (
    "logs follow: `.venv/bin/flyte-apps logs NAME -p P -d D -f -o json --tail -1` of 10 replicas, each "
    "with N lines loaded into the fake API server (tests/fakes, in the benchmark process) and ended, "
    "stdout to a file, process start included; floor = the raw `kubernetes` client reading the same "
    "10 streams (`read_namespaced_pod_log(follow=True, _preload_content=False)`, a thread per pod) "
    "and writing whole lines to a file, buffered. Outputs checked (lines, and last line, per replica)."
)
APP: Final = "logbench"
REPLICAS: Final = 10
SMALL_LINES: Final = 10_000
"""Lines per replica of the small run."""
TARGET_LINES: Final = 100_000
"""Lines per replica the large run uses when the time budget allows (else fewer, and the table says so)."""
LINES_STEP: Final = 10_000
BUDGET_S: Final = 150.0
"""Both runs, loading the lines included, should fit in about this."""
RATIO_LIMIT: Final = 0.8
MEMORY_GROWTH_LIMIT: Final = 1.1
CLI: Final = VENV_BIN / "flyte-apps"
_READ_SIZE: Final = 64 * 1024


# --- the floor (a child process) -----------------------------------------------------------------------


def floor_main(args: argparse.Namespace) -> None:
    from kubernetes import client, config

    configuration = client.Configuration()
    # A connection per stream, as ours has (the default pool is 5 per CPU).
    configuration.connection_pool_maxsize = max(len(args.pods), configuration.connection_pool_maxsize)
    load = cast(Callable[..., Any], config.new_client_from_config)
    api = load(config_file=args.kubeconfig, persist_config=False, client_configuration=configuration)
    core = client.CoreV1Api(api)
    # Buffered whatever PYTHONUNBUFFERED says: the floor does the least work per line.
    out = open(sys.stdout.fileno(), "wb", closefd=False)  # noqa: SIM115 (closed below)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def read(pod: str) -> None:
        try:
            # Unread (``_preload_content=False``): a urllib3 response, whatever the stub says.
            response: Any = core.read_namespaced_pod_log(
                pod,
                args.namespace,
                container=args.container,
                follow=True,
                timestamps=True,
                _preload_content=False,
            )
            pending = b""
            while chunk := response.read1(_READ_SIZE):
                data = pending + chunk
                end = data.rfind(b"\n") + 1
                pending = data[end:]
                if end:
                    with lock:
                        out.write(data[:end])
            if pending:
                with lock:
                    out.write(pending + b"\n")
            response.release_conn()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=read, args=(pod,)) for pod in args.pods]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.close()
    api.close()
    if errors:
        raise errors[0]


# --- the benchmark ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    lines: int
    """Per replica."""
    ours: Measurement
    floor: Measurement
    load_s: float
    """How long loading the lines into the fake took (not measured against either side)."""

    @property
    def total(self) -> int:
        return self.lines * REPLICAS

    @property
    def ours_rate(self) -> float:
        return self.total / self.ours.wall_s

    @property
    def floor_rate(self) -> float:
        return self.total / self.floor.wall_s


def logs_argv(kubeconfig: Path) -> list[str]:
    """Our side's arguments after the program (``flyte-apps``)."""
    from bench._fake_cluster import DOMAIN, NAMESPACE, PROJECT

    return [
        "logs",
        APP,
        "-p",
        PROJECT,
        "-d",
        DOMAIN,
        "-f",
        "-o",
        "json",
        "--tail",
        "-1",
        "--kubeconfig",
        str(kubeconfig),
        "--namespace",
        NAMESPACE,
    ]


def floor_argv(kubeconfig: Path, pods: Sequence[str]) -> list[str]:
    from bench._fake_cluster import NAMESPACE, USER_CONTAINER

    return [
        sys.executable,
        "-m",
        "bench.logs_follow",
        "floor",
        "--kubeconfig",
        str(kubeconfig),
        "--namespace",
        NAMESPACE,
        "--container",
        USER_CONTAINER,
        *pods,
    ]


def check_ours(path: Path, pods: Sequence[str], lines: int) -> None:
    """Every replica's lines, each replica's last line last (they interleave across replicas)."""
    from bench._fake_cluster import log_message

    seen: Counter[str] = Counter()
    last: dict[str, str] = {}
    with path.open(encoding="utf-8") as stream:
        for text in stream:
            record = json.loads(text)
            seen[record["replica"]] += 1
            last[record["replica"]] = record["message"]
    expected_last = {pod: log_message(i, lines - 1) for i, pod in enumerate(pods)}
    if seen != Counter(dict.fromkeys(pods, lines)) or last != expected_last:
        msg = f"{path}: lines per replica {dict(seen)} (expected {lines} each) or wrong last lines"
        raise RuntimeError(msg)


def check_floor(path: Path, lines: int) -> None:
    with path.open("rb") as stream:
        found = sum(chunk.count(b"\n") for chunk in iter(lambda: stream.read(1 << 20), b""))
    if found != lines * REPLICAS:
        msg = f"{path}: {found} lines, expected {lines * REPLICAS}"
        raise RuntimeError(msg)


def measure(server: FakeKubeApi, pods: Sequence[str], lines: int, workdir: Path, *, load_s: float) -> Pair:
    from bench._fake_cluster import kubeconfig_of

    kubeconfig = kubeconfig_of(server)
    ours = run_measured([str(CLI), *logs_argv(kubeconfig)], stdout=workdir / f"ours-{lines}.jsonl")
    check_ours(ours.stdout, pods, lines)
    floor = run_measured(floor_argv(kubeconfig, pods), stdout=workdir / f"floor-{lines}.log")
    check_floor(floor.stdout, lines)
    return Pair(lines, ours, floor, load_s)


def large_size(small: Pair, spent_s: float) -> int:
    """The most lines per replica (a multiple of ``LINES_STEP``, at most ``TARGET_LINES``, at least
    twice the small run's) the large run can use within the budget, projected from the small run
    (whose fixed costs are counted as if per line: a conservative projection)."""
    per_line = (small.ours.wall_s + small.floor.wall_s + small.load_s) / small.total
    affordable = int((BUDGET_S - spent_s) / (per_line * REPLICAS))
    return max(2 * small.lines, min(TARGET_LINES, affordable // LINES_STEP * LINES_STEP))


def run(workdir: Path) -> list[Row]:
    from bench._fake_cluster import running_fake, serve_app_with_logs

    workdir.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    pairs: list[Pair] = []
    for planned in (SMALL_LINES, None):
        lines = planned if planned is not None else large_size(pairs[0], time.perf_counter() - began)
        print(f"bench: {TITLE}: {REPLICAS} x {lines:,} lines ...", file=sys.stderr, flush=True)
        with running_fake(workdir / f"cluster-{lines}") as server:
            loading = time.perf_counter()
            pods = serve_app_with_logs(server, APP, replicas=REPLICAS, lines=lines)
            load_s = time.perf_counter() - loading
            pairs.append(measure(server, pods, lines, workdir, load_s=load_s))
    return rows(pairs)


def _label(pair: Pair) -> str:
    return f"{REPLICAS} x {count(pair.lines)} lines"


def rows(pairs: Sequence[Pair]) -> list[Row]:
    out: list[Row] = []
    goal_lines = max(pair.lines for pair in pairs)
    for pair in pairs:
        ratio = pair.ours_rate / pair.floor_rate
        goal = pair.lines == goal_lines
        out += [
            Row(
                TITLE,
                "lines/s",
                _label(pair),
                f"{pair.ours_rate:,.0f}/s",
                f"{pair.floor_rate:,.0f}/s",
                times(ratio),
                f">= {RATIO_LIMIT}x" if goal else "",
                (PASS if ratio >= RATIO_LIMIT else FAIL) if goal else "",
            ),
            Row(TITLE, "wall time", _label(pair), seconds(pair.ours.wall_s), seconds(pair.floor.wall_s)),
            Row(
                TITLE,
                "CPU time",
                _label(pair),
                seconds(pair.ours.cpu_s),
                seconds(pair.floor.cpu_s),
                times(pair.ours.cpu_s / pair.floor.cpu_s),
            ),
            Row(
                TITLE,
                "peak RSS",
                _label(pair),
                mib(pair.ours.peak_rss_mib),
                mib(pair.floor.peak_rss_mib),
                times(pair.ours.peak_rss_mib / pair.floor.peak_rss_mib),
            ),
        ]
    if len(pairs) >= 2:
        small, large = pairs[0], pairs[-1]
        added = large.total - small.total
        ours_marginal = added / (large.ours.wall_s - small.ours.wall_s)
        floor_marginal = added / (large.floor.wall_s - small.floor.wall_s)
        out.append(
            Row(
                TITLE,
                "lines/s, marginal (no fixed costs)",
                f"{_label(small)} -> {count(large.lines)}",
                f"{ours_marginal:,.0f}/s",
                f"{floor_marginal:,.0f}/s",
                times(ours_marginal / floor_marginal),
            )
        )
        cut = "" if large.lines >= TARGET_LINES else f" (time budget; goal {count(TARGET_LINES)})"
        growth = large.ours.peak_rss_mib / small.ours.peak_rss_mib
        floor_growth = large.floor.peak_rss_mib / small.floor.peak_rss_mib
        out.append(
            Row(
                TITLE,
                "peak RSS growth",
                f"{_label(small)} -> {count(large.lines)}{cut}",
                times(growth),
                times(floor_growth),
                goal=f"<= {MEMORY_GROWTH_LIMIT}x",
                result=at_most(growth, MEMORY_GROWTH_LIMIT),
            )
        )
    return out


# --- profiling and the command line ---------------------------------------------------------------------


def profile_main(args: argparse.Namespace) -> None:
    """Our side once, under ``bench._cprofile_threads`` (cProfile in every thread, per-thread CPU)."""
    from bench._fake_cluster import kubeconfig_of, running_fake, serve_app_with_logs

    workdir = Path(tempfile.mkdtemp(prefix="flyte-apps-logs-profile-"))
    pstats_file = workdir / "logs.prof"
    with running_fake(workdir) as server:
        pods = serve_app_with_logs(server, APP, replicas=REPLICAS, lines=args.lines)
        argv = [
            sys.executable,
            "-m",
            "bench._cprofile_threads",
            "--out",
            str(pstats_file),
            "flyte_apps.cli.main:main",
        ]
        result = run_measured([*argv, *logs_argv(kubeconfig_of(server))], stdout=workdir / "ours.jsonl")
    check_ours(result.stdout, pods, args.lines)
    total = REPLICAS * args.lines
    print(
        f"{REPLICAS} x {args.lines:,} lines: {total / result.wall_s:,.0f} lines/s under the profiler; "
        f"pstats in {pstats_file}",
        file=sys.stderr,
    )
    print(Path(f"{result.stdout}.stderr").read_text(encoding="utf-8"), file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.logs_follow", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    floor = commands.add_parser("floor", help="the floor side: read the pods' logs, lines to stdout")
    floor.add_argument("--kubeconfig", required=True)
    floor.add_argument("--namespace", required=True)
    floor.add_argument("--container", required=True)
    floor.add_argument("pods", nargs="+")
    profile = commands.add_parser("profile", help="our side once under bench._cprofile_threads")
    profile.add_argument("--lines", type=int, default=20_000, help="per replica (default 20,000)")
    args = parser.parse_args(argv)
    if args.command == "floor":
        floor_main(args)
    else:
        profile_main(args)


if __name__ == "__main__":
    main()
