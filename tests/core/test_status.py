"""Pure status mapping: KService -> Flyte App ((c)10-11, the (d) tables), pod -> replica, drift."""

from __future__ import annotations

import base64
import copy
import hashlib
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import pytest
from flyteidl2.app import app_definition_pb2 as app_pb
from google.protobuf.timestamp_pb2 import Timestamp

from flyte_apps.core import constants as c
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.spec import SpecBlob, decode_spec
from flyte_apps.core.status import (
    AppConversionError,
    find_drift,
    kservice_to_app,
    pod_replica_status,
    pod_to_replica,
    replica_pods,
    summarize,
)
from tests.support.config import minimal_config

NOW = datetime(2025, 5, 1, 12, 0, 0, tzinfo=UTC)
CREATED = "2025-05-01T11:00:00Z"
Status = app_pb.Status
ACTIVE = Status.DEPLOYMENT_STATUS_ACTIVE
DEPLOYING = Status.DEPLOYMENT_STATUS_DEPLOYING
PENDING = Status.DEPLOYMENT_STATUS_PENDING
FAILED = Status.DEPLOYMENT_STATUS_FAILED
STOPPED = Status.DEPLOYMENT_STATUS_STOPPED


def rendered(**app: Any) -> dict[str, Any]:
    """The KService the stack renders for proj/dev/myapp, as the API server would return it."""
    raw = minimal_config(**app)
    raw["flyte-apps:platform"] = {"baseDomain": "apps.example.com"}
    manifest = copy.deepcopy(plan_stack(raw).apps[0].kservice)
    manifest["metadata"]["creationTimestamp"] = CREATED
    return manifest


def with_conditions(ksvc: dict[str, Any], *conditions: dict[str, str]) -> dict[str, Any]:
    ksvc["status"] = {"conditions": list(conditions)}
    return ksvc


def convert(ksvc: dict[str, Any], *, replicas: int = 0, base_domain: str = "apps.example.com") -> app_pb.App:
    return kservice_to_app(
        ksvc, base_domain=base_domain, scheme="https", ingress_apps_port=0, current_replicas=replicas, now=NOW
    )


def phases(app: app_pb.App) -> list[tuple[int, str]]:
    return [(cond.deployment_status, cond.message) for cond in app.status.conditions]


def cond(kind: str, status: str, reason: str = "", message: str = "", at: str = "") -> dict[str, str]:
    found = {"type": kind, "status": status}
    if reason:
        found["reason"] = reason
    if message:
        found["message"] = message
    if at:
        found["lastTransitionTime"] = at
    return found


# --- identity ------------------------------------------------------------------------------------


def test_identity_comes_from_the_app_id_annotation_with_default_org() -> None:
    app = convert(rendered())
    assert app.metadata.id == app_pb.Identifier(org="flyte", project="proj", domain="dev", name="myapp")


def test_org_annotation_is_used_when_set() -> None:
    assert convert(rendered(org="acme")).metadata.id.org == "acme"


def test_app_id_keeps_further_slashes_in_the_name() -> None:
    ksvc = rendered()
    ksvc["metadata"]["annotations"][c.ANNOTATION_APP_ID] = "proj/dev/my/app"
    assert convert(ksvc).metadata.id.name == "my/app"


def test_missing_app_id_is_a_domain_error_naming_the_kservice() -> None:
    ksvc = rendered()
    del ksvc["metadata"]["annotations"][c.ANNOTATION_APP_ID]
    with pytest.raises(AppConversionError) as err:
        convert(ksvc)
    assert str(err.value) == "KService myapp-proj-dev missing flyte.org/app-id annotation"


def test_malformed_app_id_is_a_domain_error_quoting_the_value() -> None:
    ksvc = rendered()
    ksvc["metadata"]["annotations"][c.ANNOTATION_APP_ID] = "proj/myapp"
    with pytest.raises(AppConversionError) as err:
        convert(ksvc)
    assert str(err.value) == 'KService myapp-proj-dev has malformed flyte.org/app-id annotation: "proj/myapp"'


