"""Benchmark 3, watch fan-out: one ``WatchHub``, 100 subscribers (one stalled), a backlog of KService
modifications from the fake API server.

Our side is a child process running a ``WatchHub`` (``flyte_apps.kube.watch``, default options, so
``read_replicas=True``: one Revision GET per event) with 100 subscribers on every app: 99 read in
their own thread and do nothing with the events, one never reads. The floor is a child process
reading the same watch stream with the raw ``kubernetes`` client (``Watch().stream`` over
``CustomObjectsApi.list_namespaced_custom_object`` from the same ``resource_version``) and doing
nothing per event.

Both read a backlog: the hub lists, its watch request is held at the fake's door
(``bench._fake_cluster.GatedFakeKubeApi``) while the benchmark makes the modifications through the
fake's own write path, then released, so both sides read as fast as they can and the time the fake
needs to make the changes is measured apart. Rates are taken from the first to the last event, so
process start and connection setup are left out. The fake's write path is slow (Python), so the
large run uses the most events (at most 100,000) that fit the time budget, measured from the small
run; the table says how many were used.

Goals: only the stalled subscriber drops events (every other one gets all of them), and the hub's
peak RSS does not grow with the number of events (large run at most 1.1x the small run).

Each side is also a command of this module (the benchmark starts them)::

    python -m bench.watch_fanout hub --kubeconfig K --events N --ready FILE [--no-replicas]
    python -m bench.watch_fanout floor --kubeconfig K --events N --resource-version RV
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from bench.measure import Measurement, run_measured
from bench.report import FAIL, PASS, Row, at_most, count, mib, times

if TYPE_CHECKING:
    from bench._fake_cluster import GatedFakeKubeApi

# The measured processes import only what their side needs: never the fake server (``tests.fakes``
# brings pytest), which is imported where the benchmark process uses it.

TITLE: Final = "watch fan-out"
NOTE: Final = (
    "watch fan-out: a `WatchHub` (default options: one Revision GET per event) with 100 subscribers "
    "on every app, 99 reading in their own thread and 1 never reading, fed a backlog of N KService "
    "modifications by the fake API server (tests/fakes, in the benchmark process); floor = the raw "
    "`kubernetes` `Watch().stream(list_namespaced_custom_object, resource_version=...)` of the same "
    "backlog, doing nothing per event. Rates from first to last event; each side a fresh process."
)
APPS: Final = 100
SUBSCRIBERS: Final = 100
STALLED: Final = 1
BUFFER_SIZE: Final = 100
"""The hub's default per-subscriber buffer (``watchBufferSize``)."""
SMALL_EVENTS: Final = 2_000
TARGET_EVENTS: Final = 100_000
EVENTS_STEP: Final = 1_000
BUDGET_S: Final = 120.0
"""The whole benchmark (both runs, making the events included) should fit in about this."""
MEMORY_GROWTH_LIMIT: Final = 1.1
_READY_TIMEOUT_S: Final = 60.0
_FIRST_EVENT_TIMEOUT_S: Final = 600.0
_IDLE_TIMEOUT_S: Final = 15.0
_POLL_S: Final = 0.2


# --- the two sides (child processes) ----------------------------------------------------------------


@dataclass
class _Reader:
    """One subscriber's reading thread: counts events, notes when the first live one and the last
    expected one arrived."""

    subscription: Any
    expected: int
    """Snapshot plus live events this subscriber must receive."""
    snapshot: int
    quit: threading.Event
    received: int = 0
    first_live: float | None = None
    done: float | None = None

    def run(self) -> None:
        get = self.subscription.get
        while not self.quit.is_set():
            event = get(_POLL_S)
            if event is None:
                if self.subscription.closed:
                    return
                continue
            self.received += 1
            if self.received == self.snapshot + 1:
                self.first_live = time.perf_counter()
            if self.received >= self.expected:
                self.done = time.perf_counter()
                return


