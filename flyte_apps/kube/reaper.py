"""Delete the old revisions of a stopped app once Knative has made the stop revision ready.

Stopping an app patches its KService so Knative creates a new, scaled-to-zero "stop"
revision; the previous revisions keep running pods until someone deletes them.  Flyte's
upstream Go code deletes ``status.latestReadyRevisionName`` right after patching, but at that
moment Knative may already have reconciled, so that name can be the *new* stop revision and
the old one survives.  This module waits until Knative has observed the patched generation and
the stop revision is both the latest created and the latest ready one, and only then deletes
every *other* revision that still has pods. An app created stopped (its KService at generation 1)
has one revision, which Knative names from the KService's name and generation (or the template's own
name): when no other revision of the service holds pods, there is nothing to delete and nothing to
wait for, not even for Knative to create it.  It never deletes the stop revision, and it never waits
longer than its bound.

``stop`` is what both RevisionReapers (the stack-config program's dynamic resource and the component
package's own resource) run: the wait-then-delete rule on a cluster target the adapter resolved by its
own credential policy, failing as one line naming the KService (``flyte_apps.core.reaping`` has the
rest of their shared core).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from flyte_apps.core.constants import (
    KNATIVE_GROUP,
    KNATIVE_VERSION,
    KSERVICE_PLURAL,
    LABEL_KNATIVE_REVISION,
    LABEL_KNATIVE_SERVICE,
    REVISION_PLURAL,
)
from flyte_apps.core.naming import revision_name
from flyte_apps.core.reaping import StopInputs, stop_failure
from flyte_apps.kube.api import (
    DEFAULT_REQUEST_TIMEOUT,
    delete_custom_object,
    get_knative_object,
    list_pods,
)
from flyte_apps.kube.errors import KubeError, KubeNotFound
from flyte_apps.kube.retry import DEFAULT_RETRY, RetryPolicy
from flyte_apps.kube.target import KubeTarget, build_api_client

FIRST_POLL_S = 0.05
"""Seconds before the first read again of a KService Knative has not settled (doubling up to the poll
interval)."""
FIRST_GENERATION = 1
"""``metadata.generation`` of an object whose spec has never changed since it was created."""

_MIN_REQUEST_TIMEOUT = 1.0
"""Seconds; even near the deadline a request gets this long, so it can still answer."""


class ReaperTimeout(KubeError):
    """Knative did not make the stop revision ready within the bound."""


@dataclass(frozen=True)
class ReapResult:
    """What the reaper did: revisions it deleted (sorted) and the stop revision it kept."""

    deleted: tuple[str, ...]
    stop_revision: str | None


@dataclass(frozen=True)
class _Observed:
    """The parts of a KService's status that say whether Knative has settled."""

    generation: int | None
    observed_generation: int | None
    latest_created: str | None
    latest_ready: str | None
    name: str
    template_name: str | None

    @classmethod
    def of(cls, kservice: Mapping[str, Any]) -> _Observed:
        metadata = kservice.get("metadata") or {}
        status = kservice.get("status") or {}
        template_metadata = ((kservice.get("spec") or {}).get("template") or {}).get("metadata") or {}
        return cls(
            generation=_int_or_none(metadata.get("generation")),
            observed_generation=_int_or_none(status.get("observedGeneration")),
            latest_created=status.get("latestCreatedRevisionName") or None,
            latest_ready=status.get("latestReadyRevisionName") or None,
            name=str(metadata.get("name") or ""),
            template_name=template_metadata.get("name") or None,
        )

    @property
    def stop_revision(self) -> str | None:
        """The stop revision, once Knative has reconciled the current spec and it is ready."""
        settled = (
            self.generation is not None
            and self.observed_generation == self.generation
            and self.latest_created is not None
            and self.latest_ready == self.latest_created
        )
        return self.latest_ready if settled else None

    @property
    def first_revision(self) -> str | None:
        """The only revision of a KService whose spec never changed (generation 1: an app created
        stopped), created or not, ready or not: the one Knative created, or else the name it gives it
        (the template's name, or its Configuration's name, which is the KService's, and generation 1).
        None for any other KService."""
        if self.generation != FIRST_GENERATION:
            return None
        if self.observed_generation == FIRST_GENERATION and self.latest_created is not None:
            return self.latest_created
        return self.template_name or revision_name(self.name, FIRST_GENERATION)

    def describe(self) -> str:
        return (
            f"generation {_show(self.generation)}, observedGeneration {_show(self.observed_generation)}, "
            f"latestCreatedRevisionName {_show(self.latest_created)}, "
            f"latestReadyRevisionName {_show(self.latest_ready)}"
        )


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _show(value: object) -> str:
    return "<none>" if value is None else str(value)


