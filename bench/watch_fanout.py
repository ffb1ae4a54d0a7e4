"""Benchmark: the watch hub with one reading subscriber, as ``flyte-apps watch`` makes it, against the raw
watch, over a backlog of KService modifications from the fake API server.

Our side is a child process running a ``WatchHub`` (``flyte_apps.kube.watch``, default options, so
``read_replicas=True``: replica counts from its Revision cache) with one subscriber on every app,
reading in its own thread and doing nothing with the events. The floor is a child process reading the
same watch stream with the raw ``kubernetes`` client (``Watch().stream`` over
``CustomObjectsApi.list_namespaced_custom_object`` from the same ``resource_version``) and doing
nothing per event. (Rows for 100 subscribers were dropped with the fan-out machinery they measured:
the product makes one subscriber; bench/RESULTS.md says so.)

Both read a backlog: the hub lists, its watch requests are held at the fake's door
(``bench._fake_cluster.GatedFakeKubeApi``) while the benchmark makes the modifications through the
fake's own write path, then released, so both sides read as fast as they can and the time the fake
needs to make the changes is measured apart. Rates are taken from the first to the last event, so
process start and connection setup are left out. Each round makes a new backlog for the hub and the
floor reads that same one; the fake's history is compacted between rounds.

Sizes: 5,000 events, then 100,000 (or the most, in steps of 5,000, that the projection from the small
rounds fits in the time cap; the table says which). Once more at the small size with RBAC refusing
``list``/``watch`` on Revisions: the hub must fall back to a Revision GET per event and still deliver.
Goals: at least 0.5x the floor's events/s and at least 2,000 events/s to the subscriber; none dropped
(a reader that keeps reading loses nothing); no Revision GET per event (API requests counted by the
fake while the hub runs); the hub's peak RSS does not grow with the number of events (large at most
1.1x small).

Each side is also a command of this module (the benchmark starts them)::

    python -m bench.watch_fanout hub --kubeconfig K --events N --ready FILE [--no-replicas]
    python -m bench.watch_fanout floor --kubeconfig K --events N --resource-version RV
    python -m bench.watch_fanout profile [--events N]   # the hub once, under py-spy (bench.profile)
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

from bench.measure import ROUNDS, Budget, Measurement, progress, run_measured
from bench.profile import record_argv, strip_profiler_lines, summary
from bench.report import (
    FAIL,
    PASS,
    Row,
    at_most,
    compared,
    count,
    median,
    mib,
    no_less_than,
    per_second,
    spread,
    times,
)

if TYPE_CHECKING:
    from bench._fake_cluster import GatedFakeKubeApi

# The measured processes import only what their side needs: never the fake server (``tests.fakes``
# brings pytest), which is imported where the benchmark process uses it.

TITLE: Final = "watch"
NOTE: Final = (
    "watch: a `WatchHub` (default options: replica counts from its Revision cache) with one "
    "subscriber on every app, reading in its own thread (as `flyte-apps watch`), fed a backlog of N "
    "KService modifications by the fake API server (tests/fakes, in the benchmark process); floor = "
    "the raw `kubernetes` `Watch().stream(list_namespaced_custom_object, resource_version=...)` of the "
    "same backlog, doing nothing per event. Rates from first to last event; each side a fresh process."
)
APPS: Final = 100
SMALL_EVENTS: Final = 5_000
TARGET_EVENTS: Final = 100_000
EVENTS_STEP: Final = 5_000
BUDGET_S: Final = 240.0
RATE_GOAL: Final = 2_000.0
RATIO_GOAL: Final = 0.5
"""The subscriber gets events at least this fraction of the raw watch's rate."""
MEMORY_GROWTH_LIMIT: Final = 1.1
_READY_TIMEOUT_S: Final = 60.0
_FIRST_EVENT_TIMEOUT_S: Final = 600.0
_IDLE_TIMEOUT_S: Final = 15.0
_POLL_S: Final = 0.2
_PUBLISH_EVERY: Final = 0xFF
"""A reader publishes its count for the watchdog every 256 events (and whenever it waits)."""
_PROJECTION_SLACK: Final = 1.3
"""Other work on a shared machine can slow the fake's write path and the hub alike by a third."""


