"""Pure: whether a running app has a replica that can take a request, and why not.

Flyte's replica status (``flyte_apps.core.status.pod_replica_status``, upstream's table) looks at the
pod's phase and its containers only, so a replica on a node that stopped reporting stays ``ACTIVE``:
the node lifecycle controller marks such pods not Ready (their ``Ready`` condition goes ``False``) and
leaves the containers' statuses as the kubelet last wrote them. ``status`` keeps upstream's replica
status and adds a note for an app whose replicas exist but none is Ready, naming each pod and, where
the node is the reason, the node and what Kubernetes says of it.

An app scaled to zero has no replicas and gets no note (a request starts one); a stopped app none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import bounded
from flyte_apps.core.shapes import conditions_of, mapping, metadata_of, status_of, text_of
from flyte_apps.core.status import CONDITION_READY, CONDITION_TRUE, Drift, is_stopped

NOTE_NO_READY_REPLICA: Final = "no-ready-replica"
NODE_READY: Final = "Ready"
"""What :func:`node_state` says of a node whose ``Ready`` condition is ``True``."""
_TERMINAL_PHASES: Final = frozenset({c.POD_SUCCEEDED, c.POD_FAILED})
_PODS_NAMED: Final = 3


def ready_condition(obj: object) -> Mapping[str, Any] | None:
    """The ``Ready`` condition of a pod or node, if it has one."""
    return next((cond for cond in conditions_of(obj) if cond.get("type") == CONDITION_READY), None)


def pod_is_ready(pod: Mapping[str, Any]) -> bool:
    """Kubernetes' own readiness: the pod's ``Ready`` condition is ``True`` (what Services route by)."""
    cond = ready_condition(pod)
    return cond is not None and cond.get("status") == CONDITION_TRUE


def node_of(pod: Mapping[str, Any]) -> str:
    return text_of(mapping(pod.get("spec")).get("nodeName"))


def node_state(node: Mapping[str, Any]) -> str:
    """``Ready``, or ``NotReady`` with the reason and message of its ``Ready`` condition."""
    cond = ready_condition(node)
    if cond is not None and cond.get("status") == CONDITION_TRUE:
        return NODE_READY
    if cond is None:
        return "NotReady (no Ready condition)"
    why = ": ".join(part for part in (text_of(cond.get("reason")), text_of(cond.get("message"))) if part)
    return f"NotReady ({why})" if why else "NotReady"


def unready_replicas(ksvc: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The app's live replicas (``pods``: its replica pods, not finished nor being deleted) when it is
    meant to run and none of them is Ready; otherwise none."""
    live = [
        pod
        for pod in pods
        if text_of(status_of(pod).get("phase")) not in _TERMINAL_PHASES
        and not metadata_of(pod).get("deletionTimestamp")
    ]
    if is_stopped(ksvc) or any(pod_is_ready(pod) for pod in live):
        return []
    return live


def nodes_of(pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """The nodes ``pods`` run on (whose state is worth a read when they are unready replicas)."""
    return sorted({node for node in map(node_of, pods) if node})


def no_ready_replica(unready: Sequence[Mapping[str, Any]], nodes: Mapping[str, str]) -> list[Drift]:
    """The note for an app whose replicas are ``unready`` (:func:`unready_replicas`); none without any.
    ``nodes``: node name -> :func:`node_state`, for the nodes that could be read."""
    if not unready:
        return []
    said = [_why(pod, nodes) for pod in unready[:_PODS_NAMED]]
    more = f" and {len(unready) - _PODS_NAMED} more" if len(unready) > _PODS_NAMED else ""
    count = (
        "its replica is not Ready" if len(unready) == 1 else f"none of its {len(unready)} replicas is Ready"
    )
    message = f"no ready replica: {count}: {'; '.join(said)}{more}"
    return [Drift(NOTE_NO_READY_REPLICA, bounded(message), is_drift=False)]


def _why(pod: Mapping[str, Any], nodes: Mapping[str, str]) -> str:
    name = text_of(metadata_of(pod).get("name")) or "(unnamed pod)"
    node = node_of(pod)
    state = nodes.get(node)
    if node and state is not None and state != NODE_READY:
        return f"pod {name} on node {node}, which is {state}"
    cond = ready_condition(pod)
    reason = text_of(cond.get("reason")) if cond is not None else ""
    phase = text_of(status_of(pod).get("phase")) or "no phase"
    where = f" on node {node}" if node else " (not scheduled)"
    return f"pod {name}{where}: {reason or 'not Ready'} ({phase})"
