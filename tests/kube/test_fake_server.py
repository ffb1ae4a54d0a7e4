"""The fake API server behaves like a real one when driven by the real ``kubernetes`` client.

These tests pin the semantics other tests rely on (errors, resourceVersion/generation, merge
patch, selectors, paging, watches, logs, faults, the Knative simulation), so a test that
passes against the fake is evidence about real-cluster behaviour, not about the fake.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, cast

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.fakes.kube_api import FAKE_TOKEN, FakeKubeApi
from tests.fakes.kube_semantics import KSERVICES, PODS, REVISIONS

GROUP, VERSION = "serving.knative.dev", "v1"
NS = "flyte"


def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def status_of(exc: ApiException) -> dict[str, Any]:
    """The ``Status`` body of an API error."""
    return cast(dict[str, Any], json.loads(cast(str, exc.body)))


def stream(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Iterator[Any]:
    """``kubernetes.watch.Watch().stream`` (untyped in the package) as a typed iterator."""
    watcher = cast(Any, watch.Watch)()
    return cast(Iterator[Any], watcher.stream(func, *args, **kwargs))


def raw_get(api: client.ApiClient, path: str, query: dict[str, str]) -> tuple[int, str]:
    """A GET through the real client's serialiser and auth, for parameters it does not model."""
    request = cast(Any, api).param_serialize(
        "GET", path, query_params=list(query.items()), auth_settings=["BearerToken"]
    )
    response = cast(Any, api).call_api(*request)
    response.read()
    return int(response.status), cast(bytes, response.data).decode()


def knative_service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Service",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"template": {"spec": {"containers": [{"image": "img:1"}]}}},
    }


# --- CRUD ----------------------------------------------------------------------------------