def hub_main(args: argparse.Namespace) -> None:
    from flyte_apps.kube.target import KubeTarget, build_api_client
    from flyte_apps.kube.watch import WatchHub

    target = KubeTarget(kubeconfig=args.kubeconfig)
    hub = WatchHub(
        lambda: build_api_client(target),
        namespace=args.namespace,
        base_domain="apps.example.com",
        read_replicas=args.read_replicas,
    )
    hub.start()
    snapshot = len(hub.apps())
    subscriptions = [hub.subscribe() for _ in range(args.subscribers)]
    quit_event = threading.Event()
    readers = [
        _Reader(subscription, snapshot + args.events, snapshot, quit_event)
        for subscription in subscriptions[args.stalled :]
    ]
    threads = [threading.Thread(target=reader.run, daemon=True) for reader in readers]
    for thread in threads:
        thread.start()
    Path(args.ready).write_text("ready", encoding="utf-8")
    _wait_for_readers(readers, threads)
    quit_event.set()
    hub.stop()
    for thread in threads:
        thread.join(5.0)
    firsts = [r.first_live for r in readers if r.first_live is not None]
    dones = [r.done for r in readers if r.done is not None]
    result = {
        "events": args.events,
        "snapshot": snapshot,
        "first": min(firsts) if firsts else None,
        "last": max(dones) if len(dones) == len(readers) else None,
        "live_received": [max(0, r.received - snapshot) for r in readers],
        "dropped_active": [s.dropped for s in subscriptions[args.stalled :]],
        "dropped_stalled": [s.dropped for s in subscriptions[: args.stalled]],
        "relists": hub.relists,
        "vm_hwm_kib": _vm_hwm_kib(),
    }
    json.dump(result, sys.stdout)


def _wait_for_readers(readers: Sequence[_Reader], threads: Sequence[threading.Thread]) -> None:
    """Until every reader has all its events, or nothing has arrived for a while."""
    started = time.monotonic()
    last_total, last_change = -1, started
    while any(thread.is_alive() for thread in threads):
        time.sleep(_POLL_S)
        total = sum(reader.received for reader in readers)
        now = time.monotonic()
        if total != last_total:
            last_total, last_change = total, now
        live = any(reader.first_live is not None for reader in readers)
        if (live and now - last_change > _IDLE_TIMEOUT_S) or now - started > _FIRST_EVENT_TIMEOUT_S:
            return


def floor_main(args: argparse.Namespace) -> None:
    from kubernetes import client, config, watch

    load = cast(Callable[..., Any], config.new_client_from_config)
    api = load(config_file=args.kubeconfig, persist_config=False)
    watcher = cast(Any, watch).Watch()  # untyped in the kubernetes package
    received = 0
    first: float | None = None
    last: float | None = None
    stream = watcher.stream(
        client.CustomObjectsApi(api).list_namespaced_custom_object,
        "serving.knative.dev",
        "v1",
        args.namespace,
        "services",
        resource_version=args.resource_version,
        timeout_seconds=int(_FIRST_EVENT_TIMEOUT_S),
    )
    for _event in stream:
        received += 1
        if received == 1:
            first = time.perf_counter()
        if received >= args.events:
            last = time.perf_counter()
            watcher.stop()
            break
    api.close()
    result = {"events": args.events, "received": received, "first": first, "last": last}
    result["vm_hwm_kib"] = _vm_hwm_kib()
    json.dump(result, sys.stdout)


def _vm_hwm_kib() -> int:
    """This process's peak resident set (``VmHWM``), in KiB."""
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


# --- the benchmark ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HubRun:
    events: int
    make_s: float
    """How long the fake took to make the events (its write path, before the hub read them)."""
    measurement: Measurement
    result: dict[str, Any]

    @property
    def elapsed(self) -> float:
        first, last = self.result.get("first"), self.result.get("last")
        return float(last - first) if first is not None and last is not None else float("nan")

    @property
    def complete(self) -> bool:
        return self.result.get("last") is not None

    @property
    def events_per_s(self) -> float:
        return self.events / self.elapsed

    @property
    def deliveries(self) -> int:
        return int(sum(self.result["live_received"]))

    @property
    def deliveries_per_s(self) -> float:
        return self.deliveries / self.elapsed

    @property
    def active_drops(self) -> int:
        return int(sum(self.result["dropped_active"]))

    @property
    def stalled_drops(self) -> int:
        return int(sum(self.result["dropped_stalled"]))

    @property
    def all_delivered(self) -> bool:
        return self.active_drops == 0 and all(n == self.events for n in self.result["live_received"])