def _seconds(value: float) -> str:
    return f"{value:g}s"


def reap_stopped_revisions(
    api: k8s.ApiClient,
    *,
    namespace: str,
    kservice: str,
    timeout_seconds: float,
    poll_interval: float = 1.0,
    first_poll: float = FIRST_POLL_S,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> ReapResult:
    """Wait (at most ``timeout_seconds``) for the stop revision, then delete older live ones. The
    KService is read again after ``first_poll`` seconds, then after twice as long each time, at most
    ``poll_interval``: Knative settles a stop in a fraction of a second on an idle cluster.

    A missing KService is success with nothing deleted.  Revisions are "live" when pods carry
    their ``serving.knative.dev/revision`` label; revisions without pods are left to Knative's
    own garbage collection.  A revision that vanishes before we delete it counts as done but is
    not reported in ``deleted``.  Raises :class:`ReaperTimeout` if Knative does not settle in
    time, and :class:`KubeError` (e.g. :class:`KubeForbidden`) for API failures.
    """
    deadline = clock() + timeout_seconds
    wait = min(first_poll, poll_interval)

    def request_timeout() -> float:
        """Keep polling requests near the deadline from overrunning it by much."""
        return max(_MIN_REQUEST_TIMEOUT, min(DEFAULT_REQUEST_TIMEOUT, deadline - clock()))

    while True:
        try:
            kservice_object = get_knative_object(
                api,
                plural=KSERVICE_PLURAL,
                namespace=namespace,
                name=kservice,
                retry=retry,
                request_timeout=request_timeout(),
            )
        except KubeNotFound:
            return ReapResult(deleted=(), stop_revision=None)
        observed = _Observed.of(kservice_object)
        stop_revision = observed.stop_revision
        if stop_revision is not None:
            break
        first = observed.first_revision
        if first is not None and not live_revisions(api, namespace, kservice, retry) - {first}:
            # Created stopped, and no other revision holds pods: nothing to delete, so nothing to
            # wait for (Knative creates a never-started app's revision and makes it Ready in its own
            # time).
            return ReapResult(deleted=(), stop_revision=first)
        remaining = deadline - clock()
        if remaining <= 0:
            msg = (
                f"timed out after {_seconds(timeout_seconds)} waiting for Knative to make the stop "
                f"revision of KService {namespace}/{kservice} ready: {observed.describe()}; the stopped "
                "KService is applied, run `pulumi up` again to delete the old revisions"
            )
            raise ReaperTimeout(msg)
        sleep(min(wait, remaining))
        wait = min(2 * wait, poll_interval)

    live = live_revisions(api, namespace, kservice, retry)
    deleted = [
        revision
        for revision in sorted(live - {stop_revision})
        if delete_custom_object(
            api,
            group=KNATIVE_GROUP,
            version=KNATIVE_VERSION,
            plural=REVISION_PLURAL,
            namespace=namespace,
            name=revision,
            retry=retry,
        )
    ]
    return ReapResult(deleted=tuple(deleted), stop_revision=stop_revision)


def live_revisions(api: k8s.ApiClient, namespace: str, kservice: str, retry: RetryPolicy) -> set[str]:
    """The revisions of ``kservice`` that pods carry in their ``serving.knative.dev/revision`` label."""
    pods = list_pods(
        api, namespace=namespace, label_selector=f"{LABEL_KNATIVE_SERVICE}={kservice}", retry=retry
    )
    live: set[str] = set()
    for pod in pods:
        labels = (pod.metadata.labels if pod.metadata is not None else None) or {}
        if labels.get(LABEL_KNATIVE_REVISION):
            live.add(labels[LABEL_KNATIVE_REVISION])
    return live


# --- the stop both RevisionReapers run (their shared core: flyte_apps.core.reaping) ---------------


def stop(target: KubeTarget, inputs: StopInputs) -> ReapResult:
    """Wait for the stop revision of ``inputs``' KService in the cluster ``target`` names (resolved
    as pulumi-kubernetes resolves the stack's settings), then delete the older revisions with pods.
    Any failure raises ``flyte_apps.core.reaping.StopFailed``."""
    try:
        api = build_api_client(stack=target)
        try:
            return reap_stopped_revisions(
                api,
                namespace=inputs.namespace,
                kservice=inputs.kservice,
                timeout_seconds=inputs.timeout_seconds,
            )
        finally:
            api.close()  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise stop_failure(inputs.where, exc) from None
