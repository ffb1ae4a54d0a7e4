"""Benchmark: ``flyte-apps logs`` of 10 replicas x N lines from the fake API server, read whole
(``--tail -1``) and followed (``-f``), text and JSON, against the raw client, with ``kubectl logs``
beside it; and the latency of a lone line.

Our side is the installed command, ``flyte-apps logs NAME -p P -d D [-o json] --tail -1 [-f]
--kubeconfig K --namespace N``, as a process writing to a file. The peer a user would pick is
``kubectl logs -l serving.knative.dev/service=<kservice> -c app --prefix --tail=-1
--max-log-requests=10 [-f]`` (text only: kubectl has no JSON form of log lines), if kubectl is
found (else its rows say so). The floors are processes reading
the same streams with the raw ``kubernetes`` client (``read_namespaced_pod_log(...,
timestamps=True, _preload_content=False)``, read as ours reads: each HTTP chunk as it completes) and
writing whole chunks to a file through one buffer: for ``--tail -1`` one replica after the other
(the order ours prints them in), for ``-f`` a thread per replica with ``follow=True``.

The lines are loaded into the fake server (in the benchmark process) before either side starts, and
every pod has ended (``Succeeded``) after its last line, so ``logs -f`` ends by itself and the
measurement is of streaming, not of making lines. Rates are lines over the wall time of the whole
process (start, listing the replicas, streaming, exit). Our output is checked (the number of lines
of each replica, and its last line), the floor's by its number of lines.

Sizes: 10 x 10,000 lines, then 10 x 20,000 (the issue's size), or as many lines (in steps of
10,000) as the projection from the small rounds fits in the time cap; the table says how many were
used. Goals, at the large size: at least 0.5x the floor's lines per second in both modes and both
formats; peak RSS constant in the number of lines (at most 1.1x the small run's); a lone line printed
by ``logs -f`` within 100 ms of being logged (the time from appending it to the fake to reading it
from our stdout, a pipe). The kubectl rows have no goal.

The floor is also a command of this module (the benchmark starts it)::

    python -m bench.logs_follow floor [--follow] [--flush] --kubeconfig K --namespace N --container C POD...
    python -m bench.logs_follow profile [--lines N] [--no-follow]   # ours once, under py-spy (bench.profile)
"""

from __future__ import annotations

import argparse
import functools
import json
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final, cast

from bench.measure import ROUNDS, VENV_BIN, Budget, Measurement, interleaved, progress, run_measured
from bench.profile import record_argv, strip_profiler_lines, summary
from bench.report import (
    Row,
    at_most,
    compared,
    count,
    median,
    mib,
    millis,
    no_less_than,
    no_more_than,
    per_second,
    seconds,
    spread,
    times,
)

if TYPE_CHECKING:
    from tests.fakes.kube_api import FakeKubeApi

# The floor process imports only the kubernetes client: never the fake server (``tests.fakes``
# brings pytest), which is imported where the benchmark process uses it.

TITLE: Final = "logs"
NOTE: Final = (
    "logs: `.venv/bin/flyte-apps logs NAME -p P -d D [-o json] --tail -1 [-f]` of 10 replicas, each with "
    "N lines loaded into the fake API server (tests/fakes, in the benchmark process) and ended, stdout "
    "to a file, process start included; floors = the raw `kubernetes` client reading the same streams "
    "(`read_namespaced_pod_log(_preload_content=False)`, chunks as they complete) and writing whole "
    "chunks to a file, buffered: one replica after the other for `--tail -1`, a thread per pod with "
    "`follow=True` for `-f`. Peer: `kubectl logs -l serving.knative.dev/service=<kservice> -c app --prefix "
    "--tail=-1 --max-log-requests=10 [-f]` on the same streams, beside text output (JSON has no kubectl "
    "equivalent). Lone-line latency: from appending one line to a running pod to reading it "
    "from the process's stdout pipe."
)
APP: Final = "logbench"
LATENCY_APP: Final = "lonely"
REPLICAS: Final = 10
SMALL_LINES: Final = 10_000
"""Lines per replica of the small size."""
TARGET_LINES: Final = 20_000
LINES_STEP: Final = 10_000
BUDGET_S: Final = 400.0
RATIO_LIMIT: Final = 0.5
MEMORY_GROWTH_LIMIT: Final = 1.1
LATENCY_LIMIT_S: Final = 0.1
LATENCY_SAMPLES: Final = 5
CLI: Final = VENV_BIN / "flyte-apps"
MODES: Final = ("--tail -1", "-f")
FORMATS: Final = ("text", "json")
KUBECTL_CACHE: Final = "kubectl-cache"
_READ_SIZE: Final = 64 * 1024
_LINE_TIMEOUT_S: Final = 10.0


