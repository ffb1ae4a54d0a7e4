"""Knative DomainMappings in the apps' namespace, for ``flyte-apps status`` (custom URLs, and a mapping
that exposes a stopped app). What they mean is the pure ``flyte_apps.core.domain_status``.

A cluster without Knative's DomainMapping API has no mappings. Where RBAC forbids listing them,
``status`` still shows the apps and says that their custom domains were not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from flyte_apps.core import constants as c
from flyte_apps.kube.api import list_custom_objects
from flyte_apps.kube.errors import KubeApiMissing, KubeForbidden, KubeNotFound
from flyte_apps.kube.retry import DEFAULT_RETRY, RetryPolicy


@dataclass(frozen=True)
class MappingList:
    """The namespace's DomainMappings, or why they could not be read (``items`` is then empty)."""

    items: tuple[dict[str, Any], ...] = ()
    unread: str | None = None


def list_domain_mappings(
    api: k8s.ApiClient, namespace: str, *, retry: RetryPolicy = DEFAULT_RETRY
) -> MappingList:
    """Every DomainMapping in ``namespace`` (following ``continue``)."""
    try:
        items = list_custom_objects(
            api,
            group=c.KNATIVE_GROUP,
            version=c.DOMAIN_MAPPING_VERSION,
            plural=c.DOMAIN_MAPPING_PLURAL,
            namespace=namespace,
            retry=retry,
        )
    except (KubeApiMissing, KubeNotFound):
        return MappingList()  # no DomainMapping API (or namespace): no custom domains
    except KubeForbidden as exc:
        return MappingList(unread=str(exc))
    return MappingList(items=tuple(items))
