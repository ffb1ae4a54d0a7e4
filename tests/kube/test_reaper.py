"""The revision reaper deletes a stopped app's old live revisions and never the stop revision.

Each test sets up a KService the way Knative leaves it (revisions, pods labelled per
revision), applies the "stop" as a spec patch through the real client, and drives Knative's
reconcile at the moment the scenario needs: before the reaper runs, during its wait, late, or
never.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from flyte_apps.core.reaping import StopFailed, StopInputs
from flyte_apps.kube.errors import KubeForbidden
from flyte_apps.kube.reaper import ReaperTimeout, ReapResult, reap_stopped_revisions
from flyte_apps.kube.reaper import stop as core_stop
from flyte_apps.kube.retry import RetryPolicy
from flyte_apps.kube.target import KubeTarget
from tests.fakes.kube_api import FAKE_TOKEN, FakeKubeApi
from tests.fakes.kube_semantics import KSERVICES, PODS, REVISIONS
from tests.support.config import REPO_ROOT

NS = "flyte"
APP = "myapp-proj-dev"
NO_WAIT = RetryPolicy(sleep=lambda _: None)


def running_app(server: FakeKubeApi, *, pods: int = 2) -> str:
    """A KService reconciled once, whose first revision is serving from ``pods`` pods."""
    server.add_kservice(NS, APP)
    revision = server.reconcile_kservice(NS, APP)
    server.add_revision_pods(NS, APP, revision, count=pods)
    return revision


def stop(api: client.ApiClient) -> None:
    """What the Pulumi program applies to stop an app: a spec change (new generation)."""
    patch = {
        "metadata": {"labels": {"flyte.org/app-stopped": "true"}},
        "spec": {"template": {"metadata": {"annotations": {"autoscaling.knative.dev/max-scale": "0"}}}},
    }
    client.CustomObjectsApi(api).patch_namespaced_custom_object(
        "serving.knative.dev", "v1", NS, "services", APP, patch
    )


def reap(api: client.ApiClient, **overrides: Any) -> ReapResult:
    options: dict[str, Any] = {"timeout_seconds": 5.0, "poll_interval": 0.02, "retry": NO_WAIT}
    options.update(overrides)
    return reap_stopped_revisions(api, namespace=NS, kservice=APP, **options)


def test_reaper_waits_for_stop_revision_before_deleting(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    old = running_app(kube_server)
    stop(kube_api)  # Knative has not reconciled yet: the old revision is still latest ready
    polls: list[float] = []

    def sleep_then_reconcile(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 2:
            kube_server.reconcile_kservice(NS, APP)

    result = reap(kube_api, sleep=sleep_then_reconcile)

    assert result == ReapResult(deleted=(old,), stop_revision=f"{APP}-00002")
    assert len(polls) == 2
    assert kube_server.names(REVISIONS, NS) == [f"{APP}-00002"]
    assert kube_server.names(PODS, NS) == []


def test_reaper_keeps_stop_revision_that_was_already_ready_before_it_ran(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    old = running_app(kube_server)
    stop(kube_api)
    stop_revision = kube_server.reconcile_kservice(NS, APP)  # upstream's race: already reconciled
    stop_pods = kube_server.add_revision_pods(NS, APP, stop_revision)

    result = reap(kube_api)

    assert result == ReapResult(deleted=(old,), stop_revision=stop_revision)
    assert kube_server.names(REVISIONS, NS) == [stop_revision]
    assert kube_server.names(PODS, NS) == stop_pods
    assert kube_server.requests_matching("DELETE", stop_revision) == ()


def test_reaper_succeeds_without_deleting_when_kservice_is_missing(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    assert reap(kube_api) == ReapResult(deleted=(), stop_revision=None)
    assert kube_server.requests_matching("DELETE") == ()


def test_reaper_waits_for_a_late_reconcile(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    old = running_app(kube_server)
    stop(kube_api)
    timer = threading.Timer(0.3, kube_server.reconcile_kservice, args=(NS, APP))
    timer.start()
    try:
        result = reap(kube_api, timeout_seconds=5.0, poll_interval=0.05)
    finally:
        timer.cancel()
    assert result == ReapResult(deleted=(old,), stop_revision=f"{APP}-00002")


def test_reaper_waits_until_latest_created_revision_is_also_ready(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    old = running_app(kube_server)
    stop(kube_api)
    kube_server.reconcile_kservice(NS, APP, ready=False)  # observed, but the new revision not ready
    timer = threading.Timer(0.2, kube_server.mark_revision_ready, args=(NS, APP))
    timer.start()
    try:
        result = reap(kube_api, poll_interval=0.05)
    finally:
        timer.cancel()
    assert result == ReapResult(deleted=(old,), stop_revision=f"{APP}-00002")


def test_reaper_retries_transient_503s(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    old = running_app(kube_server)
    stop(kube_api)
    kube_server.reconcile_kservice(NS, APP)
    kube_server.fail_next(503, times=2, path_contains=f"/services/{APP}")
    kube_server.fail_next(503, times=1, method="DELETE")

    assert reap(kube_api).deleted == (old,)
    assert len(kube_server.requests_matching("GET", f"/services/{APP}")) == 3
    assert len(kube_server.requests_matching("DELETE")) == 2


def test_reaper_reports_forbidden_delete_naming_verb_and_resource(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    running_app(kube_server)
    stop(kube_api)
    kube_server.reconcile_kservice(NS, APP)
    kube_server.fail_next(403, method="DELETE", path_contains="/revisions/")

    with pytest.raises(KubeForbidden) as err:
        reap(kube_api)
    message = str(err.value)
    assert "verb 'delete'" in message
    assert "'revisions.serving.knative.dev'" in message
    assert "namespace 'flyte'" in message
    assert FAKE_TOKEN not in message


def test_reaper_times_out_with_a_clear_message_when_stop_revision_never_gets_ready(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    old = running_app(kube_server)
    stop(kube_api)
    with pytest.raises(ReaperTimeout) as err:
        reap(kube_api, timeout_seconds=0.5, poll_interval=0.05)
    assert str(err.value) == (
        f"timed out after 0.5s waiting for Knative to make the stop revision of KService {NS}/{APP} "
        f"ready: generation 2, observedGeneration 1, latestCreatedRevisionName {old}, "
        f"latestReadyRevisionName {old}; "
        "the stopped KService is applied, run `pulumi up` again to delete the old revisions"
    )
    assert kube_server.names(REVISIONS, NS) == [old]


def test_reaper_timeout_is_bounded_with_an_injected_clock(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    running_app(kube_server)
    stop(kube_api)
    kube_server.reconcile_kservice(NS, APP, ready=False)
    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    with pytest.raises(ReaperTimeout, match="latestCreatedRevisionName myapp-proj-dev-00002, latestReady"):
        reap(kube_api, timeout_seconds=30, poll_interval=10, first_poll=1, clock=lambda: now[0], sleep=sleep)
    assert sleeps == [1, 2, 4, 8, 10, 5]  # twice as long each time, at most the interval, never past 30 s


def test_an_app_created_stopped_does_not_wait_for_knative_and_names_the_revision_knative_will_create(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    """Generation 1 never had another template and no pods exist: nothing to delete, so nothing is waited
    for, not even Knative's first reconcile. The stop revision is the name Knative gives it."""
    kube_server.add_kservice(NS, APP)
    polls: list[float] = []

    result = reap(kube_api, sleep=polls.append)

    assert result == ReapResult(deleted=(), stop_revision=f"{APP}-00001")
    assert polls == []
    assert kube_server.requests_matching("DELETE") == ()
    assert len(kube_server.requests_matching("GET", "/pods")) == 1
    assert kube_server.reconcile_kservice(NS, APP, ready=False) == result.stop_revision