# --- the two sides (child processes) ----------------------------------------------------------------


@dataclass
class _Reader:
    """One subscriber's reading thread: counts events, notes when the first live one and the last
    one arrived. It is done once it has received or lost (buffer full) every expected event.

    Per event it does what the floor's loop does (count, compare); the clock is read only for the
    first live event and the last one, as the floor reads it, so the reader's own bookkeeping is not
    charged to the hub as delivery work."""

    subscription: Any
    expected: int
    """Snapshot plus live events this subscriber must receive."""
    snapshot: int
    quit: threading.Event
    received: int = 0
    first_live: float | None = None
    done: float | None = None

    def run(self) -> None:
        subscription = self.subscription
        get = subscription.get
        first_live = self.snapshot + 1
        received = 0
        while True:
            event = get(_POLL_S)
            if event is None:
                self.received = received
                if self.quit.is_set() or subscription.closed:
                    return
                if received + subscription.dropped >= self.expected:
                    self.done = time.perf_counter()  # it lost events: noticed within _POLL_S
                    return
                continue
            received += 1
            if received == first_live:
                self.first_live = time.perf_counter()
                self.received = received  # the watchdog's idle clock starts now, not at set-up
            if received + subscription.dropped >= self.expected:
                self.done = time.perf_counter()
                self.received = received
                return
            if not received & _PUBLISH_EVERY:
                self.received = received  # for the watchdog (``_wait_for_readers``)


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
    snapshot = APPS  # the fake holds APPS apps (``run`` deploys them); the reader expects them first
    subscription = hub.subscribe()  # one, as `flyte-apps watch` makes
    quit_event = threading.Event()
    reader = _Reader(subscription, snapshot + args.events, snapshot, quit_event)
    thread = threading.Thread(target=reader.run, daemon=True)
    thread.start()
    Path(args.ready).write_text("ready", encoding="utf-8")
    _wait_for_readers([reader], [thread])
    quit_event.set()
    hub.stop()
    thread.join(5.0)
    result = {
        "events": args.events,
        "snapshot": snapshot,
        "first": reader.first_live,
        "last": reader.done,
        "live_received": max(0, reader.received - snapshot),
        "dropped": subscription.dropped,
        "relists": hub.relists,
        "reads_revisions_per_event": hub.reads_revisions_per_event,
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
    requests: dict[str, int]
    """API requests the hub made, by verb and kind (``get revisions``: one per event upstream)."""

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
    def dropped(self) -> int:
        return int(self.result["dropped"])

    @property
    def all_delivered(self) -> bool:
        return self.dropped == 0 and self.result["live_received"] == self.events

    @property
    def revision_gets(self) -> int:
        return self.requests.get("get revisions", 0)


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
class SizeRuns:
    events: int
    hubs: list[HubRun]
    floors: list[FloorRun]


def _module_argv(
    side: str, kubeconfig: Path, events: int, *extra: str, profiler: Sequence[str] = ()
) -> list[str]:
    """The command of one side (after ``profiler``, a command that runs it under a profiler)."""
    from bench._fake_cluster import NAMESPACE

    return [
        *profiler,
        sys.executable,
        "-m",
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
    tag: str,
    read_replicas: bool = True,
    profiler: Sequence[str] = (),
) -> tuple[HubRun, int]:
    """One hub process over a backlog of ``events`` new modifications; also the resourceVersion the
    backlog starts after (for the floor)."""
    from bench._fake_cluster import count_requests, kubeconfig_of, touch_apps

    ready = workdir / f"hub-{tag}.ready"
    ready.unlink(missing_ok=True)
    extra = ["--ready", str(ready)]
    extra += [] if read_replicas else ["--no-replicas"]
    argv = _module_argv("hub", kubeconfig_of(server), events, *extra, profiler=profiler)
    outcome: dict[str, Measurement | BaseException] = {}

    def measure() -> None:
        try:
            outcome["measurement"] = run_measured(argv, stdout=workdir / f"hub-{tag}.json")
        except BaseException as exc:  # handed to the benchmark thread
            outcome["error"] = exc

    before = count_requests(server)
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
    after = count_requests(server)
    made = {key: after.get(key, 0) - before.get(key, 0) for key in after}
    if profiler:
        strip_profiler_lines(measurement.stdout)
    result = json.loads(measurement.stdout.read_text(encoding="utf-8"))
    return HubRun(events, make_s, measurement, result, made), start_version


def run_floor(server: GatedFakeKubeApi, events: int, start_version: int, workdir: Path, tag: str) -> FloorRun:
    from bench._fake_cluster import kubeconfig_of

    argv = _module_argv("floor", kubeconfig_of(server), events, "--resource-version", str(start_version))
    measurement = run_measured(argv, stdout=workdir / f"floor-{tag}.json")
    result = json.loads(measurement.stdout.read_text(encoding="utf-8"))
    if result["received"] != events:
        msg = f"the floor read {result['received']} of {events} events"
        raise RuntimeError(msg)
    return FloorRun(events, measurement, result)


def large_size(small: SizeRuns, left_s: float) -> int:
    """The most events (a multiple of ``EVENTS_STEP``, at most ``TARGET_EVENTS``) that ``ROUNDS``
    rounds can use within ``left_s``, projected from the small rounds' per-event and fixed costs."""
    per_event = median(
        [(h.make_s + h.elapsed + f.elapsed) / h.events for h, f in zip(small.hubs, small.floors, strict=True)]
    )
    fixed = median(
        [
            (h.measurement.wall_s - h.elapsed) + (f.measurement.wall_s - f.elapsed)
            for h, f in zip(small.hubs, small.floors, strict=True)
        ]
    )
    per_event *= _PROJECTION_SLACK
    affordable = int((left_s / ROUNDS - fixed) / per_event) if per_event > 0 else TARGET_EVENTS
    return min(TARGET_EVENTS, affordable // EVENTS_STEP * EVENTS_STEP)


def run(workdir: Path) -> list[Row]:
    from bench._fake_cluster import deploy_apps, running_fake

    workdir.mkdir(parents=True, exist_ok=True)
    budget = Budget(BUDGET_S)
    with running_fake(workdir / "cluster") as server:
        names = deploy_apps(server, APPS)
        touched = 0

        def size(events: int) -> SizeRuns:
            nonlocal touched
            progress(f"{TITLE}: {events:,} events, {ROUNDS} rounds")
            hubs, floors = [], []
            for round_ in range(ROUNDS):
                tag = f"{events}-{round_}"
                hub, start_version = run_hub(server, names, events, workdir, first_touch=touched, tag=tag)
                touched += events
                hubs.append(hub)
                floors.append(run_floor(server, events, start_version, workdir, tag))
                server.compact_history()  # the next hub lists afresh; the history need not grow
            return SizeRuns(events, hubs, floors)

        small = size(SMALL_EVENTS)
        progress(f"{TITLE}: {SMALL_EVENTS:,} events with list/watch on Revisions forbidden")
        server.forbid_revision_lists = True
        refused, _ = run_hub(server, names, SMALL_EVENTS, workdir, first_touch=touched, tag="forbidden")
        touched += SMALL_EVENTS
        server.forbid_revision_lists = False
        server.compact_history()
        events = large_size(small, budget.left())
        large = size(events) if events > SMALL_EVENTS else None
        if large is None:
            progress(f"{TITLE}: no larger size fits the time cap")
    return rows(small, large, refused)


def _label(events: int) -> str:
    return f"{APPS} apps, {count(events)} events"


def rows(small: SizeRuns, large: SizeRuns | None, refused: HubRun) -> list[Row]:
    out: list[Row] = []
    for runs in (small, large):
        if runs is None:
            continue
        label = _label(runs.events)
        if runs is large and runs.events < TARGET_EVENTS:
            label += f" (time cap; goal {count(TARGET_EVENTS)})"
        hubs = runs.hubs
        out += [
            compared(
                TITLE,
                "events/s, to the subscriber",
                label,
                [h.events_per_s for h in hubs],
                [f.events_per_s for f in runs.floors],
                per_second,
                goal=f">= {RATIO_GOAL}x",
                check=no_less_than(RATIO_GOAL),
            ),
            Row(
                TITLE,
                "events/s, to the subscriber",
                label,
                spread([h.events_per_s for h in hubs], per_second),
                goal=f">= {count(RATE_GOAL)}/s",
                result=no_less_than(RATE_GOAL)(median([h.events_per_s for h in hubs])),
            ),
            Row(
                TITLE,
                "Revision GETs per event",
                label,
                f"{sum(h.revision_gets for h in hubs) / sum(h.events for h in hubs):.3f}",
                goal="0 (no API call per event)",
                result=PASS if all(h.revision_gets == 0 for h in hubs) else FAIL,
            ),
            Row(
                TITLE,
                "dropped, the reading subscriber (all rounds)",
                label,
                count(sum(h.dropped for h in hubs)),
                goal="0 (all delivered)",
                result=PASS if all(h.all_delivered and h.complete for h in hubs) else FAIL,
            ),
            compared(
                TITLE,
                "peak RSS",
                label,
                [h.measurement.peak_rss_mib for h in hubs],
                [f.measurement.peak_rss_mib for f in runs.floors],
                mib,
            ),
        ]
    out.append(
        Row(
            TITLE,
            "events/s, list/watch on Revisions forbidden (GET per event)",
            _label(refused.events),
            per_second(refused.events_per_s),
            goal="falls back, says so, delivers all",
            result=PASS
            if refused.result.get("reads_revisions_per_event") and refused.all_delivered and refused.complete
            else FAIL,
        )
    )
    made = [h for runs in (small, large) if runs is not None for h in runs.hubs]
    make_rate = sum(h.events for h in made) / sum(h.make_s for h in made)
    out.append(Row(TITLE, "fake makes events (write path)", "", per_second(make_rate)))
    if large is not None:
        growth = median([h.measurement.peak_rss_mib for h in large.hubs]) / median(
            [h.measurement.peak_rss_mib for h in small.hubs]
        )
        floor_growth = median([f.measurement.peak_rss_mib for f in large.floors]) / median(
            [f.measurement.peak_rss_mib for f in small.floors]
        )
        out.append(
            Row(
                TITLE,
                "peak RSS growth",
                f"{count(small.events)} -> {count(large.events)} events",
                times(growth),
                times(floor_growth),
                goal=f"<= {MEMORY_GROWTH_LIMIT}x",
                result=at_most(growth, MEMORY_GROWTH_LIMIT),
            )
        )
    return out


def profile_main(args: argparse.Namespace) -> None:
    """Set the benchmark up once and run the hub side under py-spy (``bench.profile``)."""
    from bench._fake_cluster import deploy_apps, running_fake

    workdir = Path(tempfile.mkdtemp(prefix="flyte-apps-watch-profile-"))
    raw = workdir / "hub.samples.txt"
    with running_fake(workdir) as server:
        names = deploy_apps(server, APPS)
        hub, _ = run_hub(
            server,
            names,
            args.events,
            workdir,
            first_touch=0,
            tag="profile",
            read_replicas=args.read_replicas,
            profiler=record_argv(raw),
        )
    print(
        f"{hub.events:,} events: {hub.events_per_s:,.0f} events/s to the subscriber under the profiler; "
        f"samples in {raw}",
        file=sys.stderr,
    )
    print(summary(raw))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.watch_fanout", description=__doc__.split("\n")[0])
    sides = parser.add_subparsers(dest="side", required=True)
    profile = sides.add_parser("profile", help="run the hub side once under py-spy")
    profile.add_argument("--events", type=int, default=2_000)
    profile.add_argument("--no-replicas", dest="read_replicas", action="store_false")
    for side in ("hub", "floor"):
        sub = sides.add_parser(side)
        sub.add_argument("--kubeconfig", required=True)
        sub.add_argument("--namespace", required=True)
        sub.add_argument("--events", type=int, required=True)
        if side == "hub":
            sub.add_argument("--ready", required=True, help="file written once subscribed")
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
