"""Typed helpers for the reads and deletes the tool makes: custom objects, Knative objects, pods.

Each helper is one ``kubernetes`` API method behind :func:`~flyte_apps.kube.retry.call` (retries,
errors naming the object), with a per-request timeout so a hung API server cannot hang
``pulumi up``, and with lists that follow ``continue`` tokens page by page. Deletes treat 404 as
done, so deleting twice is not an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final, TypeVar, cast

from kubernetes import client as k8s

from flyte_apps.core.constants import KNATIVE_GROUP, KNATIVE_VERSION
from flyte_apps.kube.errors import KubeNotFound
from flyte_apps.kube.retry import DEFAULT_RETRY, KubeOperation, RetryPolicy, call

T = TypeVar("T")

DEFAULT_REQUEST_TIMEOUT: Final = 30.0
"""Seconds one HTTP request may take; a hung API server must not hang ``pulumi up``."""
DEFAULT_PAGE_SIZE: Final = 500
"""List page size; bounds memory and server load in namespaces with many pods."""


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
    return cast(dict[str, Any], result)


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


def _pages(fetch: Callable[[str | None], tuple[list[T], str | None]]) -> Iterator[T]:
    token: str | None = None
    while True:
        items, token = fetch(token)
        yield from items
        if not token:
            return


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
        data = cast(dict[str, Any], page)
        return list(data.get("items") or []), (data.get("metadata") or {}).get("continue")

    return list(_pages(fetch))


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
    return call(
        k8s.CoreV1Api(api).read_namespaced_pod,
        name,
        namespace,
        _request_timeout=request_timeout,
        op=KubeOperation("get", "pods", namespace, name),
        retry=retry,
        host=_host(api),
    )


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
        meta = page.metadata
        # ``var_continue`` in the pydantic-based client, ``_continue`` in older generations.
        token = getattr(meta, "var_continue", None) or getattr(meta, "_continue", None)
        return list(page.items or []), token

    return list(_pages(fetch))


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
