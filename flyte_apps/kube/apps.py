"""Flyte's app reads against the Kubernetes API: Get, List, replica count and replicas ((c)9, 13, 14).

Every call goes through ``flyte_apps.kube.retry`` (retries, error rewriting); which pods are an
app's replicas is decided by ``flyte_apps.kube.replicas``; the mapping from Kubernetes objects to
Flyte messages is the pure ``flyte_apps.core.status``.

One app is read as upstream reads it (its KService, its Revision, its pods). Every app at once
(``flyte-apps status``) is read with one paged LIST per kind instead: KServices, Revisions (for the
replica counts) and pods, so a namespace of thousands of apps costs a few dozen requests, not a
Revision GET per app. Where RBAC allows ``get`` but not ``list`` on Revisions, the listing falls
back to the GET per app and says so.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, cast

from flyteidl2.app import app_definition_pb2 as app_pb
from flyteidl2.app import replica_definition_pb2 as replica_pb
from kubernetes import client as k8s

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import bounded
from flyte_apps.core.config.models import AppId, PlatformConfig
from flyte_apps.core.naming import kservice_name
from flyte_apps.core.readiness import node_state
from flyte_apps.core.status import (
    AppConversionError,
    kservice_to_app,
    latest_ready_revision,
    pod_to_replica,
    replica_pods,
)
from flyte_apps.kube.api import (
    DEFAULT_PAGE_SIZE,
    DEFAULT_REQUEST_TIMEOUT,
    custom_resource,
    follow_pages,
    get_knative_object,
    list_page,
    list_pods,
)
from flyte_apps.kube.bounded import read_body
from flyte_apps.kube.errors import KubeError, KubeForbidden, KubeNotFound
from flyte_apps.kube.replicas import find_replicas
from flyte_apps.kube.retry import DEFAULT_RETRY, KubeOperation, RetryPolicy, bad_response, call, describe

log = logging.getLogger(__name__)

KSERVICES = custom_resource(c.KNATIVE_GROUP, c.KSERVICE_PLURAL)
REVISIONS = custom_resource(c.KNATIVE_GROUP, c.REVISION_PLURAL)


@dataclass(frozen=True)
class AppSettings:
    """The platform settings an app read depends on (where apps live, how public URLs look)."""

    namespace: str = "flyte"
    base_domain: str = ""
    scheme: str = "https"
    ingress_apps_port: int = 0

    @classmethod
    def from_platform(cls, platform: PlatformConfig) -> AppSettings:
        settings = platform.settings
        return cls(
            namespace=settings.namespace,
            base_domain=settings.base_domain,
            scheme=settings.scheme,
            ingress_apps_port=settings.ingress_apps_port,
        )


@dataclass(frozen=True)
class AppSnapshot:
    """One app as ``status`` shows it: the Flyte app, its replicas, and the live KService."""

    app: app_pb.App
    replicas: tuple[replica_pb.Replica, ...]
    kservice: Mapping[str, Any]
    pods: tuple[Mapping[str, Any], ...] = ()
    """The replicas' pods as read (``replicas`` in order): what readiness notes look at."""


def identifier(app_id: AppId) -> app_pb.Identifier:
    return app_pb.Identifier(org=app_id.org, project=app_id.project, domain=app_id.domain, name=app_id.name)


def kservice_name_of(app_id: AppId) -> str:
    return kservice_name(project=app_id.project, domain=app_id.domain, name=app_id.name)


# --- KServices -----------------------------------------------------------------------------------


def get_kservice(
    api: k8s.ApiClient, namespace: str, app_id: AppId, *, retry: RetryPolicy = DEFAULT_RETRY
) -> dict[str, Any]:
    """The app's KService; :class:`KubeNotFound` naming the app and the KService."""
    name = kservice_name_of(app_id)
    try:
        return get_knative_object(
            api,
            plural=c.KSERVICE_PLURAL,
            namespace=namespace,
            name=name,
            retry=retry,
        )
    except KubeNotFound as exc:
        msg = f"app {app_id} not found: KService {namespace}/{name} does not exist"
        raise KubeNotFound(msg, status=exc.status) from exc