def test_a_map_that_is_not_a_dict_reads_like_one_and_entries_that_are_not_text_are_dropped() -> None:
    # Parsed JSON's maps are dicts (checked first); any other Mapping must still be read as a map.
    ksvc = rendered()
    meta = ksvc["metadata"]
    meta["labels"] = MappingProxyType({**meta["labels"], c.LABEL_APP_STOPPED: True, 7: c.TRUE})
    meta["annotations"] = MappingProxyType({**meta["annotations"], c.ANNOTATION_APP_ORG: 3})
    ksvc = {
        **ksvc,
        "metadata": MappingProxyType(meta),
        "status": {"conditions": ["Ready", cond("Ready", "True")]},
    }
    app = convert(ksvc)
    assert app.metadata.id == app_pb.Identifier(org="flyte", project="proj", domain="dev", name="myapp")
    assert phases(app) == [(ACTIVE, "Service is ready")]  # the bare string is no condition
    assert app.status.ingress.public_url == "https://myapp-proj-dev.apps.example.com"  # not stopped
    assert app == convert(rendered() | {"status": {"conditions": [cond("Ready", "True")]}})


# --- spec ----------------------------------------------------------------------------------------


def test_spec_is_decoded_from_the_annotation() -> None:
    app = convert(rendered())
    assert app.spec.container.image == "nginx:1.27"
    assert app.spec.desired_state == app_pb.Spec.DESIRED_STATE_ACTIVE


@pytest.mark.parametrize("value", [None, "not base64!", "AAEC"])
def test_undecodable_or_missing_spec_gives_no_spec_and_no_error(value: str | None) -> None:
    ksvc = rendered()
    if value is None:
        del ksvc["metadata"]["annotations"][c.ANNOTATION_SPEC]
    else:
        ksvc["metadata"]["annotations"][c.ANNOTATION_SPEC] = value
    app = convert(ksvc)
    assert not app.HasField("spec")
    assert app.metadata.id.name == "myapp"


# --- conditions (the (d) table and upstream's vectors) ---------------------------------------


def test_ready_service_is_active_with_default_message() -> None:
    app = convert(with_conditions(rendered(), cond("Ready", "True")))
    assert phases(app) == [(ACTIVE, "Service is ready")]


def test_all_true_conditions_are_active_in_input_order_with_default_messages() -> None:
    ksvc = with_conditions(
        rendered(), cond("ConfigurationsReady", "True"), cond("RoutesReady", "True"), cond("Ready", "True")
    )
    assert phases(convert(ksvc)) == [
        (ACTIVE, "Configuration is ready"),
        (ACTIVE, "Routes are ready"),
        (ACTIVE, "Service is ready"),
    ]


def test_true_conditions_are_deploying_while_ready_is_unknown() -> None:
    ksvc = with_conditions(
        rendered(),
        cond("ConfigurationsReady", "True"),
        cond(
            "Ready", "Unknown", "RevisionMissing", "Configuration is waiting for a Revision to become ready."
        ),
    )
    assert phases(convert(ksvc)) == [
        (DEPLOYING, "Configuration is ready"),
        (PENDING, "RevisionMissing: Configuration is waiting for a Revision to become ready."),
    ]


def test_route_not_ready_vector_skips_unknown_routes_ready() -> None:
    message = "Traffic is not yet migrated to the latest revision."
    ksvc = with_conditions(
        rendered(),
        cond("RoutesReady", "Unknown", "TrafficNotMigrated", message),
        cond("Ready", "Unknown", "TrafficNotMigrated", message),
    )
    assert phases(convert(ksvc)) == [(PENDING, f"TrafficNotMigrated: {message}")]


def test_false_conditions_are_failed_only_when_ready_is_false() -> None:
    ksvc = with_conditions(
        rendered(),
        cond("ConfigurationsReady", "False", "RevisionFailed", "Revision failed with message: boom."),
        cond("Ready", "False", "RevisionFailed", "Revision failed with message: boom."),
        cond("RoutesReady", "True"),
    )
    assert phases(convert(ksvc)) == [
        (FAILED, "RevisionFailed: Revision failed with message: boom."),
        (FAILED, "RevisionFailed: Revision failed with message: boom."),
        (DEPLOYING, "Routes are ready"),
    ]


def test_false_condition_is_skipped_while_ready_is_not_false() -> None:
    ksvc = with_conditions(
        rendered(), cond("ConfigurationsReady", "False", "X", "y"), cond("Ready", "Unknown")
    )
    assert phases(convert(ksvc)) == [(PENDING, "Service is ready")]  # upstream's default text, (j)23


def test_reason_without_message_keeps_the_colon() -> None:
    ksvc = with_conditions(rendered(), cond("Ready", "Unknown", reason="Deploying"))
    assert phases(convert(ksvc)) == [(PENDING, "Deploying: ")]


