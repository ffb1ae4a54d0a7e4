"""The watch hub against the fake API server: snapshot, live events, routing, buffers, recovery.

Every recovery test makes changes the hub's watch cannot deliver (the watch has expired or its
connection was cut) and checks that each change still arrives exactly once, as the difference
the hub's relist finds against its cache.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest
from flyteidl2.app import app_definition_pb2 as app_pb
from flyteidl2.app.app_payload_pb2 import WatchResponse

from flyte_apps.core import constants as c
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.status import app_key
from flyte_apps.kube import watch
from flyte_apps.kube.errors import KubeError, KubeForbidden
from flyte_apps.kube.retry import RetryPolicy
from flyte_apps.kube.target import KubeTarget, build_api_client
from flyte_apps.kube.watch import Subscription, WatchHub, WatchTarget, event_app
from tests.fakes.kube_api import FakeKubeApi
from tests.fakes.kube_semantics import KSERVICES, REVISIONS
from tests.support.config import minimal_config

NS = "flyte"
FAST = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.05)
EVENT_TIMEOUT = 5.0
QUIET = 0.3
NO_SUCH_RESOURCE_TYPE = "the server could not find the requested resource"
HUB_WATCHES = 2
"""A hub watches KServices, and Revisions for the replica counts."""

HubFactory = Callable[..., WatchHub]


@pytest.fixture
def make_hub(kube_server: FakeKubeApi) -> Iterator[HubFactory]:
    """Started hubs on the fake server (stopped at teardown); keyword arguments override options."""
    hubs: list[WatchHub] = []

    def make(**options: Any) -> WatchHub:
        assert kube_server.kubeconfig_path is not None
        target = KubeTarget(str(kube_server.kubeconfig_path))
        settings: dict[str, Any] = {
            "namespace": NS,
            "base_domain": "apps.example.com",
            "buffer_size": 100,
            "watch_timeout_seconds": 30,
            "retry": FAST,
            "reconnect": RetryPolicy(base_delay=0.01, max_delay=0.1),
        }
        settings.update(options)
        hub = WatchHub(lambda: build_api_client(target), **settings)
        hubs.append(hub)
        hub.start()
        return hub

    yield make
    for hub in hubs:
        hub.stop()


def deploy(server: FakeKubeApi, **app: Any) -> str:
    """Create the KService the stack renders for one app (default proj/dev/myapp); its name."""
    manifest = copy.deepcopy(plan_stack(minimal_config(**app)).apps[0].kservice)
    server.create(KSERVICES, manifest, NS)
    return str(manifest["metadata"]["name"])


def touch(server: FakeKubeApi, name: str, value: str) -> None:
    """A change Knative or a user could make: a new annotation (a MODIFIED event)."""
    server.patch(KSERVICES, NS, name, {"metadata": {"annotations": {"example.com/touched": value}}})


def make_ready(server: FakeKubeApi, name: str) -> None:
    server.patch(
        KSERVICES, NS, name, {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, status=True
    )


def describe(event: WatchResponse) -> tuple[str, str]:
    return str(event.WhichOneof("event")).removesuffix("_event"), app_key(event_app(event).metadata.id)


def take(subscription: Subscription, count: int) -> list[WatchResponse]:
    events: list[WatchResponse] = []
    for _ in range(count):
        event = subscription.get(EVENT_TIMEOUT)
        assert event is not None, (
            f"only {len(events)} of {count} events arrived: {[describe(e) for e in events]}"
        )
        events.append(event)
    return events


def assert_quiet(subscription: Subscription) -> None:
    extra = subscription.get(QUIET)
    assert extra is None, f"unexpected event {describe(extra)}"


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + EVENT_TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def readers_have(received: list[list[WatchResponse]], count: int) -> bool:
    return all(len(got) == count for got in received)


def watch_requests(server: FakeKubeApi) -> int:
    return sum(1 for r in server.requests_matching("GET", "/services") if r.query.get("watch") == "true")


# --- snapshot and live events ------------------------------------------------------------------


def test_subscriber_gets_the_snapshot_then_live_create_update_delete(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    first = deploy(kube_server)
    hub = make_hub()
    subscription = hub.subscribe()
    assert [describe(e) for e in take(subscription, 1)] == [("create", "proj/dev/myapp")]

    second = deploy(kube_server, name="second")
    make_ready(kube_server, first)
    kube_server.delete(KSERVICES, NS, second)
    events = take(subscription, 3)
    assert [describe(e) for e in events] == [
        ("create", "proj/dev/second"),
        ("update", "proj/dev/myapp"),
        ("delete", "proj/dev/second"),
    ]
    update = events[1].update_event
    assert list(update.old_app.status.conditions) == []
    assert [cond.deployment_status for cond in update.updated_app.status.conditions] == [
        app_pb.Status.DEPLOYMENT_STATUS_ACTIVE
    ]
    assert update.updated_app.status.ingress.public_url == "https://myapp-proj-dev.apps.example.com"
    assert_quiet(subscription)


def test_kservice_losing_the_managed_label_is_a_delete(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    name = deploy(kube_server)
    hub = make_hub()
    subscription = hub.subscribe()
    take(subscription, 1)
    kube_server.patch(KSERVICES, NS, name, {"metadata": {"labels": {c.LABEL_APP_MANAGED: None}}})
    assert [describe(e) for e in take(subscription, 1)] == [("delete", "proj/dev/myapp")]
    touch(kube_server, name, "unmanaged change")
    assert_quiet(subscription)


def test_late_subscriber_gets_current_state_once_not_history(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    name = deploy(kube_server)
    hub = make_hub()
    early = hub.subscribe()
    take(early, 1)
    for value in ("1", "2", "3"):
        touch(kube_server, name, value)
    take(early, 3)
    late = hub.subscribe()
    (event,) = take(late, 1)
    assert describe(event) == ("create", "proj/dev/myapp")
    assert_quiet(late)


# --- routing ---------------------------------------------------------------------------------------


def test_subscriptions_are_keyed_by_full_identity_not_name(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    mine = deploy(kube_server)
    theirs = deploy(kube_server, project="other")
    hub = make_hub()
    proj = hub.subscribe(WatchTarget(project="proj", domain="dev", name="myapp"))
    other = hub.subscribe(WatchTarget(project="other", domain="dev", name="myapp"))
    assert [describe(e) for e in take(proj, 1)] == [("create", "proj/dev/myapp")]
    assert [describe(e) for e in take(other, 1)] == [("create", "other/dev/myapp")]

    touch(kube_server, theirs, "x")
    assert [describe(e) for e in take(other, 1)] == [("update", "other/dev/myapp")]
    assert_quiet(proj)  # upstream's name-keyed dispatch would deliver it here too ((j)4)
    touch(kube_server, mine, "y")
    assert [describe(e) for e in take(proj, 1)] == [("update", "proj/dev/myapp")]
    assert_quiet(other)


def test_a_kservice_that_comes_to_hold_another_app_is_a_delete_for_one_and_a_create_for_the_other(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    """Routing is by the identity the KService holds (``flyte.org/app-id``), not by its name."""
    name = deploy(kube_server)
    hub = make_hub()
    mine = hub.subscribe(WatchTarget(project="proj", domain="dev", name="myapp"))
    theirs = hub.subscribe(WatchTarget(project="other", domain="dev", name="myapp"))
    everything = hub.subscribe()
    take(mine, 1)
    take(everything, 1)
    kube_server.patch(
        KSERVICES, NS, name, {"metadata": {"annotations": {c.ANNOTATION_APP_ID: "other/dev/myapp"}}}
    )
    assert [describe(e) for e in take(mine, 1)] == [("delete", "proj/dev/myapp")]
    assert [describe(e) for e in take(theirs, 1)] == [("create", "other/dev/myapp")]
    assert [describe(e) for e in take(everything, 2)] == [
        ("delete", "proj/dev/myapp"),
        ("create", "other/dev/myapp"),
    ]
    touch(kube_server, name, "x")
    assert [describe(e) for e in take(theirs, 1)] == [("update", "other/dev/myapp")]
    assert_quiet(mine)


def test_subscription_without_target_gets_every_app(kube_server: FakeKubeApi, make_hub: HubFactory) -> None:
    deploy(kube_server)
    theirs = deploy(kube_server, project="other")
    hub = make_hub()
    everything = hub.subscribe()
    assert sorted(describe(e) for e in take(everything, 2)) == [
        ("create", "other/dev/myapp"),
        ("create", "proj/dev/myapp"),
    ]
    deploy(kube_server, name="third", domain="prod")
    touch(kube_server, theirs, "x")
    assert [describe(e) for e in take(everything, 2)] == [
        ("create", "proj/prod/third"),
        ("update", "other/dev/myapp"),
    ]


def test_project_domain_subscription_gets_only_that_project_domain(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    deploy(kube_server)
    deploy(kube_server, domain="prod")
    hub = make_hub()
    dev = hub.subscribe(WatchTarget(project="proj", domain="dev"))
    assert [describe(e) for e in take(dev, 1)] == [("create", "proj/dev/myapp")]
    deploy(kube_server, name="second", domain="prod")
    deploy(kube_server, name="second")
    assert [describe(e) for e in take(dev, 1)] == [("create", "proj/dev/second")]
    assert_quiet(dev)


# --- buffers -------------------------------------------------------------------------------------


def test_slow_subscriber_loses_events_while_a_fast_one_loses_none(
    kube_server: FakeKubeApi, make_hub: HubFactory, caplog: pytest.LogCaptureFixture
) -> None:
    name = deploy(kube_server)
    hub = make_hub(buffer_size=2)
    slow = hub.subscribe()
    fast = hub.subscribe()
    take(fast, 1)
    with caplog.at_level(logging.WARNING, logger="components"):
        for value in map(str, range(6)):
            touch(kube_server, name, value)
            (event,) = take(fast, 1)  # delivered while the slow subscriber's buffer is full
            assert event.update_event.updated_app.metadata.id.name == "myapp"
    assert fast.dropped == 0
    assert slow.dropped == 4
    assert [describe(e) for e in take(slow, 3)] == [("create", "proj/dev/myapp")] + [
        ("update", "proj/dev/myapp")
    ] * 2
    assert_quiet(slow)
    assert caplog.text.count("subscriber buffer full, dropping update for app: proj/dev/myapp") == 4


def test_a_backlog_reaches_each_subscriber_in_order_and_a_full_buffer_keeps_the_oldest(
    kube_server: FakeKubeApi, make_hub: HubFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Events are handed over in batches; nobody reads here, so what each buffer holds does not
    depend on timing: the first ``buffer_size`` events, the rest dropped with a warning each, and the
    same event objects in every subscriber."""
    hub = make_hub(buffer_size=20)
    first, second = hub.subscribe(), hub.subscribe(WatchTarget(project="proj"))
    names = [f"app{i:02d}" for i in range(30)]
    with caplog.at_level(logging.WARNING, logger="flyte_apps.kube"):
        for name in names:
            deploy(kube_server, name=name)
        wait_until(lambda: first.dropped == second.dropped == 10, "the last events to be dropped")
    received = [take(subscription, 20) for subscription in (first, second)]
    assert [describe(e) for e in received[0]] == [("create", f"proj/dev/{name}") for name in names[:20]]
    assert all(a is b for a, b in zip(*received, strict=True))
    assert_quiet(first)
    dropped = [r.getMessage() for r in caplog.records if "subscriber buffer full" in r.getMessage()]
    expected = [f"subscriber buffer full, dropping update for app: proj/dev/{name}" for name in names[20:]]
    assert sorted(dropped) == sorted(expected * 2)  # one per subscriber and event, in batches