def list_kservices_page(
    api: k8s.ApiClient,
    namespace: str,
    *,
    label_selector: str | None,
    limit: int = 0,
    token: str = "",
    retry: RetryPolicy = DEFAULT_RETRY,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> tuple[list[dict[str, Any]], str, str]:
    """One LIST call of KServices: ``(items, continue token, list resourceVersion)``."""
    return list_knative_page(
        api,
        namespace,
        c.KSERVICE_PLURAL,
        label_selector=label_selector,
        limit=limit,
        token=token,
        retry=retry,
        request_timeout=request_timeout,
    )


def list_knative_page(
    api: k8s.ApiClient,
    namespace: str,
    plural: str,
    *,
    label_selector: str | None = None,
    limit: int = 0,
    token: str = "",
    retry: RetryPolicy = DEFAULT_RETRY,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> tuple[list[dict[str, Any]], str, str]:
    """One LIST call of Knative Serving objects (``plural``: services or revisions):
    ``(items, continue token, list resourceVersion)``."""
    op = KubeOperation("list", custom_resource(c.KNATIVE_GROUP, plural), namespace)
    page = call(
        k8s.CustomObjectsApi(api).list_namespaced_custom_object,
        c.KNATIVE_GROUP,
        c.KNATIVE_VERSION,
        namespace,
        plural,
        label_selector=label_selector,
        limit=limit if limit > 0 else None,
        _continue=token or None,
        _request_timeout=request_timeout,
        op=op,
        retry=retry,
        host=str(api.configuration.host),
    )
    return list_page(page, op, str(api.configuration.host))


def list_kservices(
    api: k8s.ApiClient,
    namespace: str,
    *,
    label_selector: str | None,
    retry: RetryPolicy = DEFAULT_RETRY,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> tuple[list[dict[str, Any]], str]:
    """Every matching KService (following ``continue``) and the first page's resourceVersion,
    from which a watch sees everything that happened after this list."""
    return list_knative(
        api, namespace, c.KSERVICE_PLURAL, label_selector=label_selector, retry=retry, page_size=page_size
    )


def list_knative(
    api: k8s.ApiClient,
    namespace: str,
    plural: str,
    *,
    label_selector: str | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> tuple[list[dict[str, Any]], str]:
    """Every matching Knative object of ``plural`` (following ``continue``) and the first page's
    resourceVersion, from which a watch sees everything that happened after this list."""
    versions: list[str] = []

    def fetch(token: str | None) -> tuple[list[dict[str, Any]], str | None]:
        page, next_token, version = list_knative_page(
            api,
            namespace,
            plural,
            label_selector=label_selector,
            limit=page_size,
            token=token or "",
            retry=retry,
        )
        versions.append(version)
        return page, next_token

    op = KubeOperation("list", custom_resource(c.KNATIVE_GROUP, plural), namespace)
    items = list(follow_pages(fetch, op, str(api.configuration.host)))
    return items, versions[0]


def app_selector(project: str = "", domain: str = "") -> str:
    """Flyte's List selector: managed apps, narrowed to a project and/or domain ((c)13)."""
    selector = [f"{c.LABEL_APP_MANAGED}={c.TRUE}"]
    if project:
        selector.append(f"{c.LABEL_PROJECT}={project}")
    if domain:
        selector.append(f"{c.LABEL_DOMAIN}={domain}")
    return ",".join(selector)


# --- apps ----------------------------------------------------------------------------------------


def to_app(
    api: k8s.ApiClient,
    settings: AppSettings,
    ksvc: Mapping[str, Any],
    *,
    now: datetime | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> app_pb.App:
    """``kservice_to_app`` with the replica count read from the latest ready Revision."""
    return kservice_to_app(
        ksvc,
        base_domain=settings.base_domain,
        scheme=settings.scheme,
        ingress_apps_port=settings.ingress_apps_port,
        current_replicas=current_replicas(api, settings.namespace, ksvc, retry=retry),
        now=now or datetime.now(UTC),
    )


def get_app(
    api: k8s.ApiClient,
    settings: AppSettings,
    app_id: AppId,
    *,
    now: datetime | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> app_pb.App:
    """Flyte's ``GetApp``: :class:`KubeNotFound` if the KService is missing,
    ``AppConversionError`` if it is not a readable Flyte app."""
    ksvc = get_kservice(api, settings.namespace, app_id, retry=retry)
    return to_app(api, settings, ksvc, now=now, retry=retry)


def list_apps(
    api: k8s.ApiClient,
    settings: AppSettings,
    *,
    project: str = "",
    domain: str = "",
    limit: int = 0,
    token: str = "",
    now: datetime | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> tuple[list[app_pb.App], str]:
    """Flyte's ``List``: one page (``limit`` 0 = everything), and the next page's token ("" at
    the end). KServices that are not readable apps are skipped with a warning, so a page can hold
    fewer than ``limit`` apps."""
    items, next_token, _ = list_kservices_page(
        api,
        settings.namespace,
        label_selector=app_selector(project, domain),
        limit=limit,
        token=token,
        retry=retry,
    )
    apps = []
    for ksvc in items:
        try:
            apps.append(to_app(api, settings, ksvc, now=now, retry=retry))
        except AppConversionError as exc:
            log.warning("skipping KService: %s", exc)
    return apps, next_token


def current_replicas(
    api: k8s.ApiClient, namespace: str, ksvc: Mapping[str, Any], *, retry: RetryPolicy = DEFAULT_RETRY
) -> int:
    """``status.actualReplicas`` of the latest ready Revision (one GET); 0 without one or on any error."""
    revision = latest_ready_revision(ksvc)
    if revision is None:
        return 0
    try:
        obj = get_knative_object(
            api,
            plural=c.REVISION_PLURAL,
            namespace=namespace,
            name=revision,
            retry=retry,
        )
    except KubeError as exc:
        log.debug("replica count of revision %s unavailable: %s", revision, exc)
        return 0
    return revision_replicas(obj)


def revision_replicas(revision: Mapping[str, Any]) -> int:
    """A Revision's ``status.actualReplicas``, or 0 when it has none (or no sensible one)."""
    value = (revision.get("status") or {}).get("actualReplicas")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def revision_name(revision: Mapping[str, Any]) -> str:
    return str((revision.get("metadata") or {}).get("name") or "")


def list_revision_replicas(
    api: k8s.ApiClient, namespace: str, *, retry: RetryPolicy = DEFAULT_RETRY
) -> tuple[dict[str, int], str]:
    """Every Revision's replica count (name -> ``status.actualReplicas``) from one paged LIST, and
    the list's resourceVersion (a watch from it sees every later change)."""
    items, version = list_knative(api, namespace, c.REVISION_PLURAL, retry=retry)
    return {revision_name(item): revision_replicas(item) for item in items}, version


# --- replicas ------------------------------------------------------------------------------------


def _pod_dicts(api: k8s.ApiClient, namespace: str, selector: str, retry: RetryPolicy) -> list[dict[str, Any]]:
    return _serialized(api, list_pods(api, namespace=namespace, label_selector=selector, retry=retry))


def _listed_pod_dicts(
    api: k8s.ApiClient,
    namespace: str,
    selector: str,
    retry: RetryPolicy,
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> list[dict[str, Any]]:
    """Pods as the API sends them (wire-format dicts), every page of one LIST.

    The JSON is read as it is: building a typed ``V1Pod`` per pod and serializing it back costs
    about a millisecond a pod, which a namespace of thousands of replicas feels. The status rules
    read only names, labels, phases, reasons and readiness, which both forms carry alike."""
    method = k8s.CoreV1Api(api).list_namespaced_pod
    op = KubeOperation("list", "pods", namespace)
    host = str(api.configuration.host)

    def request(token: str | None, _request_timeout: float) -> bytes:
        response: Any = method(
            namespace,
            label_selector=selector,
            limit=page_size,
            _continue=token,
            _preload_content=False,
            _request_timeout=_request_timeout,
        )
        return read_body(response, seconds=_request_timeout)

    def fetch(token: str | None) -> tuple[list[dict[str, Any]], str | None]:
        body = call(request, token, _request_timeout=request_timeout, op=op, retry=retry, host=host)
        try:
            page = json.loads(body)
        except ValueError as exc:
            raise bad_response(op, host, f"not JSON ({bounded(str(exc))}): {describe(body)}") from exc
        items, next_token, _ = list_page(page, op, host)
        return items, next_token

    return list(follow_pages(fetch, op, host))


def _serialized(api: k8s.ApiClient, pods: Iterable[Any]) -> list[dict[str, Any]]:
    """Objects (pods, nodes) as the wire-format dicts the pure status rules read."""
    serialize = cast(Callable[[Any], dict[str, Any]], api.sanitize_for_serialization)
    return [serialize(pod) for pod in pods]


MAX_NODES_READ: Final = 20
"""Nodes one ``status`` reads to say why replicas are not Ready (the rest are named without a state)."""


def node_states(
    api: k8s.ApiClient,
    names: Iterable[str],
    *,
    retry: RetryPolicy = DEFAULT_RETRY,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> dict[str, str]:
    """``readiness.node_state`` of each node in ``names`` (at most :data:`MAX_NODES_READ`), one GET
    each. Best effort, as the notes they explain: a node that is gone, or that RBAC does not let the
    caller read (nodes are cluster-wide), is left out; any other failure is logged and ends the reads."""
    states: dict[str, str] = {}
    read = cast(Callable[..., Any], k8s.CoreV1Api(api).read_node)
    for name in list(names)[:MAX_NODES_READ]:
        op = KubeOperation("get", "nodes", None, name)
        try:
            found = call(
                read,
                name,
                _request_timeout=request_timeout,
                op=op,
                retry=retry,
                host=str(api.configuration.host),
            )
        except (KubeNotFound, KubeForbidden):
            continue
        except KubeError as exc:
            log.warning("node %s not read: %s", name, exc)
            break
        states[name] = node_state(_serialized(api, [found])[0])
    return states


def list_replicas(
    api: k8s.ApiClient, namespace: str, app_id: AppId, *, retry: RetryPolicy = DEFAULT_RETRY
) -> list[replica_pb.Replica]:
    """Flyte's ``GetReplicas``: the service's pods, only the latest ready revision's once there is
    one; a missing KService selects on the service name alone, as upstream does."""
    found = find_replicas(api, namespace=namespace, kservice=kservice_name_of(app_id), retry=retry)
    ident = identifier(app_id)
    return [pod_to_replica(pod, ident) for pod in _serialized(api, found.pods)]


# --- snapshots for `flyte-apps status` -------------------------------------------------------


def snapshot_app(
    api: k8s.ApiClient,
    settings: AppSettings,
    app_id: AppId,
    *,
    now: datetime | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> AppSnapshot:
    """One app with its replicas (three reads: KService, Revision, pods)."""
    ksvc = get_kservice(api, settings.namespace, app_id, retry=retry)
    app = to_app(api, settings, ksvc, now=now, retry=retry)
    name = kservice_name_of(app_id)
    pods = _pod_dicts(api, settings.namespace, f"{c.LABEL_KNATIVE_SERVICE}={name}", retry)
    return _snapshot(app, ksvc, pods)


def snapshot_apps(
    api: k8s.ApiClient,
    settings: AppSettings,
    *,
    project: str = "",
    domain: str = "",
    now: datetime | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> list[AppSnapshot]:
    """Every app (filtered by project/domain) with its replicas, sorted by identity.

    One paged LIST per kind serves all apps: KServices, then Revisions (replica counts by name) and
    pods (grouped by Knative's service label), instead of a Revision GET and a pod LIST per app.
    """
    items, _ = list_kservices(
        api, settings.namespace, label_selector=app_selector(project, domain), retry=retry
    )
    if not items:
        return []
    counts = _revision_counts(api, settings.namespace, retry)
    pods = _pods_by_service(_listed_pod_dicts(api, settings.namespace, c.LABEL_KNATIVE_SERVICE, retry))
    now = now or datetime.now(UTC)
    snapshots = []
    for ksvc in items:
        if counts is None:
            replicas = current_replicas(api, settings.namespace, ksvc, retry=retry)
        else:
            revision = latest_ready_revision(ksvc)
            replicas = counts.get(revision, 0) if revision is not None else 0
        try:
            app = kservice_to_app(
                ksvc,
                base_domain=settings.base_domain,
                scheme=settings.scheme,
                ingress_apps_port=settings.ingress_apps_port,
                current_replicas=replicas,
                now=now,
            )
        except AppConversionError as exc:
            log.warning("skipping KService: %s", exc)
            continue
        name = str((ksvc.get("metadata") or {}).get("name") or "")
        snapshots.append(_snapshot(app, ksvc, pods.get(name, [])))
    return sorted(snapshots, key=lambda s: _sort_key(s.app.metadata.id))


def _revision_counts(api: k8s.ApiClient, namespace: str, retry: RetryPolicy) -> dict[str, int] | None:
    """Replica counts of every Revision from one LIST, or None where RBAC forbids listing Revisions
    (then each app's Revision is read on its own, as upstream does)."""
    try:
        counts, _ = list_revision_replicas(api, namespace, retry=retry)
    except KubeForbidden as exc:
        log.warning("%s; reading each app's Revision instead (grant list on %s to avoid it)", exc, REVISIONS)
        return None
    return counts


def _pods_by_service(pods: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Pods grouped by their ``serving.knative.dev/service`` label (each app looks at its own only)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        service = ((pod.get("metadata") or {}).get("labels") or {}).get(c.LABEL_KNATIVE_SERVICE)
        if service:
            grouped.setdefault(str(service), []).append(pod)
    return grouped


def _snapshot(app: app_pb.App, ksvc: Mapping[str, Any], pods: list[dict[str, Any]]) -> AppSnapshot:
    """The app with its replicas: the pods upstream's ``GetReplicas`` selects, and their replicas."""
    name = str((ksvc.get("metadata") or {}).get("name") or "")
    selected = replica_pods(pods, kservice=name, latest_ready_revision=latest_ready_revision(ksvc))
    return AppSnapshot(
        app=app,
        replicas=tuple(pod_to_replica(pod, app.metadata.id) for pod in selected),
        kservice=ksvc,
        pods=tuple(selected),
    )


def _sort_key(ident: app_pb.Identifier) -> tuple[str, str, str]:
    return (ident.project, ident.domain, ident.name)
