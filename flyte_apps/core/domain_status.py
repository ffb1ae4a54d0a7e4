"""Pure: live Knative DomainMappings as ``flyte-apps status`` reads them: which KService each routes to,
the URL it serves, and the drift of a mapping that exposes an app that should not be reachable.

A DomainMapping makes its target reachable from outside even when the KService is cluster-local. The
program maps only public, running apps; an app stopped through Flyte's UI (or a mapping written by hand)
can still leave one in place, and ``status`` says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import bounded
from flyte_apps.core.status import CONDITION_READY, CONDITION_TRUE, Drift, is_stopped

DRIFT_DOMAIN_MAPPING: Final = "domain-mapping"


@dataclass(frozen=True)
class LiveMapping:
    """One DomainMapping that routes to a KService of the namespace."""

    host: str
    kservice: str
    url: str
    """``status.url`` once Knative reconciled it, else the host; with why it is not Ready, if it is not."""


def read_mappings(items: Iterable[Mapping[str, Any]], namespace: str) -> list[LiveMapping]:
    """The mappings in ``items`` whose ``ref`` is a Knative Service of ``namespace`` (a ``ref`` without
    a namespace means the mapping's own), by host."""
    found = []
    for item in items:
        metadata = item.get("metadata") or {}
        ref = (item.get("spec") or {}).get("ref") or {}
        host = metadata.get("name")
        target_namespace = ref.get("namespace") or metadata.get("namespace") or namespace
        api_version = str(ref.get("apiVersion") or "")
        if (
            not isinstance(host, str)
            or ref.get("kind") != c.KSERVICE_KIND
            or not api_version.startswith(f"{c.KNATIVE_GROUP}/")
            or target_namespace != namespace
            or not isinstance(ref.get("name"), str)
        ):
            continue
        found.append(LiveMapping(host=host, kservice=ref["name"], url=_url(host, item.get("status") or {})))
    return sorted(found, key=lambda mapping: mapping.host)


def mappings_of(kservice: str, mappings: Sequence[LiveMapping]) -> list[LiveMapping]:
    return [mapping for mapping in mappings if mapping.kservice == kservice]


def custom_urls(kservice: str, mappings: Sequence[LiveMapping]) -> tuple[str, ...]:
    """What ``status`` shows as the app's custom URLs."""
    return tuple(mapping.url for mapping in mappings_of(kservice, mappings))


def mapping_drift(ksvc: Mapping[str, Any], mappings: Sequence[LiveMapping]) -> list[Drift]:
    """A stopped or cluster-local app that a DomainMapping still routes to is reachable from outside."""
    metadata = ksvc.get("metadata") or {}
    labels = metadata.get("labels") or {}
    stopped = is_stopped(ksvc)
    if not stopped and labels.get(c.LABEL_VISIBILITY) != c.VISIBILITY_CLUSTER_LOCAL:
        return []
    state = "stopped" if stopped else "cluster-local"
    return [
        Drift(
            DRIFT_DOMAIN_MAPPING,
            bounded(
                f"reachable through DomainMapping {mapping.host} although {state}: a DomainMapping exposes "
                "its KService even when it is cluster-local; delete the mapping, or start the app and make "
                "it public"
            ),
        )
        for mapping in mappings_of(str(metadata.get("name") or ""), mappings)
    ]


def missing_mappings(kservice: str, planned: Sequence[str], mappings: Sequence[LiveMapping]) -> list[Drift]:
    """Each host the stack maps to ``kservice`` (``planned``) that no live DomainMapping routes there."""
    live = {mapping.host for mapping in mappings_of(kservice, mappings)}
    return [
        Drift(
            DRIFT_DOMAIN_MAPPING,
            bounded(
                f"DomainMapping {host} is in the stack but not in the cluster: `pulumi up --refresh` creates "
                "it (a plain `pulumi up` does not see an object deleted by hand)"
            ),
        )
        for host in planned
        if host not in live
    ]


def _url(host: str, status: Mapping[str, Any]) -> str:
    given = status.get("url")
    url = given if isinstance(given, str) and given else host
    ready = next(
        (
            cond
            for cond in status.get("conditions") or []
            if isinstance(cond, dict) and cond.get("type") == CONDITION_READY
        ),
        None,
    )
    if ready is not None and ready.get("status") != CONDITION_TRUE:
        why = ready.get("reason") or ready.get("message") or ready.get("status")
        return bounded(f"{url} (not ready: {why})")
    return bounded(str(url))