def test_custom_object_crud_tracks_resource_version_and_generation(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.ensure_namespace(NS)
    api = custom(kube_api)
    created = cast(
        dict[str, Any],
        api.create_namespaced_custom_object(GROUP, VERSION, NS, "services", knative_service("web")),
    )
    meta = created["metadata"]
    assert meta["generation"] == 1
    assert meta["uid"]
    assert meta["creationTimestamp"].endswith("Z")
    assert meta["namespace"] == NS

    fetched = cast(dict[str, Any], api.get_namespaced_custom_object(GROUP, VERSION, NS, "services", "web"))
    assert fetched == created

    fetched["spec"]["template"]["spec"]["containers"][0]["image"] = "img:2"
    replaced = cast(
        dict[str, Any], api.replace_namespaced_custom_object(GROUP, VERSION, NS, "services", "web", fetched)
    )
    assert replaced["metadata"]["generation"] == 2
    assert int(replaced["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])

    fetched["metadata"]["labels"] = {"changed": "yes"}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as stale:
        api.replace_namespaced_custom_object(GROUP, VERSION, NS, "services", "web", fetched)
    assert stale.value.status == 409
    assert status_of(stale.value)["reason"] == "Conflict"

    api.delete_namespaced_custom_object(GROUP, VERSION, NS, "services", "web")
    with pytest.raises(ApiException) as gone:
        api.get_namespaced_custom_object(GROUP, VERSION, NS, "services", "web")
    assert gone.value.status == 404


def test_missing_object_is_a_not_found_status(kube_api: client.ApiClient) -> None:
    with pytest.raises(ApiException) as err:
        custom(kube_api).get_namespaced_custom_object(GROUP, VERSION, NS, "revisions", "nope")
    body = status_of(err.value)
    assert err.value.status == 404
    assert body["kind"] == "Status"
    assert body["reason"] == "NotFound"
    assert body["code"] == 404
    assert body["details"] == {"name": "nope", "kind": "revisions", "group": GROUP}
    assert body["message"] == 'revisions.serving.knative.dev "nope" not found'


def test_duplicate_create_is_already_exists(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    kube_server.ensure_namespace(NS)
    api = custom(kube_api)
    api.create_namespaced_custom_object(GROUP, VERSION, NS, "services", knative_service("web"))
    with pytest.raises(ApiException) as err:
        api.create_namespaced_custom_object(GROUP, VERSION, NS, "services", knative_service("web"))
    assert err.value.status == 409
    assert status_of(err.value)["reason"] == "AlreadyExists"


def test_create_in_missing_namespace_is_not_found(kube_api: client.ApiClient) -> None:
    with pytest.raises(ApiException) as err:
        custom(kube_api).create_namespaced_custom_object(
            GROUP, VERSION, "absent", "services", knative_service("web")
        )
    assert err.value.status == 404
    assert status_of(err.value)["message"] == 'namespaces "absent" not found'


def test_namespaces_are_cluster_scoped(kube_api: client.ApiClient) -> None:
    api = core(kube_api)
    api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="team-a")))
    names = [ns.metadata.name for ns in api.list_namespace().items if ns.metadata]
    assert names == ["default", "team-a"]
    namespace: Any = api.read_namespace("team-a")
    assert namespace.status.phase == "Active"


def test_main_endpoint_writes_keep_status_and_status_endpoint_changes_it(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_kservice(NS, "web")
    kube_server.reconcile_kservice(NS, "web")
    api = custom(kube_api)
    patched = cast(
        dict[str, Any],
        api.patch_namespaced_custom_object(GROUP, VERSION, NS, "services", "web", {"status": {"x": 1}}),
    )
    assert "x" not in patched["status"]
    status_patched = cast(
        dict[str, Any],
        api.patch_namespaced_custom_object_status(
            GROUP, VERSION, NS, "services", "web", {"status": {"x": 1}}
        ),
    )
    assert status_patched["status"]["x"] == 1
    assert status_patched["metadata"]["generation"] == 1


# --- PATCH ---------------------------------------------------------------------------------


def test_merge_patch_merges_maps_and_null_deletes(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_kservice(NS, "web", labels={"keep": "1", "drop": "2"})
    patch = {"metadata": {"labels": {"drop": None, "new": "3"}}, "spec": {"traffic": [{"percent": 100}]}}
    patched = cast(
        dict[str, Any],
        custom(kube_api).patch_namespaced_custom_object(GROUP, VERSION, NS, "services", "web", patch),
    )
    assert patched["metadata"]["labels"] == {"keep": "1", "new": "3"}
    assert patched["spec"]["traffic"] == [{"percent": 100}]
    assert "template" in patched["spec"]
    assert patched["metadata"]["generation"] == 2
    assert kube_server.requests_matching("PATCH")[-1].content_type == "application/merge-patch+json"


def test_merge_patch_with_stale_resource_version_conflicts(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_kservice(NS, "web")
    with pytest.raises(ApiException) as err:
        custom(kube_api).patch_namespaced_custom_object(
            GROUP,
            VERSION,
            NS,
            "services",
            "web",
            {"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}},
        )
    assert err.value.status == 409


def test_strategic_merge_patch_is_unsupported_media_type(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_pod(NS, "p")
    patch = {"metadata": {"labels": {"a": "b"}}}
    with pytest.raises(ApiException) as err:
        core(kube_api).patch_namespaced_pod("p", NS, patch)
    assert err.value.status == 415
    patched: Any = core(kube_api).patch_namespaced_pod(
        "p", NS, patch, _content_type="application/merge-patch+json"
    )
    assert patched.metadata.labels == {"a": "b"}


def test_noop_update_does_not_bump_resource_version(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_kservice(NS, "web", labels={"a": "b"})
    before = kube_server.resource_version
    custom(kube_api).patch_namespaced_custom_object(
        GROUP, VERSION, NS, "services", "web", {"metadata": {"labels": {"a": "b"}}}
    )
    assert kube_server.resource_version == before


# --- selectors and paging --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier=web", ["a", "b"]),
        ("tier==web", ["a", "b"]),
        ("tier!=web", ["c", "d"]),
        ("tier in (web,db)", ["a", "b", "c"]),
        ("tier notin (web)", ["c", "d"]),
        ("tier", ["a", "b", "c"]),
        ("!tier", ["d"]),
        ("tier in (web, db),env=prod", ["a", "c"]),
        ("tier=web,!env", []),
    ],
)
def test_label_selectors_filter_like_the_api_server(
    kube_server: FakeKubeApi, kube_api: client.ApiClient, selector: str, expected: list[str]
) -> None:
    kube_server.add_pod(NS, "a", labels={"tier": "web", "env": "prod"})
    kube_server.add_pod(NS, "b", labels={"tier": "web", "env": "dev"})
    kube_server.add_pod(NS, "c", labels={"tier": "db", "env": "prod"})
    kube_server.add_pod(NS, "d", labels={"env": "prod"})
    pods = core(kube_api).list_namespaced_pod(NS, label_selector=selector).items
    assert [p.metadata.name for p in pods if p.metadata] == expected


def test_malformed_label_selector_is_bad_request(kube_api: client.ApiClient) -> None:
    with pytest.raises(ApiException) as err:
        core(kube_api).list_namespaced_pod(NS, label_selector="a in (b")
    assert err.value.status == 400


def test_list_limit_and_continue_page_through_everything(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    for i in range(5):
        kube_server.add_pod(NS, f"pod-{i}")
    api = core(kube_api)
    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        page: Any = api.list_namespaced_pod(NS, limit=2, _continue=token)
        pages += 1
        seen += [p.metadata.name for p in page.items]
        token = page.metadata.var_continue
        if not token:
            break
        assert page.metadata.remaining_item_count == 5 - len(seen)
    assert seen == [f"pod-{i}" for i in range(5)]
    assert pages == 3
    assert int(page.metadata.resource_version) == kube_server.resource_version


# --- watches -------------------------------------------------------------------------------


def test_watch_replays_events_after_resource_version_then_ends_at_timeout(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_kservice(NS, "old")
    start = kube_server.resource_version
    kube_server.add_kservice(NS, "web")
    kube_server.patch(KSERVICES, NS, "web", {"metadata": {"labels": {"x": "y"}}})
    kube_server.delete(KSERVICES, NS, "web")
    events = list(
        stream(
            custom(kube_api).list_namespaced_custom_object,
            GROUP,
            VERSION,
            NS,
            "services",
            resource_version=str(start),
            timeout_seconds=1,
        )
    )
    assert [(e["type"], e["raw_object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "web"),
        ("MODIFIED", "web"),
        ("DELETED", "web"),
    ]
    watches = kube_server.requests_matching("GET", "/services")
    assert watches[-1].query["watch"] == "true"
    assert watches[-1].query["timeoutSeconds"] == "1"


def test_watch_without_resource_version_starts_with_current_objects_and_sees_new_ones(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_pod(NS, "existing", labels={"app": "x"})
    kube_server.add_pod(NS, "other", labels={"app": "y"})
    threading.Timer(0.2, lambda: kube_server.add_pod(NS, "later", labels={"app": "x"})).start()
    events = list(stream(core(kube_api).list_namespaced_pod, NS, label_selector="app=x", timeout_seconds=1))
    assert [(e["type"], e["object"].metadata.name) for e in events] == [
        ("ADDED", "existing"),
        ("ADDED", "later"),
    ]


def test_watch_from_compacted_resource_version_gets_in_stream_410(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_pod(NS, "a")
    old = kube_server.resource_version - 1
    kube_server.compact_history()
    with pytest.raises(ApiException) as err:
        list(stream(core(kube_api).list_namespaced_pod, NS, resource_version=str(old), timeout_seconds=1))
    assert err.value.status == 410
    assert "Expired" in str(err.value.reason)


def test_watch_from_compacted_resource_version_gets_http_410_when_configured(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.watch_gone_as_http = True
    kube_server.add_pod(NS, "a")
    old = kube_server.resource_version - 1
    kube_server.compact_history()
    with pytest.raises(ApiException) as err:
        core(kube_api).list_namespaced_pod(NS, watch=True, resource_version=str(old), timeout_seconds=1)
    assert err.value.status == 410
    assert status_of(err.value)["reason"] == "Expired"


def test_watch_from_compaction_point_is_still_served(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    point = kube_server.compact_history()
    kube_server.add_pod(NS, "a")
    events = list(
        stream(core(kube_api).list_namespaced_pod, NS, resource_version=str(point), timeout_seconds=1)
    )
    assert [e["type"] for e in events] == ["ADDED"]


def test_expire_watches_sends_410_into_open_watches(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    outcome: list[BaseException] = []

    def watch_pods() -> None:
        try:
            list(stream(core(kube_api).list_namespaced_pod, NS, resource_version="1", timeout_seconds=5))
        except ApiException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=watch_pods)
    began = time.monotonic()
    thread.start()
    while kube_server.open_watches == 0 and time.monotonic() - began < 3:
        time.sleep(0.01)
    assert kube_server.expire_watches() == 1
    thread.join(3)
    assert not thread.is_alive()
    assert [getattr(e, "status", None) for e in outcome] == [410]


# --- pod logs ------------------------------------------------------------------------------


def at(second: float) -> datetime:
    return datetime(2024, 1, 1, 0, 0, 0, tzinfo=UTC).replace(
        second=int(second), microsecond=round((second % 1) * 1_000_000)
    )


def test_pod_log_supports_tail_lines_and_nanosecond_timestamps(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_pod(NS, "p", containers=["app"])
    for i in range(5):
        kube_server.append_log(NS, "p", "app", f"line {i}", at=at(i + 0.25))
    api = core(kube_api)
    assert api.read_namespaced_pod_log("p", NS) == "".join(f"line {i}\n" for i in range(5))
    assert api.read_namespaced_pod_log("p", NS, tail_lines=2) == "line 3\nline 4\n"
    stamped = api.read_namespaced_pod_log("p", NS, tail_lines=1, timestamps=True)
    assert stamped == "2024-01-01T00:00:04.250000000Z line 4\n"


def test_pod_log_needs_a_container_when_the_pod_has_several(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_pod(NS, "p", containers=["queue-proxy", "app"])
    kube_server.append_log(NS, "p", "app", "hello")
    with pytest.raises(ApiException) as err:
        core(kube_api).read_namespaced_pod_log("p", NS)
    assert err.value.status == 400
    assert "choose one of: [queue-proxy app]" in status_of(err.value)["message"]
    assert core(kube_api).read_namespaced_pod_log("p", NS, container="app") == "hello\n"
    assert core(kube_api).read_namespaced_pod_log("p", NS, container="queue-proxy") == ""


def test_pod_log_since_time_has_whole_second_precision(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_pod(NS, "p")
    kube_server.append_log(NS, "p", "app", "early", at=at(10.7))
    kube_server.append_log(NS, "p", "app", "same second", at=at(11.2))
    kube_server.append_log(NS, "p", "app", "late", at=at(12.0))
    status, text = raw_get(
        kube_api, f"/api/v1/namespaces/{NS}/pods/p/log", {"sinceTime": "2024-01-01T00:00:11.900000Z"}
    )
    assert status == 200
    assert text == "same second\nlate\n"


def test_pod_log_since_seconds_filters_old_lines(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_pod(NS, "p")
    kube_server.append_log(NS, "p", "app", "ancient", at=at(1))
    kube_server.append_log(NS, "p", "app", "recent")
    assert core(kube_api).read_namespaced_pod_log("p", NS, since_seconds=60) == "recent\n"


def test_pod_log_follow_streams_new_lines_until_the_pod_succeeds(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_pod(NS, "p")
    kube_server.append_log(NS, "p", "app", "first")

    def produce() -> None:
        time.sleep(0.1)
        kube_server.append_log(NS, "p", "app", "second")
        time.sleep(0.1)
        kube_server.append_log(NS, "p", "app", "last")
        kube_server.finish_pod(NS, "p")

    threading.Thread(target=produce).start()
    lines = list(stream(core(kube_api).read_namespaced_pod_log, "p", NS, container="app"))
    assert lines == ["first", "second", "last"]
    finished: Any = core(kube_api).read_namespaced_pod("p", NS)
    assert finished.status.phase == "Succeeded"


def test_pod_log_of_pending_pod_is_bad_request(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    kube_server.add_pod(NS, "p", phase="Pending")
    with pytest.raises(ApiException) as err:
        core(kube_api).read_namespaced_pod_log("p", NS)
    assert err.value.status == 400
    assert "waiting to start" in status_of(err.value)["message"]


# --- faults, latency, request log ----------------------------------------------------------------


def test_scripted_faults_answer_matching_requests_then_stop(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.fail_next(503, times=2, path_contains="/pods", retry_after="1")
    api = core(kube_api)
    api.list_namespace()  # not matching: unaffected
    for _ in range(2):
        with pytest.raises(ApiException) as err:
            api.list_namespaced_pod(NS)
        assert err.value.status == 503
        assert err.value.headers is not None
        assert err.value.headers["Retry-After"] == "1"
        assert status_of(err.value)["reason"] == "ServiceUnavailable"
    assert api.list_namespaced_pod(NS).items == []


def test_forbidden_fault_carries_an_rbac_style_status(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.fail_next(403, method="DELETE")
    with pytest.raises(ApiException) as err:
        custom(kube_api).delete_namespaced_custom_object(GROUP, VERSION, NS, "revisions", "web-00001")
    body = status_of(err.value)
    assert err.value.status == 403
    assert body["reason"] == "Forbidden"
    assert 'cannot delete resource "revisions" in API group "serving.knative.dev"' in body["message"]
    assert 'in the namespace "flyte"' in body["message"]


def test_latency_delays_matching_requests(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    kube_server.add_latency(0.3, times=1, path_contains="/namespaces")
    began = time.monotonic()
    core(kube_api).list_namespace()
    assert time.monotonic() - began >= 0.3  # a sleep lasts at least as long as asked
    core(kube_api).list_namespace()  # times=1: the rule is used up (no wall-clock upper bound here)
    assert len(kube_server.requests_matching("GET", "/namespaces")) == 2


def test_cut_stream_breaks_a_log_stream_after_k_lines(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_pod(NS, "p")
    kube_server.append_log(NS, "p", "app", "one", "two", "three")
    kube_server.cut_streams_after(2, path_contains="/log")
    lines: list[str] = []
    with pytest.raises(urllib3.exceptions.ProtocolError):
        lines.extend(stream(core(kube_api).read_namespaced_pod_log, "p", NS))
    assert lines == ["one", "two"]
    assert core(kube_api).read_namespaced_pod_log("p", NS) == "one\ntwo\nthree\n"  # only once


def test_cut_stream_breaks_a_watch_after_k_events(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    for name in ("a", "b", "c"):
        kube_server.add_pod(NS, name)
    kube_server.cut_streams_after(1, path_contains="/pods")
    seen: list[str] = []
    with pytest.raises(urllib3.exceptions.ProtocolError):
        for event in stream(core(kube_api).list_namespaced_pod, NS, timeout_seconds=1):
            seen.append(event["object"].metadata.name)
    assert seen == ["a"]


def test_request_log_records_calls_but_not_the_token(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    core(kube_api).list_namespaced_pod(NS, label_selector="a=b", limit=3)
    last = kube_server.requests[-1]
    assert (last.method, last.path) == ("GET", f"/api/v1/namespaces/{NS}/pods")
    assert last.query == {"labelSelector": "a=b", "limit": "3"}
    assert FAKE_TOKEN not in repr(kube_server.requests)


def test_wrong_token_is_unauthorized(kube_server: FakeKubeApi) -> None:
    configuration = client.Configuration(host=kube_server.url)
    configuration.api_key = {"BearerToken": "wrong"}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    with pytest.raises(ApiException) as err:
        client.CoreV1Api(client.ApiClient(configuration)).list_namespace()
    assert err.value.status == 401


# --- Knative simulation --------------------------------------------------------------------------


def test_reconcile_creates_the_next_revision_and_records_it_in_status(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_kservice(NS, "web")
    assert kube_server.reconcile_kservice(NS, "web") == "web-00001"
    kube_server.patch(KSERVICES, NS, "web", {"spec": {"template": {"metadata": {"annotations": {"a": "b"}}}}})
    assert kube_server.reconcile_kservice(NS, "web", ready=False) == "web-00002"
    ksvc = cast(
        dict[str, Any], custom(kube_api).get_namespaced_custom_object(GROUP, VERSION, NS, "services", "web")
    )
    assert ksvc["metadata"]["generation"] == 2
    assert ksvc["status"]["observedGeneration"] == 2
    assert ksvc["status"]["latestCreatedRevisionName"] == "web-00002"
    assert ksvc["status"]["latestReadyRevisionName"] == "web-00001"
    revisions = cast(
        dict[str, Any],
        custom(kube_api).list_namespaced_custom_object(
            GROUP, VERSION, NS, "revisions", label_selector="serving.knative.dev/service=web"
        ),
    )
    assert [r["metadata"]["name"] for r in revisions["items"]] == ["web-00001", "web-00002"]
    assert kube_server.mark_revision_ready(NS, "web") == "web-00002"
    assert kube_server.get(KSERVICES, NS, "web") is not None


def test_deleting_a_revision_deletes_its_pods(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    kube_server.add_kservice(NS, "web")
    first = kube_server.reconcile_kservice(NS, "web")
    second = kube_server.reconcile_kservice(NS, "web")
    old_pods = kube_server.add_revision_pods(NS, "web", first, count=2)
    new_pods = kube_server.add_revision_pods(NS, "web", second, containers=["app", "queue-proxy"])
    pod: Any = core(kube_api).read_namespaced_pod(old_pods[0], NS)
    assert pod.metadata.labels == {
        "serving.knative.dev/service": "web",
        "serving.knative.dev/revision": first,
    }
    assert [c.name for c in pod.spec.containers] == ["queue-proxy", "app"]
    assert all(s.ready for s in pod.status.container_statuses)
    custom(kube_api).delete_namespaced_custom_object(GROUP, VERSION, NS, "revisions", first)
    assert kube_server.names(PODS, NS) == new_pods
    assert kube_server.names(REVISIONS, NS) == [second]