def test_a_reader_slower_than_a_burst_loses_nothing(
    kube_server: FakeKubeApi, make_hub: HubFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A burst of 30 apps into a buffer of 2: the hub waits for a reader that keeps reading, however
    slowly (here 5 ms an event), so it gets every event, in order, and nothing is dropped."""
    hub = make_hub(buffer_size=2)
    reader = hub.subscribe()
    received: list[WatchResponse] = []

    def read_slowly() -> None:
        for event in reader:
            received.append(event)
            time.sleep(0.005)

    thread = threading.Thread(target=read_slowly)
    thread.start()
    names = [f"app{i:02d}" for i in range(30)]
    with caplog.at_level(logging.WARNING, logger="flyte_apps.kube"):
        for name in names:
            deploy(kube_server, name=name)
        wait_until(lambda: len(received) == len(names), "every app's create event")
    hub.unsubscribe(reader)
    thread.join(EVENT_TIMEOUT)
    assert [describe(e) for e in received] == [("create", f"proj/dev/{name}") for name in names]
    assert reader.dropped == 0
    assert "subscriber buffer full" not in caplog.text


def test_a_reader_that_keeps_reading_loses_nothing_however_small_its_buffer() -> None:
    events = [WatchResponse(create_event={"app": {"metadata": {"id": {"name": f"a{i}"}}}}) for i in range(40)]
    subscription = Subscription(WatchTarget(), 2, [])
    got: list[WatchResponse] = []

    def read_slowly() -> None:
        while (event := subscription.get(EVENT_TIMEOUT)) is not None:
            got.append(event)
            time.sleep(0.002)

    reader = threading.Thread(target=read_slowly)
    reader.start()
    offered = [subscription.offer(event) for event in events]
    subscription.close()
    reader.join(EVENT_TIMEOUT)
    assert not reader.is_alive(), "the reader did not see the end"
    assert offered == [True] * len(events)
    assert subscription.dropped == 0
    assert [a is b for a, b in zip(got, events, strict=True)] == [True] * len(events)


def test_a_subscriber_that_stopped_reading_keeps_its_oldest_events_until_it_reads_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watch, "_ROOM_WAIT_S", 0.05)
    events = [WatchResponse() for _ in range(5)]
    snapshot = WatchResponse(create_event={"app": {"metadata": {"id": {"name": "snap"}}}})
    subscription = Subscription(WatchTarget(), 2, [snapshot])
    assert [subscription.offer(event) for event in events[:4]] == [True, True, False, False]
    assert subscription.dropped == 2
    assert subscription.get(0) is snapshot  # the snapshot is not a live event: no room made
    assert subscription.offer(events[4]) is False
    assert subscription.get(0) is events[0]  # it reads again: the next event finds room
    assert subscription.offer(events[4]) is True
    subscription.close()
    assert [subscription.get(0) for _ in range(3)] == [events[1], events[4], None]
    assert subscription.dropped == 3


def test_an_ended_subscription_says_so_on_every_read_and_takes_no_more_events() -> None:
    subscription = Subscription(WatchTarget(), 1, [])
    assert subscription.offer(WatchResponse()) is True
    subscription.close()
    subscription.close()  # the hub and the reader may both end it
    assert subscription.offer(WatchResponse()) is True  # nobody to deliver to: not a drop
    assert subscription.get(0) is not None
    assert [subscription.get(0), subscription.get(0)] == [None, None]
    assert subscription.dropped == 0


def test_a_stalled_subscriber_keeps_its_oldest_events_while_readers_get_every_one(
    kube_server: FakeKubeApi, make_hub: HubFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A subscriber that never reads holds the snapshot and the first ``buffer_size`` live events; the
    later ones are dropped for it alone (counted, a warning each), readers in their own threads get
    all of them, and once the stalled one has read its buffer it gets new events again."""
    name = deploy(kube_server)
    hub = make_hub(buffer_size=3)
    stalled = hub.subscribe()
    readers = [hub.subscribe() for _ in range(3)]
    received: list[list[WatchResponse]] = [[] for _ in readers]
    threads = [
        threading.Thread(target=got.extend, args=(r,)) for r, got in zip(readers, received, strict=True)
    ]
    for thread in threads:
        thread.start()
    with caplog.at_level(logging.WARNING, logger="flyte_apps.kube"):
        for count in range(2, 12):  # one change at a time: a reader's buffer never fills
            touch(kube_server, name, str(count))
            wait_until(partial(readers_have, received, count), f"every reader's {count} events")
    assert [r.dropped for r in readers] == [0, 0, 0]
    assert stalled.dropped == 7
    assert caplog.text.count("subscriber buffer full, dropping update for app: proj/dev/myapp") == 7
    kept = take(stalled, 4)
    assert describe(kept[0]) == ("create", "proj/dev/myapp")
    assert all(a is b for a, b in zip(kept[1:], received[0][1:4], strict=True))  # the oldest live ones
    assert_quiet(stalled)
    touch(kube_server, name, "after")
    (again,) = take(stalled, 1)
    wait_until(lambda: all(len(got) == 12 for got in received), "every reader's last event")
    assert again is received[0][11]
    for reader in readers:
        hub.unsubscribe(reader)
    for thread in threads:
        thread.join(EVENT_TIMEOUT)


# --- recovery --------------------------------------------------------------------------------------


def changes_the_watch_cannot_see(server: FakeKubeApi, updated: str, deleted: str) -> None:
    touch(server, updated, "while not watching")
    server.delete(KSERVICES, NS, deleted)
    deploy(server, name="third")


EXPECTED_RECOVERY = [
    ("create", "proj/dev/third"),
    ("delete", "proj/dev/second"),
    ("update", "proj/dev/myapp"),
]


def test_in_stream_410_relists_without_loss_or_duplicates(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    first, second = deploy(kube_server), deploy(kube_server, name="second")
    hub = make_hub()
    subscription = hub.subscribe()
    take(subscription, 2)
    wait_until(lambda: kube_server.open_watches == HUB_WATCHES, "the hub's watches")
    kube_server.add_latency(0.3, times=1, method="GET", path_contains="/services")  # holds the relist back
    kube_server.compact_history()
    assert kube_server.expire_watches() == HUB_WATCHES  # an ERROR event with code 410, then each ends
    changes_the_watch_cannot_see(kube_server, first, second)

    assert sorted(describe(e) for e in take(subscription, 3)) == EXPECTED_RECOVERY
    assert_quiet(subscription)
    assert hub.relists == 2
    touch(kube_server, first, "after")  # and the hub watches again
    assert [describe(e) for e in take(subscription, 1)] == [("update", "proj/dev/myapp")]


def test_a_relist_after_410_emits_only_what_changed_while_the_watch_was_gone(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    """The relist finds five apps, four of them at the resourceVersion the hub holds: they make no
    event; the one changed meanwhile is an update from the state the hub had."""
    names = [deploy(kube_server, name=f"app{i}") for i in range(5)]
    make_ready(kube_server, names[2])
    hub = make_hub()
    subscription = hub.subscribe()
    take(subscription, 5)
    wait_until(lambda: kube_server.open_watches == HUB_WATCHES, "the hub's watches")
    kube_server.add_latency(0.3, times=1, method="GET", path_contains="/services")  # holds the relist back
    kube_server.compact_history()
    assert kube_server.expire_watches() == HUB_WATCHES
    kube_server.patch(KSERVICES, NS, names[2], {"status": {"conditions": []}}, status=True)

    (event,) = take(subscription, 1)
    assert describe(event) == ("update", "proj/dev/app2")
    assert [cond.deployment_status for cond in event.update_event.old_app.status.conditions] == [
        app_pb.Status.DEPLOYMENT_STATUS_ACTIVE
    ]
    assert list(event.update_event.updated_app.status.conditions) == []
    assert_quiet(subscription)
    assert hub.relists == 2


def test_http_410_on_rewatch_relists_without_loss_or_duplicates(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    kube_server.watch_gone_as_http = True
    first, second = deploy(kube_server), deploy(kube_server, name="second")
    hub = make_hub(watch_timeout_seconds=1)
    subscription = hub.subscribe()
    take(subscription, 2)
    wait_until(lambda: kube_server.open_watches == HUB_WATCHES, "the hub's watches")
    kube_server.add_pod(NS, "unrelated")  # history moves on without a KService event for the hub
    kube_server.compact_history()
    watches = watch_requests(kube_server)
    kube_server.add_latency(0.3, times=1, method="GET", path_contains="/services")
    wait_until(lambda: watch_requests(kube_server) > watches, "the hub to resume its ended watch")
    changes_the_watch_cannot_see(kube_server, first, second)  # while the API server holds it back

    assert sorted(describe(e) for e in take(subscription, 3)) == EXPECTED_RECOVERY
    assert_quiet(subscription)
    assert hub.relists == 2


def test_dropped_connection_relists_without_loss_or_duplicates(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    first, second = deploy(kube_server), deploy(kube_server, name="second")
    kube_server.cut_streams_after(0, times=1, path_contains="/services")  # the hub's first watch breaks
    hub = make_hub()
    subscription = hub.subscribe()
    take(subscription, 2)
    wait_until(lambda: kube_server.open_watches == HUB_WATCHES, "the hub's watches")
    changes_the_watch_cannot_see(kube_server, first, second)

    assert sorted(describe(e) for e in take(subscription, 3)) == EXPECTED_RECOVERY
    assert_quiet(subscription)
    assert hub.relists == 2
    kube_server.delete(KSERVICES, NS, first)
    assert [describe(e) for e in take(subscription, 1)] == [("delete", "proj/dev/myapp")]


def test_a_watch_line_longer_than_its_bound_is_a_bad_answer_and_ends_the_hub(
    kube_server: FakeKubeApi, make_hub: HubFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: a line longer than ``MAX_EVENT_BYTES`` (a ``ResponseTooLarge``, a ``ValueError``)
    was taken for a broken stream, so the hub listed again and read the same line forever, never
    giving up. It is an answer of the wrong shape: ``MAX_BAD_ROUNDS`` of them in a row end the hub."""
    monkeypatch.setattr(watch, "MAX_EVENT_BYTES", 1024)
    deploy(kube_server)
    line = json.dumps({"type": "ADDED", "object": {"padding": "x" * 4096}}) + "\n"
    kube_server.serve_raw_next("watch=true", 200, line, times=None)
    hub = make_hub(read_replicas=False)
    subscription = hub.subscribe()
    take(subscription, 1)
    wait_until(lambda: subscription.closed, "the hub to give up")
    assert str(subscription.failure).startswith(
        "watch of services.serving.knative.dev in namespace 'flyte' gave up after 5 bad responses in a row"
    )
    assert "a line of the stream is larger than 1,024 bytes" in str(subscription.failure)


def test_watch_that_times_out_resumes_without_relisting(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    name = deploy(kube_server)
    hub = make_hub(watch_timeout_seconds=1)
    subscription = hub.subscribe()
    take(subscription, 1)
    wait_until(lambda: watch_requests(kube_server) >= 2, "a second watch")
    touch(kube_server, name, "x")
    assert [describe(e) for e in take(subscription, 1)] == [("update", "proj/dev/myapp")]
    assert hub.relists == 1


# --- lifecycle ---------------------------------------------------------------------------------


def test_unsubscribe_ends_the_stream(kube_server: FakeKubeApi, make_hub: HubFactory) -> None:
    name = deploy(kube_server)
    hub = make_hub()
    subscription = hub.subscribe()
    received: list[WatchResponse] = []
    reader = threading.Thread(target=lambda: received.extend(subscription))
    reader.start()
    wait_until(lambda: len(received) == 1, "the snapshot")
    hub.unsubscribe(subscription)
    reader.join(EVENT_TIMEOUT)
    assert not reader.is_alive()
    assert subscription.closed
    touch(kube_server, name, "x")
    assert subscription.get(QUIET) is None
    assert [describe(e) for e in received] == [("create", "proj/dev/myapp")]


def test_stop_interrupts_a_long_watch_and_closes_subscriptions(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    deploy(kube_server)
    hub = make_hub(watch_timeout_seconds=300)
    subscription = hub.subscribe()
    take(subscription, 1)
    wait_until(lambda: kube_server.open_watches == HUB_WATCHES, "the hub's watches")
    hub.stop()
    assert subscription.closed
    assert subscription.get(0) is None
    assert not [t for t in threading.enumerate() if t.name == "flyte-apps-watch-services" and t.is_alive()]


def test_start_fails_with_the_api_error_when_the_namespace_cannot_be_listed(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    kube_server.fail_next(403, method="GET", path_contains="/services")
    with pytest.raises(KubeForbidden) as err:
        make_hub()
    assert "forbidden: RBAC must allow verb 'list' on 'services.serving.knative.dev'" in str(err.value)


@pytest.mark.parametrize("revisions", [403, 404], ids=["revisions-forbidden", "revisions-missing"])
def test_a_hub_that_cannot_list_kservices_fails_with_that_error_alone(
    kube_server: FakeKubeApi, make_hub: HubFactory, caplog: pytest.LogCaptureFixture, revisions: int
) -> None:
    """The Revision list comes first and fails too (a refusal, or no Knative at all): the hub does not
    start, so it says nothing about Revisions (the caller prints the one error) and leaves no thread."""
    kube_server.fail_next(revisions, times=1000, path_contains="/revisions", message=NO_SUCH_RESOURCE_TYPE)
    kube_server.fail_next(404, times=1000, path_contains="/services", message=NO_SUCH_RESOURCE_TYPE)
    before = set(threading.enumerate())
    with caplog.at_level(logging.DEBUG, logger="flyte_apps.kube"), pytest.raises(KubeError) as err:
        make_hub()
    assert (
        str(err.value) == "Knative Serving is not installed in this cluster (no services.serving.knative.dev)"
    )
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert not [t for t in set(threading.enumerate()) - before if t.name.startswith("flyte-apps-watch")]


# --- replica counts and fan-out ----------------------------------------------------------------------


def revision_gets(server: FakeKubeApi) -> int:
    """GETs of one Revision by name (upstream makes one per event)."""
    return len(server.requests_matching("GET", "/revisions/"))


def running_with(server: FakeKubeApi, name: str, replicas: int) -> str:
    revision = server.reconcile_kservice(NS, name)
    server.patch(REVISIONS, NS, revision, {"status": {"actualReplicas": replicas}}, status=True)
    return revision


def until_count_seen(server: FakeKubeApi, subscription: Subscription, name: str, replicas: int) -> None:
    """Touch the KService until an update event carries ``replicas`` (the Revision watch may trail)."""
    counts: list[int] = []

    def seen() -> bool:
        touch(server, name, str(len(counts)))
        (event,) = take(subscription, 1)
        counts.append(event.update_event.updated_app.status.current_replicas)
        return counts[-1] == replicas

    wait_until(seen, f"the replica count {replicas}")


def test_replica_counts_come_from_the_revision_cache_not_a_get_per_event(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    name = deploy(kube_server)
    revision = running_with(kube_server, name, 3)
    hub = make_hub()
    subscription = hub.subscribe()
    (created,) = take(subscription, 1)
    assert created.create_event.app.status.current_replicas == 3
    kube_server.patch(REVISIONS, NS, revision, {"status": {"actualReplicas": 5}}, status=True)
    until_count_seen(kube_server, subscription, name, 5)
    assert revision_gets(kube_server) == 0
    assert not hub.reads_revisions_per_event


def test_a_revision_the_cache_has_not_seen_yet_is_read_once(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    name = deploy(kube_server)
    # Every Revision request waits: the KService event of a new Revision arrives before the cache's.
    kube_server.add_latency(1.0, method="GET", path_contains="/revisions")
    hub = make_hub()
    subscription = hub.subscribe()
    take(subscription, 1)
    running_with(kube_server, name, 2)
    (event,) = take(subscription, 1)
    assert event.update_event.updated_app.status.current_replicas == 2
    assert revision_gets(kube_server) == 1


def test_a_revision_list_that_fails_at_start_is_listed_again_by_its_loop(
    kube_server: FakeKubeApi, make_hub: HubFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A failure that is not a refusal (a 404 once): the hub starts, reads the first app's Revision with
    a GET, and its Revision loop lists again, so that events come to cost no GET; a failure that healed
    at once is no warning."""
    name = deploy(kube_server)
    revision = running_with(kube_server, name, 2)
    kube_server.fail_next(404, method="GET", path_contains="/revisions", message=NO_SUCH_RESOURCE_TYPE)
    with caplog.at_level(logging.WARNING, logger="flyte_apps.kube"):
        hub = make_hub()
        subscription = hub.subscribe()
        (created,) = take(subscription, 1)
        assert revision_gets(kube_server) == 1
        kube_server.patch(REVISIONS, NS, revision, {"status": {"actualReplicas": 4}}, status=True)
        until_count_seen(kube_server, subscription, name, 4)

        def costs_no_get() -> bool:
            gets = revision_gets(kube_server)
            touch(kube_server, name, f"cached-{gets}")
            take(subscription, 1)
            return revision_gets(kube_server) == gets

        wait_until(costs_no_get, "an event served from the Revision cache")
    assert created.create_event.app.status.current_replicas == 2
    assert not hub.reads_revisions_per_event
    assert [r.getMessage() for r in caplog.records] == []


def test_forbidden_revision_listing_falls_back_to_a_get_per_event_and_says_so_once(
    kube_server: FakeKubeApi, make_hub: HubFactory, caplog: pytest.LogCaptureFixture
) -> None:
    name = deploy(kube_server)
    running_with(kube_server, name, 2)
    kube_server.fail_next(403, times=1, method="GET", path_contains="/revisions")  # the hub's LIST
    with caplog.at_level(logging.WARNING):
        hub = make_hub()
        subscription = hub.subscribe()
        (created,) = take(subscription, 1)
        touch(kube_server, name, "x")
        (updated,) = take(subscription, 1)
    assert hub.reads_revisions_per_event
    assert created.create_event.app.status.current_replicas == 2
    assert updated.update_event.updated_app.status.current_replicas == 2
    assert revision_gets(kube_server) == 2  # one per event, as upstream
    warnings = [r.getMessage() for r in caplog.records if "per event" in r.getMessage()]
    assert len(warnings) == 1
    assert "forbidden" in warnings[0]
    assert "grant list and watch on revisions.serving.knative.dev" in warnings[0]


def test_without_read_replicas_the_hub_watches_only_kservices(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    name = deploy(kube_server)
    running_with(kube_server, name, 2)
    hub = make_hub(read_replicas=False)
    subscription = hub.subscribe()
    (created,) = take(subscription, 1)
    assert created.create_event.app.status.current_replicas == 0
    wait_until(lambda: kube_server.open_watches == 1, "the hub's KService watch")
    assert not kube_server.requests_matching("GET", "/revisions")


def test_every_subscriber_gets_the_same_event_built_once(
    kube_server: FakeKubeApi, make_hub: HubFactory
) -> None:
    name = deploy(kube_server)
    hub = make_hub()
    exact = hub.subscribe(WatchTarget(project="proj", domain="dev", name="myapp"))
    everything = hub.subscribe()
    by_project = hub.subscribe(WatchTarget(project="proj"))
    elsewhere = hub.subscribe(WatchTarget(project="other"))
    for subscription in (exact, everything, by_project):
        take(subscription, 1)
    touch(kube_server, name, "shared")
    received = [take(subscription, 1)[0] for subscription in (exact, everything, by_project)]
    assert received[0] is received[1] is received[2]
    assert_quiet(elsewhere)
    hub.unsubscribe(everything)
    touch(kube_server, name, "again")
    assert [describe(e) for e in take(exact, 1)] == [("update", "proj/dev/myapp")]
    assert everything.get(QUIET) is None