@dataclass(frozen=True)
class FloorRun:
    events: int
    measurement: Measurement
    result: dict[str, Any]

    @property
    def elapsed(self) -> float:
        first, last = self.result.get("first"), self.result.get("last")
        return float(last - first) if first is not None and last is not None else float("nan")

    @property
    def events_per_s(self) -> float:
        return self.events / self.elapsed


@dataclass(frozen=True)
class Pair:
    hub: HubRun
    floor: FloorRun


PROFILE_MARK: Final = "s of CPU time"
"""Where ``bench._cprofile_threads``'s report starts in a child's stderr."""


def _module_argv(
    side: str, kubeconfig: Path, events: int, *extra: str, runner: Sequence[str] = ("-m",)
) -> list[str]:
    """The command of one side; ``runner`` goes between the interpreter and this module's name (a
    profiler taking a module to run)."""
    from bench._fake_cluster import NAMESPACE

    return [
        sys.executable,
        *runner,
        "bench.watch_fanout",
        side,
        "--kubeconfig",
        str(kubeconfig),
        "--namespace",
        NAMESPACE,
        "--events",
        str(events),
        *extra,
    ]


def run_hub(
    server: GatedFakeKubeApi,
    names: Sequence[str],
    events: int,
    workdir: Path,
    *,
    first_touch: int,
    read_replicas: bool = True,
    subscribers: int = SUBSCRIBERS,
    runner: Sequence[str] = ("-m",),
) -> tuple[HubRun, int]:
    """One hub process over a backlog of ``events`` new modifications; also the resourceVersion the
    backlog starts after (for the floor)."""
    from bench._fake_cluster import kubeconfig_of, touch_apps

    tag = f"{events}-{subscribers}{'' if read_replicas else '-no-replicas'}"
    ready = workdir / f"hub-{tag}.ready"
    ready.unlink(missing_ok=True)
    extra = ["--ready", str(ready), "--subscribers", str(subscribers)]
    extra += [] if read_replicas else ["--no-replicas"]
    argv = _module_argv("hub", kubeconfig_of(server), events, *extra, runner=runner)
    outcome: dict[str, Measurement | BaseException] = {}

    def measure() -> None:
        try:
            outcome["measurement"] = run_measured(argv, stdout=workdir / f"hub-{tag}.json")
        except BaseException as exc:  # handed to the benchmark thread
            outcome["error"] = exc

    server.hold_watches()
    thread = threading.Thread(target=measure, name="bench-hub", daemon=True)
    thread.start()
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while not (ready.exists() and server.wait_for_watch(_POLL_S)):
        if not thread.is_alive() or time.monotonic() > deadline:
            server.release_watches()
            thread.join()
            error = outcome.get("error")
            msg = f"the hub process did not get ready: {error}"
            raise RuntimeError(msg) from None
    start_version = server.resource_version
    make_s = touch_apps(server, names, events, start=first_touch)
    server.release_watches()
    thread.join()
    error = outcome.get("error")
    if isinstance(error, BaseException):
        raise error
    measurement = outcome["measurement"]
    assert isinstance(measurement, Measurement)
    result = json.loads(measurement.stdout.read_text(encoding="utf-8"))
    return HubRun(events, make_s, measurement, result), start_version


def run_floor(server: GatedFakeKubeApi, events: int, start_version: int, workdir: Path) -> FloorRun:
    from bench._fake_cluster import kubeconfig_of

    argv = _module_argv("floor", kubeconfig_of(server), events, "--resource-version", str(start_version))
    measurement = run_measured(argv, stdout=workdir / f"floor-{events}.json")
    result = json.loads(measurement.stdout.read_text(encoding="utf-8"))
    if result["received"] != events:
        msg = f"the floor read {result['received']} of {events} events"
        raise RuntimeError(msg)
    return FloorRun(events, measurement, result)