def test_an_app_created_stopped_names_its_revision_as_knative_does_for_a_long_name(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    """A KService name of 58 characters or more: Knative shortens the revision's name with a hash (the
    name knative.dev/pkg wrote for it, from the committed vectors)."""
    long_name = "y" * 63
    vectors = json.loads((REPO_ROOT / "tests" / "fixtures" / "knative_child_names.json").read_text())
    knatives = next(v["name"] for v in vectors if (v["parent"], v["suffix"]) == (long_name, "-00001"))
    kube_server.add_kservice(NS, long_name)

    result = reap_stopped_revisions(
        kube_api, namespace=NS, kservice=long_name, timeout_seconds=5.0, retry=NO_WAIT
    )

    assert result == ReapResult(deleted=(), stop_revision=knatives)


def test_an_app_created_stopped_with_a_named_template_keeps_that_name(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    """A template that names its revision: Knative creates the revision under that name."""
    template = {"metadata": {"name": f"{APP}-stopped"}, "spec": {"containers": [{"image": "app"}]}}
    kube_server.add_kservice(NS, APP, spec={"template": template})

    assert reap(kube_api) == ReapResult(deleted=(), stop_revision=f"{APP}-stopped")


def test_once_knative_created_the_first_revision_its_name_is_the_one_reported(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_kservice(NS, APP)
    status = {"observedGeneration": 1, "latestCreatedRevisionName": "as-knative-named-it"}
    kube_server.patch(KSERVICES, NS, APP, {"status": status}, status=True)

    assert reap(kube_api) == ReapResult(deleted=(), stop_revision="as-knative-named-it")


def test_an_app_created_stopped_keeps_the_pods_of_its_only_revision(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_kservice(NS, APP)
    only = kube_server.reconcile_kservice(NS, APP, ready=False)
    pods = kube_server.add_revision_pods(NS, APP, only)

    assert reap(kube_api) == ReapResult(deleted=(), stop_revision=only)
    assert kube_server.names(PODS, NS) == pods


def test_an_app_created_stopped_beside_pods_of_another_revision_waits_for_ready_and_deletes_it(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    """Pods left by another revision of the same name (a KService deleted and created again, before
    Kubernetes collected them) bring the normal rule back: wait for Ready, then delete."""
    kube_server.add_kservice(NS, APP)
    only = kube_server.reconcile_kservice(NS, APP, ready=False)
    kube_server.add_revision_pods(NS, APP, f"{APP}-00007")
    polls: list[float] = []

    def sleep_then_ready(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 2:
            kube_server.mark_revision_ready(NS, APP)

    assert reap(kube_api, sleep=sleep_then_ready) == ReapResult(deleted=(), stop_revision=only)
    assert len(polls) == 2
    assert len(kube_server.requests_matching("DELETE", f"{APP}-00007")) == 1
    assert kube_server.requests_matching("DELETE", only) == ()


def test_a_changed_kservice_still_waits_for_its_new_revision_to_be_ready(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    """The first-generation rule does not reach a KService whose spec changed: the old revision stays
    until the new one is ready."""
    kube_server.add_kservice(NS, APP)
    kube_server.patch(KSERVICES, NS, APP, {"spec": {"template": {"metadata": {"annotations": {"x": "0"}}}}})
    only = kube_server.reconcile_kservice(NS, APP, ready=False)
    waited = f"generation 2, observedGeneration 2, latestCreatedRevisionName {only}"
    with pytest.raises(ReaperTimeout, match=waited):
        reap(kube_api, timeout_seconds=0.3, poll_interval=0.05)


def test_reaper_leaves_revisions_without_pods_alone(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    idle = running_app(kube_server, pods=0)
    live = kube_server.reconcile_kservice(NS, APP)
    kube_server.add_revision_pods(NS, APP, live)
    stop(kube_api)
    stop_revision = kube_server.reconcile_kservice(NS, APP)

    result = reap(kube_api)

    assert result == ReapResult(deleted=(live,), stop_revision=stop_revision)
    assert kube_server.names(REVISIONS, NS) == [idle, stop_revision]


def test_reaper_treats_a_revision_that_vanished_first_as_done(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    running_app(kube_server, pods=0)
    kube_server.add_revision_pods(NS, APP, f"{APP}-00000")  # pods outlived their revision object
    stop(kube_api)
    stop_revision = kube_server.reconcile_kservice(NS, APP)

    result = reap(kube_api)

    assert result == ReapResult(deleted=(), stop_revision=stop_revision)
    assert len(kube_server.requests_matching("DELETE", f"{APP}-00000")) == 1


# --- stop: the core both RevisionReapers run ------------------------------------------------------


def test_stop_reaches_the_target_cluster_and_deletes_the_old_revision(kube_server: FakeKubeApi) -> None:
    assert kube_server.kubeconfig_path is not None
    running = running_app(kube_server)
    kube_server.patch(KSERVICES, NS, APP, {"spec": {"template": {"metadata": {"annotations": {"x": "0"}}}}})
    stop_revision = kube_server.reconcile_kservice(NS, APP)
    target = KubeTarget(kubeconfig=str(kube_server.kubeconfig_path), context=None)
    result = core_stop(target, StopInputs(NS, APP, "sha", timeout_seconds=5.0))
    assert result == ReapResult(deleted=(running,), stop_revision=stop_revision)
    assert kube_server.names(REVISIONS, NS) == [stop_revision]


def test_a_stop_whose_cluster_cannot_be_read_fails_as_one_line_naming_the_kservice(tmp_path: Path) -> None:
    target = KubeTarget(kubeconfig=str(tmp_path / "missing-kubeconfig"), context=None)
    with pytest.raises(StopFailed, match=rf"^stopping {NS}/{APP}: ") as raised:
        core_stop(target, StopInputs(NS, APP, "sha", timeout_seconds=1.0))
    assert "\n" not in str(raised.value)
    assert "the kubeconfig names no existing file" in str(raised.value)