def test_unusual_condition_status_is_pending_and_other_types_have_no_default_text() -> None:
    ksvc = with_conditions(rendered(), cond("Custom", "Weird"))
    assert phases(convert(ksvc)) == [(PENDING, "")]


def test_transition_time_comes_from_the_condition_else_now() -> None:
    ksvc = with_conditions(rendered(), cond("ConfigurationsReady", "True", at=CREATED), cond("Ready", "True"))
    times = [c.last_transition_time.ToDatetime(tzinfo=UTC) for c in convert(ksvc).status.conditions]
    assert times == [datetime(2025, 5, 1, 11, 0, 0, tzinfo=UTC), NOW]


def test_no_conditions_gives_an_empty_condition_list() -> None:
    app = convert(rendered())
    assert list(app.status.conditions) == []
    assert summarize(app) == ("UNKNOWN", "")


# --- stopped, ingress, metadata -----------------------------------------------------------


def test_stopped_app_has_one_stopped_condition_and_stopped_desired_state() -> None:
    ksvc = with_conditions(rendered(stopped=True), cond("Ready", "True"))
    app = convert(ksvc)
    assert phases(app) == [(STOPPED, "App scaled to zero")]
    assert app.status.conditions[0].last_transition_time.ToDatetime(tzinfo=UTC) == NOW
    assert app.spec.desired_state == app_pb.Spec.DESIRED_STATE_STOPPED


def test_stopped_app_has_no_public_url_but_keeps_created_at_namespace_and_replicas() -> None:
    # Stopped means cluster-local (upstream's stop patch): a public URL would not answer.
    app = convert(rendered(stopped=True), replicas=2)
    assert not app.status.HasField("ingress")
    assert app.status.created_at.ToDatetime(tzinfo=UTC) == datetime(2025, 5, 1, 11, 0, 0, tzinfo=UTC)
    assert app.status.k8s_metadata.namespace == "flyte"
    assert app.status.current_replicas == 2


def test_running_app_reports_ingress_replicas_namespace_and_created_at() -> None:
    app = convert(with_conditions(rendered(), cond("Ready", "True")), replicas=3)
    assert app.status.ingress.public_url == "https://myapp-proj-dev.apps.example.com"
    assert app.status.current_replicas == 3
    assert app.status.k8s_metadata.namespace == "flyte"
    assert app.status.HasField("created_at")


@pytest.mark.parametrize("stopped", [False, True])
def test_cluster_local_app_has_no_ingress(stopped: bool) -> None:
    app = convert(rendered(visibility="cluster-local", stopped=stopped))
    assert not app.status.HasField("ingress")


def test_running_app_labelled_cluster_local_has_no_ingress_whatever_its_spec() -> None:
    ksvc = rendered()
    ksvc["metadata"]["labels"][c.LABEL_VISIBILITY] = c.VISIBILITY_CLUSTER_LOCAL
    assert not convert(ksvc).status.HasField("ingress")


def test_no_base_domain_means_no_ingress() -> None:
    assert not convert(rendered(), base_domain="").status.HasField("ingress")


def test_ingress_port_and_scheme_follow_public_ingress() -> None:
    app = kservice_to_app(
        rendered(),
        base_domain="localhost",
        scheme="http",
        ingress_apps_port=30081,
        current_replicas=0,
        now=NOW,
    )
    assert app.status.ingress.public_url == "http://myapp-proj-dev.localhost:30081"


# --- pods -> replicas: one test per row of the (d) pod table ---------------------------------


def pod(phase: str, *statuses: dict[str, Any], reason: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "containerStatuses": list(statuses)}
    if reason:
        status["reason"] = reason
    return {"metadata": {"name": "myapp-abc"}, "status": status}


