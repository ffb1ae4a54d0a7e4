"""Flyte's Get, List and GetReplicas against the fake API server, through the real client.

KServices are the ones the stack renders (``plan_stack``), so they carry the real labels and
annotations; Knative's part (status conditions, revisions, pods) is added the way Knative would.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
from flyteidl2.app import app_definition_pb2 as app_pb
from kubernetes import client

from flyte_apps.core import constants as c
from flyte_apps.core.config.models import AppId
from flyte_apps.core.plan import plan_stack
from flyte_apps.kube.apps import (
    AppSettings,
    current_replicas,
    get_app,
    list_apps,
    list_replicas,
    snapshot_app,
    snapshot_apps,
)
from flyte_apps.kube.errors import KubeNotFound
from flyte_apps.kube.retry import RetryPolicy
from tests.fakes.kube_api import FakeKubeApi
from tests.fakes.kube_semantics import KSERVICES, PODS, REVISIONS
from tests.support.config import minimal_config

NS = "flyte"
SETTINGS = AppSettings(namespace=NS, base_domain="apps.example.com")
NO_WAIT = RetryPolicy(sleep=lambda _: None)
MYAPP = AppId(org="", project="proj", domain="dev", name="myapp")
KSVC = "myapp-proj-dev"
Status = app_pb.Status


def deploy(server: FakeKubeApi, **app: Any) -> str:
    """Create the KService the stack renders for one app (default proj/dev/myapp); its name."""
    manifest = copy.deepcopy(plan_stack(minimal_config(**app)).apps[0].kservice)
    server.create(KSERVICES, manifest, NS)
    return str(manifest["metadata"]["name"])


def set_conditions(server: FakeKubeApi, name: str, *conditions: dict[str, str], **status: Any) -> None:
    server.patch(KSERVICES, NS, name, {"status": {"conditions": list(conditions), **status}}, status=True)


def phases(app: app_pb.App) -> list[tuple[int, str]]:
    return [(cond.deployment_status, cond.message) for cond in app.status.conditions]


def get(api: client.ApiClient, app_id: AppId = MYAPP) -> app_pb.App:
    return get_app(api, SETTINGS, app_id, retry=NO_WAIT)


# --- Get: one test per status shape ---------------------------------------------------------


def test_ready_app_is_active_with_ingress(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    deploy(kube_server)
    set_conditions(
        kube_server,
        KSVC,
        {"type": "ConfigurationsReady", "status": "True"},
        {"type": "Ready", "status": "True"},
        {"type": "RoutesReady", "status": "True"},
    )
    app = get(kube_api)
    assert app.metadata.id == app_pb.Identifier(org="flyte", project="proj", domain="dev", name="myapp")
    assert [p for p, _ in phases(app)] == [Status.DEPLOYMENT_STATUS_ACTIVE] * 3
    assert app.status.ingress.public_url == "https://myapp-proj-dev.apps.example.com"
    assert app.spec.container.image == "nginx:1.27"


def test_deploying_app_has_ready_configuration_and_unknown_ready(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    deploy(kube_server)
    set_conditions(
        kube_server,
        KSVC,
        {"type": "ConfigurationsReady", "status": "True"},
        {"type": "Ready", "status": "Unknown", "reason": "RevisionMissing", "message": "waiting"},
    )
    assert phases(get(kube_api)) == [
        (Status.DEPLOYMENT_STATUS_DEPLOYING, "Configuration is ready"),
        (Status.DEPLOYMENT_STATUS_PENDING, "RevisionMissing: waiting"),
    ]


def test_failed_revision_makes_the_app_failed(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    deploy(kube_server)
    message = 'Revision "myapp-proj-dev-00001" failed with message: Back-off pulling image "nginx:1.27".'
    set_conditions(
        kube_server,
        KSVC,
        {"type": "ConfigurationsReady", "status": "False", "reason": "RevisionFailed", "message": message},
        {"type": "Ready", "status": "False", "reason": "RevisionFailed", "message": message},
        {"type": "RoutesReady", "status": "Unknown"},
    )
    assert phases(get(kube_api)) == [(Status.DEPLOYMENT_STATUS_FAILED, f"RevisionFailed: {message}")] * 2


def test_route_not_ready_is_pending_traffic_not_migrated(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    deploy(kube_server)
    message = "Traffic is not yet migrated to the latest revision."
    set_conditions(
        kube_server,
        KSVC,
        {"type": "RoutesReady", "status": "Unknown", "reason": "TrafficNotMigrated", "message": message},
        {"type": "Ready", "status": "Unknown", "reason": "TrafficNotMigrated", "message": message},
    )
    assert phases(get(kube_api)) == [(Status.DEPLOYMENT_STATUS_PENDING, f"TrafficNotMigrated: {message}")]


def test_stopped_app_is_stopped_has_no_public_url_and_keeps_created_at(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    deploy(kube_server, stopped=True)
    set_conditions(kube_server, KSVC, {"type": "Ready", "status": "True"})
    app = get(kube_api)
    assert phases(app) == [(Status.DEPLOYMENT_STATUS_STOPPED, "App scaled to zero")]
    assert app.spec.desired_state == app_pb.Spec.DESIRED_STATE_STOPPED
    assert not app.status.HasField("ingress")  # stopped means cluster-local: a public URL would not answer
    assert app.status.HasField("created_at")
    assert app.status.k8s_metadata.namespace == NS


def test_app_without_conditions_has_none(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    deploy(kube_server)
    app = get(kube_api)
    assert list(app.status.conditions) == []
    assert app.status.current_replicas == 0


def test_cluster_local_app_has_no_ingress(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    deploy(kube_server, visibility="cluster-local")
    assert not get(kube_api).status.HasField("ingress")


def test_missing_app_is_not_found_naming_app_and_kservice(kube_api: client.ApiClient) -> None:
    with pytest.raises(KubeNotFound) as err:
        get(kube_api)
    assert str(err.value) == "app proj/dev/myapp not found: KService flyte/myapp-proj-dev does not exist"


# --- replica count -------------------------------------------------------------------------------


def test_current_replicas_come_from_the_latest_ready_revision(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    deploy(kube_server)
    old = kube_server.reconcile_kservice(NS, KSVC)
    kube_server.patch(REVISIONS, NS, old, {"status": {"actualReplicas": 1}}, status=True)
    kube_server.patch(KSERVICES, NS, KSVC, {"spec": {"template": {"metadata": {"annotations": {"x": "y"}}}}})
    latest = kube_server.reconcile_kservice(NS, KSVC)
    kube_server.patch(REVISIONS, NS, latest, {"status": {"actualReplicas": 4}}, status=True)
    assert get(kube_api).status.current_replicas == 4


def test_current_replicas_are_zero_without_a_ready_revision_or_on_errors(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    deploy(kube_server)
    ksvc: dict[str, Any] = {"status": {"latestReadyRevisionName": "gone-00001"}}
    assert current_replicas(kube_api, NS, ksvc, retry=NO_WAIT) == 0
    assert current_replicas(kube_api, NS, {}, retry=NO_WAIT) == 0
    revision = kube_server.reconcile_kservice(NS, KSVC)
    kube_server.patch(REVISIONS, NS, revision, {"status": {"actualReplicas": 2}}, status=True)
    ksvc = {"status": {"latestReadyRevisionName": revision}}
    kube_server.fail_next(503, times=4, path_contains="/revisions/")
    assert current_replicas(kube_api, NS, ksvc, retry=NO_WAIT) == 0
    assert current_replicas(kube_api, NS, ksvc, retry=NO_WAIT) == 2


# --- List --------------------------------------------------------------------------------------


def test_list_returns_managed_apps_filtered_by_project_and_domain(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    deploy(kube_server)
    deploy(kube_server, project="other")
    deploy(kube_server, name="second", domain="prod")
    kube_server.add_kservice(NS, "not-an-app")  # no flyte.org/app-managed label
    everything, token = list_apps(kube_api, SETTINGS, retry=NO_WAIT)
    assert sorted(str(a.metadata.id.project + "/" + a.metadata.id.name) for a in everything) == [
        "other/myapp",
        "proj/myapp",
        "proj/second",
    ]
    assert token == ""
    only, _ = list_apps(kube_api, SETTINGS, project="proj", domain="dev", retry=NO_WAIT)
    assert [a.metadata.id.name for a in only] == ["myapp"]


def test_list_skips_kservices_without_app_id_with_a_warning(
    kube_server: FakeKubeApi, kube_api: client.ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    deploy(kube_server)
    kube_server.add_kservice(NS, "broken", labels={c.LABEL_APP_MANAGED: "true"})
    with caplog.at_level(logging.WARNING, logger="components"):
        apps, _ = list_apps(kube_api, SETTINGS, retry=NO_WAIT)
    assert [a.metadata.id.name for a in apps] == ["myapp"]
    assert "KService broken missing flyte.org/app-id annotation" in caplog.text


def test_list_passes_limit_and_continue_through(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    for name in ("a1", "a2", "a3"):
        deploy(kube_server, name=name)
    kube_server.add_kservice(NS, "a0-broken", labels={c.LABEL_APP_MANAGED: "true"})
    first, token = list_apps(kube_api, SETTINGS, limit=2, retry=NO_WAIT)
    assert [a.metadata.id.name for a in first] == ["a1"]  # a page can hold fewer apps than the limit
    assert token
    second, token = list_apps(kube_api, SETTINGS, limit=2, token=token, retry=NO_WAIT)
    assert [a.metadata.id.name for a in second] == ["a2", "a3"]
    assert token == ""
    limits = [r.query.get("limit") for r in kube_server.requests_matching("GET", "/services")]
    assert limits == ["2", "2"]


# --- replicas -------------------------------------------------------------------------------------


def pod_body(name: str, revision: str, status: dict[str, Any]) -> dict[str, Any]:
    labels = {c.LABEL_KNATIVE_SERVICE: KSVC, c.LABEL_KNATIVE_REVISION: revision}
    containers = [{"name": "queue-proxy", "image": "q"}, {"name": "app", "image": "nginx:1.27"}]
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": containers},
        "status": status,
    }


def running(ready: bool) -> dict[str, Any]:
    return {
        "name": "app",
        "ready": ready,
        "restartCount": 0,
        "image": "",
        "imageID": "",
        "state": {"running": {}},
    }


def waiting(reason: str) -> dict[str, Any]:
    state = {"waiting": {"reason": reason}}
    return {"name": "app", "ready": False, "restartCount": 0, "image": "", "imageID": "", "state": state}


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"phase": "Running", "containerStatuses": [running(True)]}, ("ACTIVE", "")),
        (
            {"phase": "Running", "containerStatuses": [waiting("ContainerCreating")]},
            ("DEPLOYING", "ContainerCreating"),
        ),
        ({"phase": "Running", "containerStatuses": [running(False)]}, ("DEPLOYING", "container not ready")),
        (
            {"phase": "Pending", "containerStatuses": [waiting("ImagePullBackOff")]},
            ("PENDING", "ImagePullBackOff"),
        ),
        ({"phase": "Pending"}, ("PENDING", "Pending")),
        ({"phase": "Failed", "reason": "OOMKilled"}, ("FAILED", "OOMKilled")),
        ({"phase": "Succeeded"}, ("STOPPED", "pod completed")),
        ({"phase": "Unknown"}, ("PENDING", "Unknown")),
    ],
    ids=[
        "active",
        "deploying-waiting",
        "deploying-not-ready",
        "pending-reason",
        "pending",
        "failed",
        "stopped",
        "unknown",
    ],
)
def test_replica_status_through_the_api_follows_the_pod_table(
    kube_server: FakeKubeApi, kube_api: client.ApiClient, status: dict[str, Any], expected: tuple[str, str]
) -> None:
    deploy(kube_server)
    revision = kube_server.reconcile_kservice(NS, KSVC)
    kube_server.create(PODS, pod_body("myapp-abc", revision, status), NS)
    (replica,) = list_replicas(kube_api, NS, MYAPP, retry=NO_WAIT)
    assert replica.metadata.id.name == "myapp-abc"
    assert replica.metadata.id.app_id == app_pb.Identifier(project="proj", domain="dev", name="myapp")
    assert (replica.status.deployment_status, replica.status.reason) == expected


def test_old_revision_pods_are_excluded_once_a_revision_is_ready(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    deploy(kube_server)
    old = kube_server.reconcile_kservice(NS, KSVC)
    old_pods = kube_server.add_revision_pods(NS, KSVC, old)
    kube_server.patch(KSERVICES, NS, KSVC, {"spec": {"template": {"metadata": {"annotations": {"x": "y"}}}}})
    new = kube_server.reconcile_kservice(NS, KSVC, ready=False)
    new_pods = kube_server.add_revision_pods(NS, KSVC, new)
    names = sorted(r.metadata.id.name for r in list_replicas(kube_api, NS, MYAPP, retry=NO_WAIT))
    assert names == old_pods  # the new revision is not ready yet: the old one still serves
    kube_server.mark_revision_ready(NS, KSVC)
    names = sorted(r.metadata.id.name for r in list_replicas(kube_api, NS, MYAPP, retry=NO_WAIT))
    assert names == new_pods


def test_all_pods_of_the_service_count_while_no_revision_is_ready(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    deploy(kube_server)
    revision = kube_server.reconcile_kservice(NS, KSVC, ready=False)
    pods = kube_server.add_revision_pods(NS, KSVC, revision, count=2)
    kube_server.add_pod(NS, "unrelated", labels={c.LABEL_KNATIVE_SERVICE: "other-proj-dev"})
    assert sorted(r.metadata.id.name for r in list_replicas(kube_api, NS, MYAPP, retry=NO_WAIT)) == pods


def test_missing_kservice_selects_pods_by_service_name_only(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    pods = kube_server.add_revision_pods(NS, KSVC, f"{KSVC}-00001")
    assert [r.metadata.id.name for r in list_replicas(kube_api, NS, MYAPP, retry=NO_WAIT)] == pods
    (pod_list,) = kube_server.requests_matching("GET", "/pods")
    assert pod_list.query["labelSelector"] == f"{c.LABEL_KNATIVE_SERVICE}={KSVC}"


# --- snapshots (what `status` reads) ------------------------------------------------------------


def test_snapshot_of_all_apps_reads_pods_once_and_groups_them_per_app(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    deploy(kube_server)
    deploy(kube_server, name="second")
    first_rev = kube_server.reconcile_kservice(NS, KSVC)
    first_pods = kube_server.add_revision_pods(NS, KSVC, first_rev, count=2)
    second_rev = kube_server.reconcile_kservice(NS, "second-proj-dev")
    second_pods = kube_server.add_revision_pods(NS, "second-proj-dev", second_rev)
    snapshots = snapshot_apps(kube_api, SETTINGS, retry=NO_WAIT)
    assert [(s.app.metadata.id.name, sorted(r.metadata.id.name for r in s.replicas)) for s in snapshots] == [
        ("myapp", first_pods),
        ("second", second_pods),
    ]
    assert snapshots[0].replicas[0].metadata.id.app_id.org == "flyte"
    assert len(kube_server.requests_matching("GET", "/pods")) == 1


def test_snapshot_of_one_app_carries_the_live_kservice(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    deploy(kube_server)
    snapshot = snapshot_app(kube_api, SETTINGS, MYAPP, retry=NO_WAIT)
    assert snapshot.kservice["metadata"]["name"] == KSVC
    assert snapshot.replicas == ()


def test_snapshot_of_all_apps_lists_each_kind_once_and_reads_no_revision_by_name(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    for name in ("a1", "a2", "a3"):
        ksvc = deploy(kube_server, name=name)
        revision = kube_server.reconcile_kservice(NS, ksvc)
        kube_server.patch(REVISIONS, NS, revision, {"status": {"actualReplicas": int(name[1])}}, status=True)
        kube_server.add_revision_pods(NS, ksvc, revision, count=int(name[1]))
    snapshots = snapshot_apps(kube_api, SETTINGS, retry=NO_WAIT)
    assert [(s.app.metadata.id.name, s.app.status.current_replicas, len(s.replicas)) for s in snapshots] == [
        ("a1", 1, 1),
        ("a2", 2, 2),
        ("a3", 3, 3),
    ]
    assert kube_server.requests_matching("GET", "/revisions/") == ()  # no Revision read by name
    for kind in ("/services", "/revisions", "/pods"):
        assert len(kube_server.requests_matching("GET", kind)) == 1


def test_snapshot_of_all_apps_reads_each_revision_when_listing_them_is_forbidden(
    kube_server: FakeKubeApi, kube_api: client.ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    ksvc = deploy(kube_server)
    revision = kube_server.reconcile_kservice(NS, ksvc)
    kube_server.patch(REVISIONS, NS, revision, {"status": {"actualReplicas": 2}}, status=True)
    kube_server.fail_next(403, times=1, method="GET", path_contains="/revisions")  # the LIST
    with caplog.at_level(logging.WARNING):
        (snapshot,) = snapshot_apps(kube_api, SETTINGS, retry=NO_WAIT)
    assert snapshot.app.status.current_replicas == 2
    assert len(kube_server.requests_matching("GET", f"/revisions/{revision}")) == 1
    assert "reading each app's Revision instead" in caplog.text
