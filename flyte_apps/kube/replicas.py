"""Which pods are an app's replicas: Flyte's ``GetReplicas`` selection ((c)14), in one place.

Flyte's replica reads (:func:`flyte_apps.kube.apps.list_replicas`) and ``flyte-apps logs`` must
agree on what a replica is, so both ask :func:`find_replicas`. Upstream's rule: the pods labelled
``serving.knative.dev/service=<KService>``, narrowed to
``serving.knative.dev/revision=<latestReadyRevisionName>`` once the KService has a ready revision
(old-revision pods of a rollout are left out); a missing KService selects on the service label
alone. The ``status`` snapshots, which list a namespace's pods once for every app, apply the same
rule to that list with the pure ``flyte_apps.core.status.replica_pods``. A pod named as a replica
(``logs --replica``) must carry the app's service label (:func:`get_replica`; upstream does not check).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from flyte_apps.core import constants as c
from flyte_apps.core.config.models import AppId
from flyte_apps.core.naming import kservice_name
from flyte_apps.core.status import latest_ready_revision
from flyte_apps.kube.api import get_knative_object, get_pod, list_pods
from flyte_apps.kube.errors import KubeNotFound
from flyte_apps.kube.retry import DEFAULT_RETRY, RetryPolicy


class ReplicaNotFound(KubeNotFound):
    """The pod named as a replica does not exist, or belongs to another app."""


@dataclass(frozen=True)
class Replicas:
    """What ``GetReplicas`` found: the selector used, whether the KService exists, and the pods."""

    selector: str
    kservice_found: bool
    pods: tuple[Any, ...]
    """``V1Pod`` objects, in the API server's order unless a caller re-sorts them."""


def replica_selector(kservice: str, revision: str | None) -> str:
    """Upstream's label selector for the replicas of ``kservice`` (``revision``: latest ready)."""
    selector = f"{c.LABEL_KNATIVE_SERVICE}={kservice}"
    if revision:
        selector += f",{c.LABEL_KNATIVE_REVISION}={revision}"
    return selector


def find_replicas(
    api: k8s.ApiClient, *, namespace: str, kservice: str, retry: RetryPolicy = DEFAULT_RETRY
) -> Replicas:
    """Read the KService (absent is not an error), then list the pods its selector matches."""
    try:
        ksvc: dict[str, Any] | None = get_knative_object(
            api,
            plural=c.KSERVICE_PLURAL,
            namespace=namespace,
            name=kservice,
            retry=retry,
        )
    except KubeNotFound:
        ksvc = None
    revision = latest_ready_revision(ksvc) if ksvc is not None else None
    selector = replica_selector(kservice, revision)
    pods = list_pods(api, namespace=namespace, label_selector=selector, retry=retry)
    return Replicas(selector=selector, kservice_found=ksvc is not None, pods=tuple(pods))


def get_replica(
    api: k8s.ApiClient, *, app: AppId, namespace: str, name: str, retry: RetryPolicy = DEFAULT_RETRY
) -> Any:
    """The pod ``name``, checked to be one of ``app``'s replicas (upstream does not check)."""
    try:
        pod: Any = get_pod(api, namespace=namespace, name=name, retry=retry)
    except KubeNotFound as exc:
        msg = f"replica '{name}' of app {app} not found in namespace '{namespace}'"
        raise ReplicaNotFound(msg, status=exc.status) from exc
    kservice = kservice_name(project=app.project, domain=app.domain, name=app.name)
    owner = (pod.metadata.labels or {}).get(c.LABEL_KNATIVE_SERVICE)
    if owner != kservice:
        label = f"{c.LABEL_KNATIVE_SERVICE}={owner}" if owner else f"no {c.LABEL_KNATIVE_SERVICE} label"
        msg = f"pod '{namespace}/{name}' is not a replica of app {app} "
        msg += f"(KService '{kservice}'; the pod has {label})"
        raise ReplicaNotFound(msg)
    return pod
