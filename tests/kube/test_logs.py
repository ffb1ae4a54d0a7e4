"""Reading an app's logs through the real client against the fake API server.

Following tests drive the cluster from a helper thread (``drive``) while the test thread consumes
the log events, as the CLI does; a watchdog stops the fake server if a scenario ever stalls, which
ends every stream, so a broken test fails instead of hanging.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client

from flyte_apps.core.config.models import AppId
from flyte_apps.kube.api import get_pod
from flyte_apps.kube.logs import (
    AppNotFound,
    LogBatch,
    LogOptions,
    LogStreamBroken,
    Notice,
    NoUserContainer,
    ReplicaLines,
    ReplicaReader,
    pick_user_container,
    read_app,
    read_replica,
)
from flyte_apps.kube.replicas import ReplicaNotFound, find_replicas
from flyte_apps.kube.retry import RetryPolicy
from tests.fakes import kube_store
from tests.fakes.kube_api import FakeKubeApi
from tests.fakes.kube_semantics import PODS

NS = "flyte"
APP = AppId(org="", project="proj", domain="dev", name="myapp")
KSVC = "myapp-proj-dev"
RETRY = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02, sleep=lambda _: None)
FAST = LogOptions(poll_interval=0.05, retry=RETRY)
FOLLOW = LogOptions(follow=True, poll_interval=0.05, retry=RETRY)
BASE = datetime(2024, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return BASE + timedelta(seconds=seconds)


def serving(server: FakeKubeApi, *, pods: int = 1) -> list[str]:
    """The app's KService, reconciled and ready, with ``pods`` running replicas."""
    server.add_kservice(NS, KSVC)
    revision = server.reconcile_kservice(NS, KSVC)
    return server.add_revision_pods(NS, KSVC, revision, count=pods)


def lines_of(events: Iterator[LogBatch] | list[LogBatch]) -> list[tuple[str, str]]:
    return [(e.replica, line.message) for e in events if isinstance(e, ReplicaLines) for line in e.lines]


def notices(events: list[LogBatch]) -> list[str]:
    return [e.message for e in events if isinstance(e, Notice)]


def log_requests(server: FakeKubeApi, pod: str | None = None) -> list[dict[str, str]]:
    path = f"/pods/{pod}/log" if pod else "/log"
    return [dict(r.query) for r in server.requests_matching("GET", path)]


WAIT_S = 40.0
"""How long a scenario waits for a condition: on a loaded machine the first log request of a test
alone took 4-8 s, and a Ctrl-C test whose 15 s wait ran out failed twice in four loaded full runs, so a
wait is generous (only a failing test waits it out); it ends well before the watchdog."""
WATCHDOG_S = 60.0
"""A test that hangs ends when its fake cluster stops (long after every ``wait_until``)."""


def wait_until(condition: Callable[[], bool], timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


def drive(scenario: Callable[[], None]) -> threading.Thread:
    """Run ``scenario`` (cluster changes) beside the consuming test thread."""
    thread = threading.Thread(target=scenario, daemon=True)
    thread.start()
    return thread


def start_pod(server: FakeKubeApi, name: str) -> None:
    """A Pending pod's containers start: phase Running, every container running and ready."""
    pod = server.get(PODS, NS, name)
    assert pod is not None
    statuses = [
        dict(s, ready=True, state={"running": {"startedAt": "2024-01-01T00:00:00Z"}})
        for s in pod["status"]["containerStatuses"]
    ]
    server.patch(PODS, NS, name, {"status": {"phase": "Running", "containerStatuses": statuses}}, status=True)


@pytest.fixture(autouse=True)
def watchdog(kube_server: FakeKubeApi) -> Iterator[None]:
    timer = threading.Timer(WATCHDOG_S, kube_server.stop)
    timer.daemon = True
    timer.start()
    yield
    timer.cancel()


# --- which container, which pods ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("containers", "user"),
    [
        (("queue-proxy", "app"), "app"),
        (("app", "queue-proxy"), "app"),
        (("queue-proxy", "main", "sidecar"), "main"),
    ],
)
def test_logs_come_from_the_first_container_that_is_not_queue_proxy(
    kube_server: FakeKubeApi, kube_api: client.ApiClient, containers: tuple[str, ...], user: str
) -> None:
    kube_server.add_kservice(NS, KSVC)
    revision = kube_server.reconcile_kservice(NS, KSVC)
    [pod] = kube_server.add_revision_pods(NS, KSVC, revision, containers=containers)
    for container in containers:
        kube_server.append_log(NS, pod, container, f"from {container}", at=at(1))
    assert pick_user_container(get_pod(kube_api, namespace=NS, name=pod)) == user
    events = list(read_app(kube_api, app=APP, namespace=NS, options=FAST))
    assert lines_of(events) == [(pod, f"from {user}")]
    assert [q["container"] for q in log_requests(kube_server)] == [user]