def large_size(small: Pair, spent_s: float) -> int:
    """The most events (a multiple of ``EVENTS_STEP``, at most ``TARGET_EVENTS``, at least twice the
    small run's) the large run can use within the budget, projected from the small run's per-event
    and fixed costs."""
    hub, floor = small.hub, small.floor
    per_event = (hub.make_s + hub.elapsed + floor.elapsed) / hub.events
    fixed = (hub.measurement.wall_s - hub.elapsed) + (floor.measurement.wall_s - floor.elapsed)
    affordable = int((BUDGET_S - spent_s - fixed) / per_event) if per_event > 0 else TARGET_EVENTS
    return max(2 * hub.events, min(TARGET_EVENTS, affordable // EVENTS_STEP * EVENTS_STEP))


@dataclass(frozen=True)
class Results:
    small: Pair
    large: Pair
    no_replicas: HubRun
    """The hub with ``read_replicas=False`` over the small backlog: what the Revision GETs cost."""


def run(workdir: Path) -> list[Row]:
    from bench._fake_cluster import deploy_apps, running_fake

    workdir.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    with running_fake(workdir) as server:
        names = deploy_apps(server, APPS)
        touched = 0

        def hub_run(events: int, *, read_replicas: bool = True) -> tuple[HubRun, int]:
            nonlocal touched
            what = "" if read_replicas else ", read_replicas=False"
            print(f"bench: {TITLE}: {events:,} events{what} ...", file=sys.stderr, flush=True)
            result = run_hub(server, names, events, workdir, first_touch=touched, read_replicas=read_replicas)
            touched += events
            return result

        def pair(events: int) -> Pair:
            hub, start_version = hub_run(events)
            return Pair(hub, run_floor(server, events, start_version, workdir))

        small = pair(SMALL_EVENTS)
        no_replicas, _ = hub_run(SMALL_EVENTS, read_replicas=False)
        large = pair(large_size(small, time.perf_counter() - began))
    return rows(Results(small, large, no_replicas))


def _label(events: int) -> str:
    return f"{APPS} apps, {count(events)} events"


def rows(results: Results) -> list[Row]:
    out: list[Row] = []
    readers = SUBSCRIBERS - STALLED
    for pair in (results.small, results.large):
        hub, floor = pair.hub, pair.floor
        out += [
            Row(
                TITLE,
                "events/s, to every subscriber",
                _label(hub.events),
                f"{hub.events_per_s:,.0f}/s",
                f"{floor.events_per_s:,.0f}/s",
                times(hub.events_per_s / floor.events_per_s),
            ),
            Row(
                TITLE,
                f"deliveries/s ({readers} readers)",
                _label(hub.events),
                f"{hub.deliveries_per_s:,.0f}/s",
            ),
            Row(
                TITLE,
                "dropped, each reading subscriber",
                _label(hub.events),
                f"{hub.active_drops / readers:g}",
                goal="0 (all delivered)",
                result=PASS if hub.all_delivered and hub.complete else FAIL,
            ),
            Row(
                TITLE,
                "dropped, stalled subscriber",
                _label(hub.events),
                count(hub.stalled_drops),
                goal=f"events - buffer = {count(hub.events - BUFFER_SIZE)}",
                result=PASS if hub.stalled_drops == hub.events - BUFFER_SIZE else FAIL,
            ),
            Row(
                TITLE,
                "peak RSS",
                _label(hub.events),
                mib(hub.measurement.peak_rss_mib),
                mib(floor.measurement.peak_rss_mib),
                times(hub.measurement.peak_rss_mib / floor.measurement.peak_rss_mib),
            ),
        ]
    bare = results.no_replicas
    with_gets = results.small.hub
    out.append(
        Row(
            TITLE,
            "events/s, read_replicas=False",
            _label(bare.events),
            f"{bare.events_per_s:,.0f}/s",
            f"{results.small.floor.events_per_s:,.0f}/s",
            times(bare.events_per_s / results.small.floor.events_per_s),
        )
    )
    out.append(
        Row(
            TITLE,
            "time per event in Revision GETs",
            _label(bare.events),
            f"{1 - with_gets.events_per_s / bare.events_per_s:.0%}",
        )
    )
    made = [pair.hub for pair in (results.small, results.large)] + [bare]
    make_rate = sum(h.events for h in made) / sum(h.make_s for h in made)
    out.append(Row(TITLE, "fake makes events (write path)", "", f"{make_rate:,.0f}/s"))
    small, large = results.small, results.large
    growth = large.hub.measurement.peak_rss_mib / small.hub.measurement.peak_rss_mib
    floor_growth = large.floor.measurement.peak_rss_mib / small.floor.measurement.peak_rss_mib
    cut = "" if large.hub.events >= TARGET_EVENTS else f" (time budget; goal {count(TARGET_EVENTS)})"
    out.append(
        Row(
            TITLE,
            "peak RSS growth",
            f"{count(small.hub.events)} -> {count(large.hub.events)} events{cut}",
            times(growth),
            times(floor_growth),
            goal=f"<= {MEMORY_GROWTH_LIMIT}x",
            result=at_most(growth, MEMORY_GROWTH_LIMIT),
        )
    )
    return out


def profile_main(args: argparse.Namespace) -> None:
    """Set the benchmark up once and run the hub side under ``bench._cprofile_threads`` (cProfile in
    every thread, each timed by its own CPU clock)."""
    from bench._fake_cluster import deploy_apps, running_fake

    workdir = Path(tempfile.mkdtemp(prefix="flyte-apps-watch-profile-"))
    pstats_file = workdir / "hub.prof"
    runner = ["-m", "bench._cprofile_threads", "--out", str(pstats_file)]
    with running_fake(workdir) as server:
        names = deploy_apps(server, APPS)
        hub, _ = run_hub(
            server,
            names,
            args.events,
            workdir,
            first_touch=0,
            read_replicas=args.read_replicas,
            runner=runner,
        )
    print(
        f"{hub.events:,} events: {hub.events_per_s:,.0f} events/s, {hub.deliveries_per_s:,.0f} deliveries/s "
        f"under the profiler; pstats in {pstats_file}",
        file=sys.stderr,
    )
    stderr = Path(f"{hub.measurement.stdout}.stderr").read_text(encoding="utf-8")
    print(stderr[stderr.rfind("\n", 0, max(0, stderr.find(PROFILE_MARK))) + 1 :], file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.watch_fanout", description=__doc__.split("\n")[0])
    sides = parser.add_subparsers(dest="side", required=True)
    profile = sides.add_parser("profile", help="run the hub side once under bench._cprofile_threads")
    profile.add_argument("--events", type=int, default=2_000)
    profile.add_argument("--no-replicas", dest="read_replicas", action="store_false")
    profile.add_argument("--subscribers", type=int, default=SUBSCRIBERS, help="one of them stalled")
    for side in ("hub", "floor"):
        sub = sides.add_parser(side)
        sub.add_argument("--kubeconfig", required=True)
        sub.add_argument("--namespace", required=True)
        sub.add_argument("--events", type=int, required=True)
        if side == "hub":
            sub.add_argument("--ready", required=True, help="file written once subscribed")
            sub.add_argument("--subscribers", type=int, default=SUBSCRIBERS)
            sub.add_argument("--stalled", type=int, default=STALLED)
            sub.add_argument("--no-replicas", dest="read_replicas", action="store_false")
        else:
            sub.add_argument("--resource-version", required=True)
    args = parser.parse_args(argv)
    if args.side == "profile":
        profile_main(args)
    elif args.side == "hub":
        hub_main(args)
    else:
        floor_main(args)


if __name__ == "__main__":
    main()
