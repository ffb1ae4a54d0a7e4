"""Knative Serving's live settings the program checks before it registers anything."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kubernetes import client as k8s

from flyte_apps.kube.api import DEFAULT_REQUEST_TIMEOUT
from flyte_apps.kube.retry import DEFAULT_RETRY, KubeOperation, RetryPolicy, bad_response, call, describe

CONFIG_MAPS: Final = "configmaps"


def config_map_data(
    api: k8s.ApiClient,
    *,
    namespace: str,
    name: str,
    retry: RetryPolicy = DEFAULT_RETRY,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> Mapping[str, str]:
    """A ConfigMap's ``data``; :class:`~flyte_apps.kube.errors.KubeNotFound` if it does not exist."""
    op = KubeOperation("get", CONFIG_MAPS, namespace, name)
    found = call(
        k8s.CoreV1Api(api).read_namespaced_config_map,
        name,
        namespace,
        _request_timeout=request_timeout,
        op=op,
        retry=retry,
        host=str(api.configuration.host),
    )
    if not isinstance(found, k8s.V1ConfigMap):
        raise bad_response(op, str(api.configuration.host), f"expected a ConfigMap, got {describe(found)}")
    data = found.data or {}
    return {str(key): str(value) for key, value in data.items()}
