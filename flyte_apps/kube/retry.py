"""Retries and error rewriting for every Kubernetes API call: the one place either happens.

Transient failures (429, 5xx, dropped connections) are retried here only, with bounded backoff,
never also by urllib3 behind our back (:mod:`flyte_apps.kube.target` turns its retries off), so
the number of attempts and the time spent waiting on a failing cluster stay knowable. Whatever
still fails leaves :func:`call` as a :class:`~flyte_apps.kube.errors.KubeError` naming the
operation and the object (:class:`KubeOperation`). :class:`RetryPolicy` is also the backoff the
watch hub reconnects with.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar, cast

import urllib3
from kubernetes.client.exceptions import ApiException

from flyte_apps.core.constants import KNATIVE_GROUP
from flyte_apps.kube.errors import (
    KubeApiMissing,
    KubeConflict,
    KubeError,
    KubeForbidden,
    KubeNotFound,
    KubeUnreachable,
)

T = TypeVar("T")

NO_SUCH_RESOURCE_TYPE: Final = "the server could not find the requested resource"
"""The API server's 404 message for a path whose resource type it does not serve at all; a missing
object of a known type says ``<resource> "<name>" not found`` instead."""


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff; ``sleep`` is injectable so tests do not wait."""

    attempts: int = 4
    base_delay: float = 0.2
    max_delay: float = 2.0
    max_retry_after: float = 10.0
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        if self.attempts < 1:
            msg = "RetryPolicy.attempts must be at least 1"
            raise ValueError(msg)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_retry_after))
        return float(min(self.max_delay, self.base_delay * 2 ** (attempt - 1)))


DEFAULT_RETRY: Final = RetryPolicy()


@dataclass(frozen=True)
class KubeOperation:
    """What a call does, for error messages: ``delete revisions.serving.knative.dev flyte/x``."""

    verb: str
    resource: str
    namespace: str | None = None
    name: str | None = None

    @property
    def subject(self) -> str:
        """The object or collection, e.g. ``pods in namespace 'flyte'``."""
        if self.name is not None:
            where = f"{self.namespace}/{self.name}" if self.namespace else self.name
            return f"{self.resource} '{where}'"
        if self.namespace:
            return f"{self.resource} in namespace '{self.namespace}'"
        return self.resource


_TRANSPORT_ERRORS: Final = (
    urllib3.exceptions.MaxRetryError,
    urllib3.exceptions.ProtocolError,
    urllib3.exceptions.TimeoutError,
    ConnectionError,
    TimeoutError,
)


def _retryable(status: int | None) -> bool:
    return status is not None and (status == 429 or status >= 500)


def _server_message(exc: ApiException) -> str:
    """The ``Status.message`` of an API error, else a short form of whatever came back."""
    body = exc.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body:
        try:
            parsed = json.loads(body)
        except ValueError:
            return body.strip()[:300]
        if isinstance(parsed, dict) and parsed.get("message"):
            return str(parsed["message"])
    return str(exc.reason or "no message")


def _retry_after(exc: ApiException) -> float | None:
    headers = exc.headers
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None  # HTTP-date form: fall back to our own backoff


def _transport_reason(exc: BaseException) -> str:
    """Why the connection failed, without urllib3's object reprs."""
    reason: object = exc
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        reason = exc.reason
    text = str(reason)
    if text.startswith("<") and ">: " in text:
        text = text.split(">: ", 1)[1]
    return text or type(reason).__name__


def _api_error(exc: ApiException, op: KubeOperation, host: str, attempts: int) -> KubeError:
    status = cast(int | None, exc.status)
    message = _server_message(exc)
    if status == 403:
        scope = f"in namespace '{op.namespace}'" if op.namespace else "at cluster scope"
        return KubeForbidden(
            f"forbidden: RBAC must allow verb '{op.verb}' on '{op.resource}' {scope} ({message})",
            status=status,
        )
    if status == 404 and message == NO_SUCH_RESOURCE_TYPE:
        return KubeApiMissing(missing_api_message(op.resource), status=status)
    if status == 404:
        return KubeNotFound(f"{op.subject} not found ({message})", status=status)
    if status == 409:
        return KubeConflict(f"cannot {op.verb} {op.subject}: conflict ({message})", status=status)
    if status == 401:
        return KubeError(
            f"unauthorized: the Kubernetes API at {host} rejected the credentials while trying "
            f"to {op.verb} {op.subject} ({message}); check the kubeconfig's user",
            status=status,
        )
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    reason = f" {exc.reason}" if exc.reason else ""
    return KubeError(
        f"cannot {op.verb} {op.subject}: HTTP {status}{reason}{tries} ({message})", status=status
    )


def missing_api_message(resource: str) -> str:
    """What to tell the user when the cluster lacks ``resource``'s API (``services.serving.knative.dev``)."""
    if resource.endswith(f".{KNATIVE_GROUP}"):
        return f"Knative Serving is not installed in this cluster (no {resource})"
    return f"the cluster has no {resource} API (is its CustomResourceDefinition installed?)"


def _host_of(fn: Callable[..., Any]) -> str:
    api_client = getattr(getattr(fn, "__self__", None), "api_client", None)
    configuration = getattr(api_client, "configuration", None)
    return str(getattr(configuration, "host", "") or "<unknown host>")


def call(
    fn: Callable[..., T],
    *args: Any,
    op: KubeOperation,
    retry: RetryPolicy = DEFAULT_RETRY,
    host: str | None = None,
    **kwargs: Any,
) -> T:
    """Call a ``kubernetes`` API method with our retries and error rewriting.

    Retries HTTP 429 (honouring a numeric ``Retry-After``, capped) and 5xx, and transport
    errors, up to ``retry.attempts`` in total; every other HTTP error is raised at once as a
    :class:`KubeError` subclass.  ``op`` only feeds the messages.
    """
    where = host or _host_of(fn)
    for attempt in range(1, retry.attempts + 1):
        try:
            return fn(*args, **kwargs)
        except ApiException as exc:
            if not _retryable(exc.status) or attempt == retry.attempts:
                raise _api_error(exc, op, where, attempt) from exc
            delay = retry.delay(attempt, _retry_after(exc) if exc.status == 429 else None)
        except _TRANSPORT_ERRORS as exc:
            if attempt == retry.attempts:
                msg = (
                    f"cannot reach the Kubernetes API at {where}: {_transport_reason(exc)} "
                    f"(while trying to {op.verb} {op.subject}; {attempt} attempts)"
                )
                raise KubeUnreachable(msg) from exc
            delay = retry.delay(attempt)
        retry.sleep(delay)
    msg = "unreachable: the loop returns or raises"
    raise AssertionError(msg)  # pragma: no cover