def test_pod_with_only_queue_proxy_has_no_user_container(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_pod(NS, "lonely", containers=["queue-proxy"])
    pod = get_pod(kube_api, namespace=NS, name="lonely")
    with pytest.raises(NoUserContainer, match=r"^no user container found in pod flyte/lonely$"):
        pick_user_container(pod)


def test_log_request_asks_for_timestamps_and_the_last_1000_lines(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    [pod] = serving(kube_server)
    kube_server.append_log(NS, pod, "app", "hello", at=at(1.123456))
    [event] = list(read_app(kube_api, app=APP, namespace=NS, options=FAST))
    assert isinstance(event, ReplicaLines)
    assert event.replica == pod
    assert [(line.message, line.timestamp) for line in event.lines] == [
        ("hello", "2024-01-01T00:00:01.123456000Z")
    ]
    assert log_requests(kube_server) == [{"container": "app", "timestamps": "true", "tailLines": "1000"}]


def test_tail_limits_history_and_none_reads_it_all(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    [pod] = serving(kube_server)
    for i in range(5):
        kube_server.append_log(NS, pod, "app", f"line {i}", at=at(i))
    last_two = list(read_app(kube_api, app=APP, namespace=NS, options=LogOptions(tail=2, retry=RETRY)))
    assert lines_of(last_two) == [(pod, "line 3"), (pod, "line 4")]
    everything = list(read_app(kube_api, app=APP, namespace=NS, options=LogOptions(tail=None, retry=RETRY)))
    assert len(lines_of(everything)) == 5
    assert "tailLines" not in log_requests(kube_server)[-1]


def test_follow_is_asked_only_while_the_pod_is_running(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    [pod] = serving(kube_server)
    kube_server.append_log(NS, pod, "app", "done", at=at(1))
    kube_server.finish_pod(NS, pod)
    events = list(read_app(kube_api, app=APP, namespace=NS, options=FOLLOW))
    assert lines_of(events) == [(pod, "done")]
    assert "follow" not in log_requests(kube_server)[0]


def test_old_revision_pods_are_left_out_once_a_newer_revision_is_ready(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_kservice(NS, KSVC)
    first = kube_server.reconcile_kservice(NS, KSVC)
    old = kube_server.add_revision_pods(NS, KSVC, first)
    second = kube_server.reconcile_kservice(NS, KSVC, ready=False)
    new = kube_server.add_revision_pods(NS, KSVC, second)
    names = [p.metadata.name for p in find_replicas(kube_api, namespace=NS, kservice=KSVC).pods]
    assert names == old  # the new revision is not ready yet: the old one still serves
    kube_server.mark_revision_ready(NS, KSVC)
    names = [p.metadata.name for p in find_replicas(kube_api, namespace=NS, kservice=KSVC).pods]
    assert names == new
    selector = kube_server.requests_matching("GET", "/pods")[-1].query["labelSelector"]
    assert selector == f"serving.knative.dev/service={KSVC},serving.knative.dev/revision={second}"


def test_without_a_kservice_every_pod_labelled_for_it_is_a_replica(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    for name, revision in (("a", "r1"), ("b", "r2")):
        labels = {"serving.knative.dev/service": KSVC, "serving.knative.dev/revision": revision}
        kube_server.add_pod(NS, name, labels=labels)
    kube_server.add_pod(NS, "other", labels={"serving.knative.dev/service": "other-proj-dev"})
    replicas = find_replicas(kube_api, namespace=NS, kservice=KSVC)
    assert not replicas.kservice_found
    assert [p.metadata.name for p in replicas.pods] == ["a", "b"]


def test_without_following_replicas_come_one_after_another_oldest_first(
    kube_server: FakeKubeApi, kube_api: client.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Created in neither name nor age order: the fake API lists them as they were created.
    for name, created in (("c", at(10)), ("a", at(20)), ("b", at(0))):
        monkeypatch.setattr(kube_store, "utc_now", lambda moment=created: moment)
        kube_server.add_pod(NS, name, labels={"serving.knative.dev/service": KSVC})
        kube_server.append_log(NS, name, "app", f"from {name}", f"more from {name}", at=at(30))
    events = list(read_app(kube_api, app=APP, namespace=NS, options=FAST))
    assert [replica for replica, _ in lines_of(events)] == ["b", "b", "c", "c", "a", "a"]


def test_missing_app_is_not_found(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    with pytest.raises(AppNotFound, match="app proj/dev/myapp not found: no KService 'myapp-proj-dev'"):
        list(read_app(kube_api, app=APP, namespace=NS, options=FAST))


def test_scaled_to_zero_app_says_so_and_ends(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    serving(kube_server, pods=0)
    events = list(read_app(kube_api, app=APP, namespace=NS, options=FAST))
    assert events == [Notice("app proj/dev/myapp has no running replicas (scaled to zero)")]


def test_replica_that_has_not_started_is_reported_not_an_error(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    [running] = serving(kube_server)
    kube_server.append_log(NS, running, "app", "up", at=at(1))
    labels = {"serving.knative.dev/service": KSVC, "serving.knative.dev/revision": f"{KSVC}-00001"}
    kube_server.add_pod(NS, "zz-starting", labels=labels, containers=["queue-proxy", "app"], phase="Pending")
    events = list(read_app(kube_api, app=APP, namespace=NS, options=FAST))
    assert lines_of(events) == [(running, "up")]
    assert notices(events) == ["replica zz-starting has not started yet (ContainerCreating): no logs"]


# --- one replica --------------------------------------------------------------------------------


def test_a_replica_of_another_app_is_refused(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    kube_server.add_pod(NS, "theirs", labels={"serving.knative.dev/service": "other-proj-dev"})
    with pytest.raises(ReplicaNotFound, match=r"pod 'flyte/theirs' is not a replica of app proj/dev/myapp"):
        list(read_replica(kube_api, app=APP, namespace=NS, name="theirs", options=FAST))
    with pytest.raises(ReplicaNotFound, match=r"replica 'ghost' of app proj/dev/myapp not found"):
        list(read_replica(kube_api, app=APP, namespace=NS, name="ghost", options=FAST))
    assert log_requests(kube_server) == []


def test_one_replica_of_an_old_revision_can_still_be_read(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_kservice(NS, KSVC)
    first = kube_server.reconcile_kservice(NS, KSVC)
    [old] = kube_server.add_revision_pods(NS, KSVC, first)
    kube_server.reconcile_kservice(NS, KSVC)
    kube_server.append_log(NS, old, "app", "still here", at=at(1))
    events = list(read_replica(kube_api, app=APP, namespace=NS, name=old, options=FAST))
    assert lines_of(events) == [(old, "still here")]


# --- broken streams -----------------------------------------------------------------------------


@pytest.mark.parametrize("follow", [False, True])
def test_cut_stream_resumes_without_repeating_or_losing_lines(
    kube_server: FakeKubeApi, kube_api: client.ApiClient, follow: bool
) -> None:
    [pod] = serving(kube_server)
    kube_server.append_log(NS, pod, "app", "l0", at=at(0.5))
    kube_server.append_log(NS, pod, "app", "l1", "l2", "l3", at=at(1.25))  # one burst, one instant
    kube_server.append_log(NS, pod, "app", "l4", at=at(1.75))
    kube_server.append_log(NS, pod, "app", "l5", at=at(2.0))
    kube_server.cut_streams_after(3, path_contains="/log")  # l0 l1 l2, then the connection drops
    if follow:

        def finish_after_resume() -> None:
            wait_until(lambda: len(log_requests(kube_server)) == 2)
            kube_server.finish_pod(NS, pod)

        drive(finish_after_resume)
    options = FOLLOW if follow else FAST
    events = list(read_app(kube_api, app=APP, namespace=NS, options=options))
    assert lines_of(events) == [(pod, f"l{i}") for i in range(6)]
    first, resumed = log_requests(kube_server)[:2]
    assert first["tailLines"] == "1000"
    assert resumed["sinceTime"] == "2024-01-01T00:00:01Z"  # whole seconds: l1..l5 come again
    assert "tailLines" not in resumed


def test_stream_that_keeps_breaking_gives_up_after_the_retry_budget(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    [pod] = serving(kube_server)
    kube_server.append_log(NS, pod, "app", "never delivered", at=at(1))
    kube_server.cut_streams_after(0, times=100, path_contains="/log")
    with pytest.raises(LogStreamBroken, match=rf"replica 'flyte/{pod}' broke 3 times in a row"):
        list(read_app(kube_api, app=APP, namespace=NS, options=FAST))
    assert len(log_requests(kube_server)) == RETRY.attempts


def test_breaks_that_make_progress_do_not_use_up_the_budget(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    [pod] = serving(kube_server)
    for i in range(6):
        kube_server.append_log(NS, pod, "app", f"l{i}", at=at(i))
    # Each stream breaks after two lines; a resumed one repeats the last line, so gives one new.
    kube_server.cut_streams_after(2, times=5, path_contains="/log")
    pod_obj = get_pod(kube_api, namespace=NS, name=pod)
    batches = ReplicaReader(kube_api, pod_obj, NS, FAST).batches()
    lines = [line.message for batch in batches for line in batch]
    assert lines == [f"l{i}" for i in range(6)]
    assert len(log_requests(kube_server)) == 5  # the fifth stream has just two lines: not cut


# --- following ----------------------------------------------------------------------------------


def test_follow_interleaves_replicas_picks_up_new_ones_and_ends_when_all_finish(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    first, second = serving(kube_server, pods=2)
    third: list[str] = []

    def scenario() -> None:
        wait_until(lambda: len(log_requests(kube_server)) == 2)
        kube_server.append_log(NS, first, "app", "one from first")
        kube_server.append_log(NS, second, "app", "one from second")
        third.extend(kube_server.add_revision_pods(NS, KSVC, f"{KSVC}-00001"))
        wait_until(lambda: len(log_requests(kube_server)) == 3)
        kube_server.append_log(NS, third[0], "app", "one from third")
        kube_server.append_log(NS, first, "app", "two from first")
        for pod in (first, second, third[0]):
            kube_server.finish_pod(NS, pod)

    drive(scenario)
    events = list(read_app(kube_api, app=APP, namespace=NS, options=FOLLOW))
    got = lines_of(events)
    assert sorted(got) == sorted(
        [
            (first, "one from first"),
            (first, "two from first"),
            (second, "one from second"),
            (third[0], "one from third"),
        ]
    )
    assert got.index((first, "one from first")) < got.index((first, "two from first"))
    assert all(q.get("follow") == "true" for q in log_requests(kube_server))


def test_follow_tails_the_replicas_running_at_its_start_and_reads_a_later_one_from_its_first_line(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    [first] = serving(kube_server)
    kube_server.append_log(NS, first, "app", "history")
    labels = {"serving.knative.dev/service": KSVC, "serving.knative.dev/revision": f"{KSVC}-00001"}

    def scenario() -> None:
        wait_until(lambda: len(log_requests(kube_server)) == 1)
        # The new replica writes before a poll finds it: none of it is history.
        kube_server.append_log(NS, "late", "app", "written before it was found")
        kube_server.add_pod(NS, "late", labels=labels, containers=["queue-proxy", "app"])
        wait_until(lambda: len(log_requests(kube_server)) == 2)
        kube_server.append_log(NS, first, "app", "new in first")
        for pod in (first, "late"):
            kube_server.finish_pod(NS, pod)

    drive(scenario)
    events = list(read_app(kube_api, app=APP, namespace=NS, options=replace(FOLLOW, tail=0)))
    expected = [(first, "new in first"), ("late", "written before it was found")]
    assert sorted(lines_of(events)) == sorted(expected)
    assert log_requests(kube_server, first)[0]["tailLines"] == "0"
    assert "tailLines" not in log_requests(kube_server, "late")[0]


def test_following_a_scaled_to_zero_app_waits_for_a_replica(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    serving(kube_server, pods=0)
    started: list[str] = []

    def scenario() -> None:
        wait_until(lambda: len(kube_server.requests_matching("GET", "/pods")) >= 3)  # a few polls
        started.extend(kube_server.add_revision_pods(NS, KSVC, f"{KSVC}-00001"))
        wait_until(lambda: len(log_requests(kube_server)) == 1)
        kube_server.append_log(NS, started[0], "app", "woke up")
        kube_server.delete(PODS, NS, started[0])  # scaled back down

    drive(scenario)
    events = list(read_app(kube_api, app=APP, namespace=NS, options=FOLLOW))
    assert notices(events) == [
        "app proj/dev/myapp has no running replicas (scaled to zero); "
        "waiting for a replica to start (Ctrl-C to stop)"
    ]
    assert lines_of(events) == [(started[0], "woke up")]


def test_following_waits_for_a_pending_replica_to_start(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    serving(kube_server, pods=0)
    labels = {"serving.knative.dev/service": KSVC, "serving.knative.dev/revision": f"{KSVC}-00001"}
    kube_server.add_pod(NS, "cold", labels=labels, containers=["queue-proxy", "app"], phase="Pending")

    def scenario() -> None:
        wait_until(lambda: len(log_requests(kube_server)) >= 2)  # refused twice: still creating
        start_pod(kube_server, "cold")
        kube_server.append_log(NS, "cold", "app", "ready")
        wait_until(lambda: any(q.get("follow") for q in log_requests(kube_server)))
        kube_server.finish_pod(NS, "cold")

    drive(scenario)
    events = list(read_app(kube_api, app=APP, namespace=NS, options=FOLLOW))
    assert lines_of(events) == [("cold", "ready")]
    assert notices(events) == []


def test_closing_a_follow_stops_every_reader_thread(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    first, second = serving(kube_server, pods=2)
    kube_server.append_log(NS, first, "app", "hello")
    events = read_app(kube_api, app=APP, namespace=NS, options=FOLLOW)
    assert lines_of([next(e for e in events if isinstance(e, ReplicaLines))]) == [(first, "hello")]
    wait_until(lambda: len(log_requests(kube_server)) == 2)
    events.close()
    readers: list[Any] = [t for t in threading.enumerate() if t.name.startswith("logs-")]
    assert readers == []
    assert kube_server.get(PODS, NS, second) is not None  # nothing was touched in the cluster


def test_replica_no_node_took_is_reported_not_an_empty_log(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    # The real API answers the log of an unscheduled pod with 204 and no body (seen in the e2e suite).
    labels = {"serving.knative.dev/service": KSVC, "serving.knative.dev/revision": f"{KSVC}-00001"}
    serving(kube_server, pods=0)
    kube_server.add_pod(
        NS, "pending", labels=labels, containers=["queue-proxy", "app"], phase="Pending", node=None
    )
    events = list(read_app(kube_api, app=APP, namespace=NS, options=FAST))
    assert notices(events) == ["replica pending has not started yet (not scheduled to a node): no logs"]
    assert lines_of(events) == []