# --- the floor (a child process) -----------------------------------------------------------------------


def _chunks(response: Any) -> Iterator[bytes]:
    """The body as it arrives, the cheapest way the raw client offers (as ``flyte_apps.kube.logs``)."""
    if response.chunked:
        yield from response.read_chunked()
        return
    while chunk := response.read1(_READ_SIZE):
        yield chunk


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
                follow=args.follow,
                timestamps=True,
                _preload_content=False,
            )
            pending = b""
            for chunk in _chunks(response):
                data = pending + chunk
                end = data.rfind(b"\n") + 1
                pending = data[end:]
                if end:
                    with lock:
                        out.write(data[:end])
                        if args.flush:
                            out.flush()
            if pending:
                with lock:
                    out.write(pending + b"\n")
            response.release_conn()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    if args.follow:
        threads = [threading.Thread(target=read, args=(pod,)) for pod in args.pods]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    else:
        for pod in args.pods:
            read(pod)
    out.close()
    api.close()
    if errors:
        raise errors[0]


# --- the benchmark ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SizeRuns:
    lines: int
    """Per replica."""
    ours: dict[tuple[str, str], list[Measurement]]
    """By mode and format."""
    floor: dict[str, list[Measurement]]
    """By mode."""
    kubectl: dict[str, list[Measurement]] | None
    """By mode; None without a kubectl."""
    load_s: float
    """How long loading the lines into the fake took (not measured against either side)."""

    @property
    def total(self) -> int:
        return self.lines * REPLICAS


def logs_argv(kubeconfig: Path, *, app: str = APP, follow: bool = True, output: str = "json") -> list[str]:
    """Our side's arguments after the program (``flyte-apps``)."""
    from bench._fake_cluster import DOMAIN, NAMESPACE, PROJECT

    argv = ["logs", app, "-p", PROJECT, "-d", DOMAIN, "-o", output, "--tail", "-1"]
    argv += ["-f"] if follow else []
    return [*argv, "--kubeconfig", str(kubeconfig), "--namespace", NAMESPACE]


def floor_argv(kubeconfig: Path, pods: Sequence[str], *, follow: bool, flush: bool = False) -> list[str]:
    from bench._fake_cluster import NAMESPACE, USER_CONTAINER

    options = (["--follow"] if follow else []) + (["--flush"] if flush else [])
    return [
        sys.executable,
        "-m",
        "bench.logs_follow",
        "floor",
        *options,
        "--kubeconfig",
        str(kubeconfig),
        "--namespace",
        NAMESPACE,
        "--container",
        USER_CONTAINER,
        *pods,
    ]


