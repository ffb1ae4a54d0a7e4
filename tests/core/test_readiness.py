"""The note `flyte-apps status` adds for an app whose replicas exist but none is Ready (a lost node, a
failing readiness probe), while Flyte's replica status stays upstream's."""

from __future__ import annotations

from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.readiness import (
    NODE_READY,
    NOTE_NO_READY_REPLICA,
    no_ready_replica,
    node_state,
    nodes_of,
    unready_replicas,
)
from flyte_apps.core.status import REPLICA_ACTIVE, pod_replica_status

NODE: Final = "worker-1"
KSVC: Final[dict[str, Any]] = {"metadata": {"name": "web-proj-dev", "labels": {}}}
STOPPED_KSVC: Final[dict[str, Any]] = {
    "metadata": {"name": "web-proj-dev", "labels": {c.LABEL_APP_STOPPED: c.TRUE}}
}
LOST_NODE: Final[dict[str, Any]] = {
    "metadata": {"name": NODE},
    "status": {
        "conditions": [
            {"type": "MemoryPressure", "status": "Unknown"},
            {
                "type": "Ready",
                "status": "Unknown",
                "reason": "NodeStatusUnknown",
                "message": "Kubelet stopped posting node status.",
            },
        ]
    },
}


def note_of(ksvc: dict[str, Any], pods: list[dict[str, Any]], nodes: dict[str, str]) -> list[Any]:
    """What `status` does per app: its unready replicas, then the note on them."""
    return no_ready_replica(unready_replicas(ksvc, pods), nodes)


def pod(name: str, *, ready: str = "True", phase: str = "Running", **extra: Any) -> dict[str, Any]:
    """A running replica whose containers the kubelet last reported ready; ``ready``: its Ready
    condition (the node lifecycle controller sets ``False`` when the node stops reporting)."""
    return {
        "metadata": {"name": name, **extra},
        "spec": {"nodeName": NODE},
        "status": {
            "phase": phase,
            "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": ready}],
            "containerStatuses": [{"name": "app", "ready": True, "state": {"running": {}}}],
        },
    }


def test_a_replica_on_a_lost_node_is_active_to_flyte_and_gets_a_note_naming_pod_and_node() -> None:
    lost = pod("web-1", ready="False")
    assert pod_replica_status(lost) == (REPLICA_ACTIVE, "")  # upstream's table: containers only
    nodes = {NODE: node_state(LOST_NODE)}
    (note,) = note_of(KSVC, [lost], nodes)
    assert note.kind == NOTE_NO_READY_REPLICA
    assert not note.is_drift
    assert note.message == (
        "no ready replica: its replica is not Ready: pod web-1 on node worker-1, which is NotReady "
        "(NodeStatusUnknown: Kubelet stopped posting node status.)"
    )


def test_one_ready_replica_is_enough_and_no_replica_at_all_is_scale_to_zero() -> None:
    assert note_of(KSVC, [pod("web-1", ready="False"), pod("web-2")], {}) == []
    assert note_of(KSVC, [], {}) == []


def test_a_stopped_app_gets_no_note() -> None:
    assert note_of(STOPPED_KSVC, [pod("web-1", ready="False")], {}) == []


def test_finished_and_terminating_pods_are_not_replicas_that_could_serve() -> None:
    gone = [
        pod("web-1", ready="False", phase=c.POD_SUCCEEDED),
        pod("web-2", ready="False", deletionTimestamp="2026-12-06T04:00:00Z"),
    ]
    assert note_of(KSVC, gone, {}) == []
    assert unready_replicas(KSVC, gone) == []


def test_without_the_nodes_state_the_note_says_the_pods_own_reason() -> None:
    starting = pod("web-1", ready="False", phase=c.POD_PENDING)
    starting["status"]["conditions"][1]["reason"] = "ContainersNotReady"
    unscheduled = {"metadata": {"name": "web-2"}, "status": {"phase": c.POD_PENDING}}
    (note,) = note_of(KSVC, [starting, unscheduled], {NODE: NODE_READY})
    assert note.message == (
        "no ready replica: none of its 2 replicas is Ready: pod web-1 on node worker-1: ContainersNotReady "
        "(Pending); pod web-2 (not scheduled): not Ready (Pending)"
    )


def test_many_replicas_are_counted_not_all_named() -> None:
    pods = [pod(f"web-{i}", ready="False") for i in range(5)]
    (note,) = note_of(KSVC, pods, {})
    assert note.message.startswith("no ready replica: none of its 5 replicas is Ready: pod web-0 ")
    assert note.message.endswith("; pod web-2 on node worker-1: not Ready (Running) and 2 more")


def test_only_nodes_of_apps_without_a_ready_replica_are_worth_reading() -> None:
    elsewhere = pod("api-1", ready="False")
    elsewhere["spec"]["nodeName"] = "worker-2"
    lists = [[pod("web-1"), pod("web-2", ready="False")], [elsewhere], []]
    assert nodes_of(p for pods in lists for p in unready_replicas(KSVC, pods)) == ["worker-2"]
    assert unready_replicas(STOPPED_KSVC, [elsewhere]) == []


def test_node_states() -> None:
    assert node_state({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}) == NODE_READY
    assert node_state({"status": {}}) == "NotReady (no Ready condition)"
    assert node_state({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}) == "NotReady"