def container(name: str, *, ready: bool, state: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ready": ready, "state": state}


RUNNING = {"running": {"startedAt": CREATED}}


def test_running_pod_with_all_containers_ready_is_active() -> None:
    ready = pod(
        "Running",
        container("queue-proxy", ready=True, state=RUNNING),
        container("app", ready=True, state=RUNNING),
    )
    assert pod_replica_status(ready) == ("ACTIVE", "")
    assert pod_replica_status(pod("Running")) == ("ACTIVE", "")


def test_running_pod_with_a_waiting_container_is_deploying_with_its_reason() -> None:
    waiting = pod(
        "Running",
        container("queue-proxy", ready=True, state=RUNNING),
        container("app", ready=False, state={"waiting": {"reason": "ContainerCreating"}}),
    )
    assert pod_replica_status(waiting) == ("DEPLOYING", "ContainerCreating")


def test_running_pod_with_an_unready_running_container_is_deploying_not_ready() -> None:
    unready = pod("Running", container("queue-proxy", ready=False, state=RUNNING))
    assert pod_replica_status(unready) == ("DEPLOYING", "container not ready")


def test_pending_pod_reports_the_first_waiting_reason() -> None:
    pulling = pod(
        "Pending",
        container("queue-proxy", ready=False, state={"waiting": {}}),
        container("app", ready=False, state={"waiting": {"reason": "ImagePullBackOff"}}),
    )
    assert pod_replica_status(pulling) == ("PENDING", "ImagePullBackOff")


def test_pending_pod_without_a_waiting_reason_is_pending_pending() -> None:
    assert pod_replica_status(pod("Pending")) == ("PENDING", "Pending")


def test_failed_pod_reports_the_pod_reason() -> None:
    assert pod_replica_status(pod("Failed", reason="OOMKilled")) == ("FAILED", "OOMKilled")


def test_failed_pod_without_reason_falls_back_to_the_first_terminated_container() -> None:
    failed = pod(
        "Failed", container("app", ready=False, state={"terminated": {"reason": "Error", "exitCode": 1}})
    )
    assert pod_replica_status(failed) == ("FAILED", "Error")


def test_succeeded_pod_is_stopped_completed() -> None:
    assert pod_replica_status(pod("Succeeded")) == ("STOPPED", "pod completed")


@pytest.mark.parametrize("phase", ["Unknown", ""])
def test_other_pod_phases_are_pending_with_the_phase(phase: str) -> None:
    assert pod_replica_status(pod(phase)) == ("PENDING", phase)


def test_pod_to_replica_carries_the_app_id_and_pod_name() -> None:
    ident = app_pb.Identifier(org="flyte", project="proj", domain="dev", name="myapp")
    replica = pod_to_replica(pod("Succeeded"), ident)
    assert replica.metadata.id.app_id == ident
    assert replica.metadata.id.name == "myapp-abc"
    assert (replica.status.deployment_status, replica.status.reason) == ("STOPPED", "pod completed")


def test_replica_pods_keep_only_the_latest_ready_revision_once_there_is_one() -> None:
    def labelled(name: str, revision: str, service: str = "myapp-proj-dev") -> dict[str, Any]:
        labels = {c.LABEL_KNATIVE_SERVICE: service, c.LABEL_KNATIVE_REVISION: revision}
        return {"metadata": {"name": name, "labels": labels}}

    pods = [labelled("new", "r2"), labelled("old", "r1"), labelled("other", "r2", "x-proj-dev")]
    names = [
        p["metadata"]["name"]
        for p in replica_pods(pods, kservice="myapp-proj-dev", latest_ready_revision="r2")
    ]
    assert names == ["new"]
    names = [
        p["metadata"]["name"]
        for p in replica_pods(pods, kservice="myapp-proj-dev", latest_ready_revision=None)
    ]
    assert names == ["new", "old"]


# --- summary and drift -----------------------------------------------------------------------


def test_summary_prefers_deploying_and_explains_why_it_is_not_ready() -> None:
    ksvc = with_conditions(
        rendered(),
        cond("ConfigurationsReady", "True"),
        cond("Ready", "Unknown", "RevisionMissing", "waiting"),
    )
    assert summarize(convert(ksvc)) == ("DEPLOYING", "RevisionMissing: waiting")


def test_summary_of_failed_and_stopped_apps() -> None:
    failed = with_conditions(
        rendered(), cond("Ready", "False", "RevisionFailed", "boom"), cond("RoutesReady", "True")
    )
    assert summarize(convert(failed)) == ("FAILED", "RevisionFailed: boom")
    assert summarize(convert(rendered(stopped=True))) == ("STOPPED", "App scaled to zero")


def blob_of(**app: Any) -> SpecBlob:
    return plan_stack(minimal_config(**app)).apps[0].blob


def test_drift_flags_a_spec_changed_outside_the_stack_naming_its_fields() -> None:
    found = find_drift(
        rendered(), expected=blob_of(container={"image": "nginx:1.28"}), expected_stopped=False, replicas=0
    )
    assert [(d.kind, d.is_drift) for d in found] == [("spec", True)]
    assert "(the spec differs in container)" in found[0].message
    assert "`pulumi up --refresh` puts the stack's version back" in found[0].message


def with_spec(ksvc: dict[str, Any], data: bytes) -> dict[str, Any]:
    """``ksvc`` with its spec annotations rewritten to ``data`` (as another writer of them would)."""
    annotations = ksvc["metadata"]["annotations"]
    annotations[c.ANNOTATION_SPEC] = base64.b64encode(data).decode()
    annotations[c.ANNOTATION_SPEC_SHA] = hashlib.sha256(data).hexdigest()[:16]
    return ksvc


def test_the_same_pod_spec_with_its_maps_in_another_order_is_a_note_not_drift() -> None:
    # Flyte's Go writes map entries in random order (j)6: a Deploy of the same pod spec can write other
    # bytes. Built here as protobuf reads it: serialized messages concatenated are merged, so the pod
    # spec's entries (a map of its top-level keys) come out in reverse order and the message is the same.
    pod = {"spec": {"containers": [{"name": "app", "image": "nginx:1.27"}], "nodeSelector": {"zone": "a"}}}
    blob = blob_of(container=None, pod=pod)
    spec = decode_spec(blob.b64)
    rest = app_pb.Spec()
    rest.CopyFrom(spec)
    rest.pod.ClearField("pod_spec")
    pieces = [rest.SerializeToString()]
    for key in sorted(spec.pod.pod_spec.fields, reverse=True):
        single = app_pb.Spec()
        single.pod.pod_spec.fields[key].CopyFrom(spec.pod.pod_spec.fields[key])
        pieces.append(single.SerializeToString())
    assert len(pieces) > 2
    live = with_spec(rendered(container=None, pod=pod), b"".join(pieces))
    assert decode_spec(live["metadata"]["annotations"][c.ANNOTATION_SPEC]) == spec
    found = find_drift(live, expected=blob, expected_stopped=False, replicas=0)
    assert [(d.kind, d.is_drift) for d in found] == [("spec-order", False)]
    assert "same spec, Go's map order" in found[0].message


def test_the_same_container_spec_in_another_field_order_is_a_note_saying_so() -> None:
    blob = blob_of()
    live = with_spec(rendered(), decode_spec(blob.b64).SerializeToString(deterministic=True))
    found = find_drift(live, expected=blob, expected_stopped=False, replicas=0)
    assert [(d.kind, d.is_drift) for d in found] == [("spec-order", False)]
    assert "another field order than protobuf-go's" in found[0].message
    assert "map order" not in found[0].message


def test_drift_flags_a_stop_label_that_differs_from_the_stack() -> None:
    ksvc = rendered(stopped=True)
    found = find_drift(ksvc, expected=blob_of(stopped=True), expected_stopped=False, replicas=0)
    assert [(d.kind, d.message.split(":")[0]) for d in found] == [
        ("stopped", "app is stopped but the stack has it running")
    ]


def test_drift_flags_a_stopped_app_woken_by_in_cluster_traffic() -> None:
    found = find_drift(rendered(stopped=True), expected=None, expected_stopped=None, replicas=2)
    assert [d.kind for d in found] == ["woken"]
    assert "has 2 replicas" in found[0].message


def test_matching_app_has_no_drift() -> None:
    assert find_drift(rendered(), expected=blob_of(), expected_stopped=False, replicas=1) == []


def test_times_are_written_as_timestamp_from_datetime_writes_them() -> None:
    # kservice_to_app writes Timestamps itself (no struct_time round trip): the same seconds and nanos,
    # before 1970 and with microseconds too, and a naive `now` counts as UTC.
    at = "1969-12-31T23:59:58.250001+02:00"
    ksvc = with_conditions(rendered(), cond("Ready", "True", at=at), cond("RoutesReady", "True"))
    naive = datetime(1960, 3, 4, 5, 6, 7, 891011)
    app = kservice_to_app(
        ksvc, base_domain="", scheme="https", ingress_apps_port=0, current_replicas=0, now=naive
    )
    expected = [Timestamp(), Timestamp(), Timestamp()]
    expected[0].FromDatetime(datetime.fromisoformat(at))
    expected[1].FromDatetime(naive)
    expected[2].FromDatetime(datetime.fromisoformat(CREATED))
    got = [cond.last_transition_time for cond in app.status.conditions] + [app.status.created_at]
    assert got == expected