def kubectl_argv(kubeconfig: Path, cache: Path, *, follow: bool) -> list[str] | None:
    """The peer: ``kubectl logs`` of the app's pods by label, prefixed, all history; None without kubectl."""
    from bench._fake_cluster import DOMAIN, NAMESPACE, PROJECT, USER_CONTAINER

    found = shutil.which("kubectl")
    if found is None:
        return None
    selector = f"serving.knative.dev/service={APP}-{PROJECT}-{DOMAIN}"
    argv = [found, "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache), "-n", NAMESPACE, "logs"]
    argv += ["-l", selector, "-c", USER_CONTAINER, "--prefix", "--tail=-1", f"--max-log-requests={REPLICAS}"]
    return [*argv, "-f"] if follow else argv


def check_ours(path: Path, pods: Sequence[str], lines: int, output: str = "json") -> None:
    """Every replica's lines, each replica's last line last (they interleave across replicas)."""
    from bench._fake_cluster import log_message

    seen: Counter[str] = Counter()
    last: dict[str, str] = {}
    with path.open(encoding="utf-8") as stream:
        for text in stream:
            if output == "json":
                record = json.loads(text)
                replica, message = record["replica"], record["message"]
            else:
                replica, _, message = text.rstrip("\n").partition(" | ")
            seen[replica] += 1
            last[replica] = message
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


def measure_size(lines: int, workdir: Path) -> SizeRuns:
    from bench._fake_cluster import kubeconfig_of, running_fake, serve_app_with_logs

    with running_fake(workdir / f"cluster-{lines}") as server:
        loading = time.perf_counter()
        pods = serve_app_with_logs(server, APP, replicas=REPLICAS, lines=lines)
        load_s = time.perf_counter() - loading
        server.allow_anonymous = True  # kubectl sends no bearer token over plain HTTP
        kubeconfig = kubeconfig_of(server)
        ours: dict[tuple[str, str], list[Measurement]] = {}
        floor: dict[str, list[Measurement]] = {}
        kubectl: dict[str, list[Measurement]] | None = None

        def floor_ok(path: Path) -> None:
            check_floor(path, lines)

        for mode in MODES:
            follow = mode == "-f"
            tag = f"{'follow' if follow else 'all'}-{lines}"
            progress(f"{TITLE}: {REPLICAS} x {lines:,} lines, {mode}, {ROUNDS} rounds")
            sides = [
                _side(
                    [str(CLI), *logs_argv(kubeconfig, follow=follow, output=output)],
                    workdir / f"ours-{output}-{tag}",
                    functools.partial(check_ours, pods=pods, lines=lines, output=output),
                )
                for output in FORMATS
            ]
            sides.append(
                _side(floor_argv(kubeconfig, pods, follow=follow), workdir / f"floor-{tag}", floor_ok)
            )
            peer = kubectl_argv(kubeconfig, workdir / KUBECTL_CACHE, follow=follow)
            if peer is not None:
                sides.append(_side(peer, workdir / f"kubectl-{tag}", floor_ok))
            runs = interleaved(sides)
            for output, measured in zip(FORMATS, runs, strict=False):
                ours[mode, output] = measured
            floor[mode] = runs[len(FORMATS)]
            if peer is not None:
                kubectl = kubectl or {}
                kubectl[mode] = runs[len(FORMATS) + 1]
    return SizeRuns(lines, ours, floor, kubectl, load_s)


def _side(argv: list[str], stem: Path, check: Callable[[Path], None]) -> Callable[[int], Measurement]:
    """One side's run of a round: output to ``stem-<round>``, checked."""

    def once(round_: int) -> Measurement:
        measurement = run_measured(argv, stdout=stem.with_name(f"{stem.name}-{round_}.out"))
        check(measurement.stdout)
        return measurement

    return once


def large_size(small: SizeRuns, left_s: float) -> int:
    """The most lines per replica (a multiple of ``LINES_STEP``, at most ``TARGET_LINES``) whose
    rounds fit in ``left_s``, projected from the small size (whose fixed costs are counted as if per
    line: a conservative projection)."""
    sides = [*small.ours.values(), *small.floor.values(), *(small.kubectl or {}).values()]
    per_line = sum(median([m.wall_s for m in runs]) for runs in sides) * ROUNDS / small.total
    per_line += small.load_s / small.total
    affordable = int(left_s / (per_line * REPLICAS))
    return min(TARGET_LINES, affordable // LINES_STEP * LINES_STEP)


# --- the lone line ---------------------------------------------------------------------------------------


def _line_reader(stream: IO[bytes]) -> queue.Queue[tuple[float, bytes]]:
    """Lines of ``stream`` with the time each was read, from a thread."""
    lines: queue.Queue[tuple[float, bytes]] = queue.Queue()

    def read() -> None:
        for line in iter(stream.readline, b""):
            lines.put((time.perf_counter(), line))

    threading.Thread(target=read, daemon=True).start()
    return lines


def lone_line_latencies(server: FakeKubeApi, pod: str, argv: list[str]) -> list[float]:
    """Start ``argv`` following the running ``pod``; append one line at a time and time how long it
    takes to come out on the process's stdout."""
    from bench._fake_cluster import NAMESPACE, USER_CONTAINER

    opened = len(server.requests_matching("GET", f"/pods/{pod}/log"))
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    try:
        lines = _line_reader(process.stdout)
        deadline = time.monotonic() + _LINE_TIMEOUT_S
        while len(server.requests_matching("GET", f"/pods/{pod}/log")) == opened:
            if time.monotonic() > deadline or process.poll() is not None:
                msg = f"{argv[0]} did not open the log stream of {pod}"
                raise RuntimeError(msg)
            time.sleep(0.01)
        time.sleep(0.3)  # the stream is open and idle (the pod's earlier lines printed)
        latencies = []
        for _ in range(LATENCY_SAMPLES):
            token = f"lone line {time.time_ns()}"
            sent = time.perf_counter()
            server.append_log(NAMESPACE, pod, USER_CONTAINER, token)
            while True:  # lines of earlier rounds come first (``--tail -1`` prints the history)
                received, text = lines.get(timeout=_LINE_TIMEOUT_S)
                if token.encode() in text:
                    break
            latencies.append(received - sent)
            time.sleep(0.2)
        return latencies
    finally:
        process.kill()
        process.wait()


def measure_latency(workdir: Path) -> tuple[list[float], list[float]]:
    from bench._fake_cluster import kubeconfig_of, running_fake, serve_app_with_logs

    progress(f"{TITLE}: lone-line latency, {ROUNDS} rounds of {LATENCY_SAMPLES} lines")
    with running_fake(workdir / "cluster-latency") as server:
        # A replica that keeps running (no lines yet): ``serve_app_with_logs`` ends its pods.
        [pod] = serve_app_with_logs(server, LATENCY_APP, replicas=1, lines=0, finish=False)
        kubeconfig = kubeconfig_of(server)
        ours_argv = [str(CLI), *logs_argv(kubeconfig, app=LATENCY_APP)]
        floor = floor_argv(kubeconfig, [pod], follow=True, flush=True)
        ours, floors = interleaved(
            [
                lambda _: lone_line_latencies(server, pod, ours_argv),
                lambda _: lone_line_latencies(server, pod, floor),
            ]
        )
    return [x for run in ours for x in run], [x for run in floors for x in run]


# --- the benchmark ---------------------------------------------------------------------------------------


def run(workdir: Path) -> list[Row]:
    workdir.mkdir(parents=True, exist_ok=True)
    budget = Budget(BUDGET_S)
    latency = measure_latency(workdir)
    small = measure_size(SMALL_LINES, workdir)
    lines = large_size(small, budget.left())
    large = measure_size(lines, workdir) if lines > SMALL_LINES else None
    if large is None:
        progress(f"{TITLE}: no larger size fits the time cap")
    return rows(small, large, latency)


def _label(lines: int, *, capped: bool = False) -> str:
    cut = f" (time cap; goal {count(TARGET_LINES)})" if capped else ""
    return f"{REPLICAS} x {count(lines)} lines{cut}"


def _three(
    what: str, label: str, ours: list[Measurement], other: list[Measurement], lines: int, *, goal: bool
) -> list[Row]:
    """Lines/s (with the goal when ``goal``), CPU time and peak RSS of ``ours`` against ``other``."""
    return [
        compared(
            TITLE,
            f"lines/s, {what}",
            label,
            [lines / m.wall_s for m in ours],
            [lines / m.wall_s for m in other],
            per_second,
            goal=f">= {RATIO_LIMIT}x" if goal else "",
            check=no_less_than(RATIO_LIMIT) if goal else None,
        ),
        compared(
            TITLE, f"CPU time, {what}", label, [m.cpu_s for m in ours], [m.cpu_s for m in other], seconds
        ),
        compared(
            TITLE,
            f"peak RSS, {what}",
            label,
            [m.peak_rss_mib for m in ours],
            [m.peak_rss_mib for m in other],
            mib,
        ),
    ]


def rows(small: SizeRuns, large: SizeRuns | None, latency: tuple[list[float], list[float]]) -> list[Row]:
    out: list[Row] = []
    goal_size = large or small
    for size in (small, large):
        if size is None:
            continue
        label = _label(size.lines, capped=size is goal_size and size.lines < TARGET_LINES)
        for mode in MODES:
            for output in FORMATS:
                what = f"`logs {mode}`" + (" -o json" if output == "json" else " (text)")
                runs = size.ours[mode, output]
                out += _three(what, label, runs, size.floor[mode], size.total, goal=size is goal_size)
            if size.kubectl is None:
                out.append(Row(TITLE, f"`kubectl logs {mode}` peer", label, "kubectl not found"))
                continue
            what = f"`logs {mode}` (text) beside `kubectl logs --prefix` (floor column: kubectl)"
            out += _three(what, label, size.ours[mode, "text"], size.kubectl[mode], size.total, goal=False)
        out.append(
            Row(TITLE, "`-o json` beside kubectl", label, "no kubectl equivalent (kubectl prints text)")
        )
    if large is not None:
        for mode in MODES:
            for output in FORMATS:
                growth = median([m.peak_rss_mib for m in large.ours[mode, output]]) / median(
                    [m.peak_rss_mib for m in small.ours[mode, output]]
                )
                floor_growth = median([m.peak_rss_mib for m in large.floor[mode]]) / median(
                    [m.peak_rss_mib for m in small.floor[mode]]
                )
                out.append(
                    Row(
                        TITLE,
                        f"peak RSS growth, `logs {mode}` ({output})",
                        f"{_label(small.lines)} -> {count(large.lines)}",
                        times(growth),
                        times(floor_growth),
                        goal=f"<= {MEMORY_GROWTH_LIMIT}x",
                        result=at_most(growth, MEMORY_GROWTH_LIMIT),
                    )
                )
    ours_latency, floor_latency = latency
    out.append(
        Row(
            TITLE,
            "lone line, logged to printed (`logs -f`)",
            f"{ROUNDS} x {LATENCY_SAMPLES} lines",
            spread(ours_latency, millis),
            spread(floor_latency, millis),
            goal=f"< {LATENCY_LIMIT_S * 1000:.0f} ms",
            result=no_more_than(LATENCY_LIMIT_S)(median(ours_latency)),
        )
    )
    return out


# --- profiling and the command line ---------------------------------------------------------------------


def profile_main(args: argparse.Namespace) -> None:
    """Our side once, under py-spy (``bench.profile``)."""
    from bench._fake_cluster import kubeconfig_of, running_fake, serve_app_with_logs

    workdir = Path(tempfile.mkdtemp(prefix="flyte-apps-logs-profile-"))
    raw = workdir / "logs.samples.txt"
    with running_fake(workdir) as server:
        pods = serve_app_with_logs(server, APP, replicas=REPLICAS, lines=args.lines)
        argv = [*record_argv(raw), str(Path(sys.executable).parent / "flyte-apps")]
        ours = logs_argv(kubeconfig_of(server), follow=args.follow)
        result = run_measured([*argv, *ours], stdout=workdir / "ours.jsonl")
    strip_profiler_lines(result.stdout)
    check_ours(result.stdout, pods, args.lines)
    total = REPLICAS * args.lines
    print(
        f"{REPLICAS} x {args.lines:,} lines: {total / result.wall_s:,.0f} lines/s under the profiler; "
        f"samples in {raw}",
        file=sys.stderr,
    )
    print(summary(raw))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.logs_follow", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    floor = commands.add_parser("floor", help="the floor side: read the pods' logs, lines to stdout")
    floor.add_argument("--follow", action="store_true", help="follow, a thread per pod (else one by one)")
    floor.add_argument("--flush", action="store_true", help="flush after every chunk (latency runs)")
    floor.add_argument("--kubeconfig", required=True)
    floor.add_argument("--namespace", required=True)
    floor.add_argument("--container", required=True)
    floor.add_argument("pods", nargs="+")
    profile = commands.add_parser("profile", help="our side once under py-spy")
    profile.add_argument("--lines", type=int, default=20_000, help="per replica (default 20,000)")
    profile.add_argument("--no-follow", dest="follow", action="store_false", help="--tail -1 without -f")
    args = parser.parse_args(argv)
    if args.command == "floor":
        floor_main(args)
    else:
        profile_main(args)


if __name__ == "__main__":
    main()
