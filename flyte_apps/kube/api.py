"""Typed helpers for the reads and deletes the tool makes: custom objects, Knative objects, pods.

Each helper is one ``kubernetes`` API method behind :func:`~flyte_apps.kube.retry.call` (retries,
errors naming the object), with a per-request timeout so a hung API server cannot hang
``pulumi up``, and with lists that follow ``continue`` tokens page by page. Deletes treat 404 as
done, so deleting twice is not an error. Every answer is checked at the edge: an object that is not
a JSON object, a list page without a list of objects, a ``continue`` token that repeats or a list
longer than :data:`MAX_LIST_PAGES` pages is a
:class:`~flyte_apps.kube.errors.KubeBadResponse` naming the call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final, TypeVar, cast

from kubernetes import client as k8s

from flyte_apps.core.bounds import shown
from flyte_apps.core.constants import KNATIVE_GROUP, KNATIVE_VERSION
from flyte_apps.kube.errors import KubeNotFound
from flyte_apps.kube.retry import (
    DEFAULT_RETRY,
    KubeOperation,
    RetryPolicy,
    bad_response,
    call,
    describe,
    expect_object,
)

T = TypeVar("T")

DEFAULT_REQUEST_TIMEOUT: Final = 30.0
"""Seconds one HTTP request may take; a hung API server must not hang ``pulumi up``."""
DEFAULT_PAGE_SIZE: Final = 500
"""List page size; bounds memory and server load in namespaces with many pods."""
MAX_LIST_PAGES: Final = 200
"""Pages one list may take (100,000 objects at :data:`DEFAULT_PAGE_SIZE`): a server that hands out a
new ``continue`` token on every page must not keep a command listing forever."""


def custom_resource(group: str, plural: str) -> str:
    """``plural.group``, the name RBAC rules and API errors use for a resource."""
    return f"{plural}.{group}" if group else plural


def _host(api: k8s.ApiClient) -> str:
    return str(api.configuration.host)


def get_custom_object(
    api: k8s.ApiClient,
    *,
    group: str,
    version: str,
    plural: str,
    namespace: str,
    name: str,
    retry: RetryPolicy = DEFAULT_RETRY,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> dict[str, Any]:
    """Read one namespaced custom object; :class:`KubeNotFound` if it does not exist."""
    op = KubeOperation("get", custom_resource(group, plural), namespace, name)
    result = call(
        k8s.CustomObjectsApi(api).get_namespaced_custom_object,
        group,
        version,
        namespace,
        plural,
        name,
        _request_timeout=request_timeout,
        op=op,
        retry=retry,
        host=_host(api),
    )
    return expect_object(result, op, _host(api))


def list_page(page: object, op: KubeOperation, host: str) -> tuple[list[dict[str, Any]], str, str]:
    """A list answer as ``(items, continue token, resourceVersion)``, checked: a JSON object whose
    ``items`` is a list of JSON objects and whose ``metadata`` is an object; else
    :class:`KubeBadResponse` naming the list and what was wrong."""
    data = expect_object(page, op, host)
    items = _or_empty(data.get("items"), [])
    metadata = _or_empty(data.get("metadata"), {})
    if not isinstance(items, list):
        raise bad_response(op, host, f"'items' is {describe(items)}, not a list")
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(_or_empty(item.get("metadata"), {}), dict):
            raise bad_response(op, host, f"item {index} is {describe(item)}, not a Kubernetes object")
    if not isinstance(metadata, dict):
        raise bad_response(op, host, f"'metadata' is {describe(metadata)}, not an object")
    token, version = metadata.get("continue") or "", metadata.get("resourceVersion") or ""
    if not isinstance(token, str) or not isinstance(version, str):
        raise bad_response(op, host, f"list metadata {describe(metadata)} has a token that is not text")
    return cast(list[dict[str, Any]], items), token, version


def _or_empty(value: object, empty: object) -> object:
    """``value``, or ``empty`` for an absent field (JSON null); a falsy value of the wrong type
    (``[]`` for an object) stays, to be refused."""
    return empty if value is None else value


def check_token(seen: set[str], token: str | None, op: KubeOperation, host: str) -> str | None:
    """``token`` (None or empty: the last page), remembered in ``seen``; a token the list already
    answered is :class:`KubeBadResponse` (following it would loop forever)."""
    if not token:
        return None
    if token in seen:
        raise bad_response(op, host, f"the continue token {shown(token)} repeats (the list would never end)")
    seen.add(token)
    return token


def get_knative_object(
    api: k8s.ApiClient,
    *,
    plural: str,
    namespace: str,
    name: str,
    retry: RetryPolicy = DEFAULT_RETRY,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> dict[str, Any]:
    """A Knative Serving v1 object (a KService or a Revision); :class:`KubeNotFound` if absent."""
    return get_custom_object(
        api,
        group=KNATIVE_GROUP,
        version=KNATIVE_VERSION,
        plural=plural,
        namespace=namespace,
        name=name,
        retry=retry,
        request_timeout=request_timeout,
    )


def follow_pages(
    fetch: Callable[[str | None], tuple[list[T], str | None]], op: KubeOperation, host: str
) -> Iterator[T]:
    """Every item of a paged LIST: ``fetch(token)`` answers one page and the next ``continue`` token;
    a token that repeats, or more than :data:`MAX_LIST_PAGES` pages, is :class:`KubeBadResponse`
    (:func:`check_token`), never an endless loop."""
    token: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_LIST_PAGES):
        items, token = fetch(token)
        yield from items
        token = check_token(seen, token, op, host)
        if token is None:
            return
    raise bad_response(
        op, host, f"the list did not end within {MAX_LIST_PAGES} pages (a new continue token on every page)"
    )


def list_custom_objects(
    api: k8s.ApiClient,
    *,
    group: str,
    version: str,
    plural: str,
    namespace: str,
    label_selector: str | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> list[dict[str, Any]]:
    """All custom objects in a namespace matching ``label_selector``, following ``continue``."""
    op = KubeOperation("list", custom_resource(group, plural), namespace)
    method = k8s.CustomObjectsApi(api).list_namespaced_custom_object

    def fetch(token: str | None) -> tuple[list[dict[str, Any]], str | None]:
        page = call(
            method,
            group,
            version,
            namespace,
            plural,
            label_selector=label_selector,
            limit=page_size,
            _continue=token,
            _request_timeout=request_timeout,
            op=op,
            retry=retry,
            host=_host(api),
        )
        items, token, _ = list_page(page, op, _host(api))
        return items, token

    return list(follow_pages(fetch, op, _host(api)))


def delete_custom_object(
    api: k8s.ApiClient,
    *,
    group: str,
    version: str,
    plural: str,
    namespace: str,
    name: str,
    retry: RetryPolicy = DEFAULT_RETRY,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> bool:
    """Delete one namespaced custom object; False if it was already gone (404 is success)."""
    op = KubeOperation("delete", custom_resource(group, plural), namespace, name)
    try:
        call(
            k8s.CustomObjectsApi(api).delete_namespaced_custom_object,
            group,
            version,
            namespace,
            plural,
            name,
            _request_timeout=request_timeout,
            op=op,
            retry=retry,
            host=_host(api),
        )
    except KubeNotFound:
        return False
    return True


def get_pod(
    api: k8s.ApiClient,
    *,
    namespace: str,
    name: str,
    retry: RetryPolicy = DEFAULT_RETRY,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> k8s.V1Pod:
    """Read one pod; :class:`KubeNotFound` if it does not exist."""
    op = KubeOperation("get", "pods", namespace, name)
    pod = call(
        k8s.CoreV1Api(api).read_namespaced_pod,
        name,
        namespace,
        _request_timeout=request_timeout,
        op=op,
        retry=retry,
        host=_host(api),
    )
    if not isinstance(pod, k8s.V1Pod):
        raise bad_response(op, _host(api), f"expected a pod, got {describe(pod)}")
    return pod


def list_pods(
    api: k8s.ApiClient,
    *,
    namespace: str,
    label_selector: str | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> list[k8s.V1Pod]:
    """All pods in a namespace matching ``label_selector``, following ``continue``."""
    op = KubeOperation("list", "pods", namespace)
    method = k8s.CoreV1Api(api).list_namespaced_pod

    def fetch(token: str | None) -> tuple[list[k8s.V1Pod], str | None]:
        page = call(
            method,
            namespace,
            label_selector=label_selector,
            limit=page_size,
            _continue=token,
            _request_timeout=request_timeout,
            op=op,
            retry=retry,
            host=_host(api),
        )
        if not isinstance(page, k8s.V1PodList):
            raise bad_response(op, _host(api), f"expected a pod list, got {describe(page)}")
        meta = page.metadata
        # ``var_continue`` in the pydantic-based client, ``_continue`` in older generations.
        token = getattr(meta, "var_continue", None) or getattr(meta, "_continue", None)
        return list(page.items or []), token

    return list(follow_pages(fetch, op, _host(api)))


def delete_pod(
    api: k8s.ApiClient,
    *,
    namespace: str,
    name: str,
    retry: RetryPolicy = DEFAULT_RETRY,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> bool:
    """Delete one pod; False if it was already gone (404 is success)."""
    try:
        call(
            k8s.CoreV1Api(api).delete_namespaced_pod,
            name,
            namespace,
            _request_timeout=request_timeout,
            op=KubeOperation("delete", "pods", namespace, name),
            retry=retry,
            host=_host(api),
        )
    except KubeNotFound:
        return False
    return True


def namespace_labels(
    api: k8s.ApiClient,
    name: str,
    *,
    retry: RetryPolicy = DEFAULT_RETRY,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> dict[str, str] | None:
    """A namespace's labels; None if the namespace does not exist."""
    op = KubeOperation("get", "namespaces", None, name)
    try:
        found = call(
            k8s.CoreV1Api(api).read_namespace,
            name,
            _request_timeout=request_timeout,
            op=op,
            retry=retry,
            host=_host(api),
        )
    except KubeNotFound:
        return None
    if not isinstance(found, k8s.V1Namespace):
        raise bad_response(op, _host(api), f"expected a Namespace, got {describe(found)}")
    labels = found.metadata.labels if found.metadata is not None else None
    return {str(key): str(value) for key, value in (labels or {}).items()}


def config_map_data(
    api: k8s.ApiClient,
    *,
    namespace: str,
    name: str,
    retry: RetryPolicy = DEFAULT_RETRY,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> dict[str, str]:
    """A ConfigMap's ``data``; :class:`KubeNotFound` if it does not exist."""
    op = KubeOperation("get", "configmaps", namespace, name)
    found = call(
        k8s.CoreV1Api(api).read_namespaced_config_map,
        name,
        namespace,
        _request_timeout=request_timeout,
        op=op,
        retry=retry,
        host=_host(api),
    )
    if not isinstance(found, k8s.V1ConfigMap):
        raise bad_response(op, _host(api), f"expected a ConfigMap, got {describe(found)}")
    return {str(key): str(value) for key, value in (found.data or {}).items()}
