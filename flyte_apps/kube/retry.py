"""Retries and error rewriting for every Kubernetes API call: the one place either happens.

Transient failures (429, 5xx, dropped connections) are retried here only, with bounded backoff,
never also by urllib3 behind our back (:mod:`flyte_apps.kube.target` turns its retries off), so
the number of attempts and the time spent waiting on a failing cluster stay knowable: a call,
retries included, ends within :attr:`RetryPolicy.timeout` (``--request-timeout``), each HTTP
request getting at most the time that is left. A response of the wrong shape (the client could
not read it) is a :class:`~flyte_apps.kube.errors.KubeBadResponse`, never retried. Whatever
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

from flyte_apps.core.bounds import bounded, shown
from flyte_apps.core.constants import KNATIVE_GROUP
from flyte_apps.core.durations import NANOS_PER_SECOND, format_duration
from flyte_apps.kube.errors import (
    KubeApiMissing,
    KubeBadResponse,
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


DEFAULT_CALL_TIMEOUT: Final = 30.0
"""Seconds one call may take, retries and backoff included (kubectl's ``--request-timeout``)."""


PROXY_HINT: Final = "(is the kubeconfig pointing at a proxy or a login page?)"
"""Said of an answer that is text, not Kubernetes' JSON: the usual cause."""
DEADLINE_SLACK: Final = 0.05
"""Seconds before the deadline at which a request that timed out counts as having used it all up
(its timeout was cut to the time left): the error then says ``--request-timeout`` ran out."""


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff inside a time budget; ``sleep`` is injectable so tests do not wait.

    ``timeout`` bounds each :func:`call`, its retries and backoff included; None leaves a call
    bounded only by its attempts and the per-request timeouts its caller passes."""

    attempts: int = 4
    base_delay: float = 0.2
    max_delay: float = 2.0
    max_retry_after: float = 10.0
    sleep: Callable[[float], None] = time.sleep
    timeout: float | None = DEFAULT_CALL_TIMEOUT
    timeout_source: str = ""
    """Where ``timeout`` comes from, as a user would set it (the CLI's ``--request-timeout``), named in the
    error when it runs out; empty for a bound of the code's own (the RevisionReaper's in ``pulumi up``)."""

    def __post_init__(self) -> None:
        if self.attempts < 1:
            msg = "RetryPolicy.attempts must be at least 1"
            raise ValueError(msg)
        if self.timeout is not None and not self.timeout > 0:
            msg = "RetryPolicy.timeout must be positive (None for no bound)"
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


_SHAPE_ERRORS: Final = (ValueError, TypeError, AttributeError, KeyError)
"""What the client raises reading a body it cannot use (pydantic's ``ValidationError`` is a
``ValueError``); only ever caught around the client's own method, at the edge."""

RequestTimeout = float | tuple[float | None, float | None] | None


def timeout_text(seconds: float) -> str:
    """``30s``, ``1m30s``: a timeout as ``--request-timeout`` spells it."""
    return format_duration(round(seconds * NANOS_PER_SECOND))


def _bounded_timeout(given: RequestTimeout, remaining: float, *, stream: bool) -> RequestTimeout:
    """``given`` (a total, or ``(connect, read)``) capped at ``remaining`` seconds; a stream's read
    timeout is its caller's (a follow may stay silent for hours), only its connect is capped."""
    if isinstance(given, tuple):
        connect, read = given
        capped_read = read if stream else (remaining if read is None else min(read, remaining))
        return (remaining if connect is None else min(connect, remaining), capped_read)
    if stream:
        return (remaining, given)
    return remaining if given is None else min(given, remaining)


def call(
    fn: Callable[..., T],
    *args: Any,
    op: KubeOperation,
    retry: RetryPolicy = DEFAULT_RETRY,
    host: str | None = None,
    stream: bool = False,
    **kwargs: Any,
) -> T:
    """Call a ``kubernetes`` API method with our retries and error rewriting.

    Retries HTTP 429 (honouring a numeric ``Retry-After``, capped) and 5xx, and transport
    errors, up to ``retry.attempts`` in total and within ``retry.timeout`` seconds (each
    attempt's ``_request_timeout`` is capped at the time left; ``stream`` says the call opens a
    stream, whose read timeout is then left alone); every other HTTP error is raised at once as a
    :class:`KubeError` subclass, and a body the client cannot read as :class:`KubeBadResponse`.
    ``op`` only feeds the messages.
    """
    where = host or _host_of(fn)
    deadline = None if retry.timeout is None else time.monotonic() + retry.timeout
    for attempt in range(1, retry.attempts + 1):
        attempt_kwargs = kwargs
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _timed_out(op, where, retry, attempt - 1)
            given = cast(RequestTimeout, kwargs.get("_request_timeout"))
            attempt_kwargs = {**kwargs, "_request_timeout": _bounded_timeout(given, remaining, stream=stream)}
        error: KubeError
        try:
            return fn(*args, **attempt_kwargs)
        except ApiException as exc:
            error = _api_error(exc, op, where, attempt)
            if not _retryable(exc.status) or attempt == retry.attempts:
                raise error from exc
            delay = retry.delay(attempt, _retry_after(exc) if exc.status == 429 else None)
            cause: BaseException = exc
        except _TRANSPORT_ERRORS as exc:
            if deadline is not None and time.monotonic() >= deadline - DEADLINE_SLACK:
                raise _timed_out(op, where, retry, attempt) from exc
            error = KubeUnreachable(
                f"cannot reach the Kubernetes API at {where}: {_transport_reason(exc)} "
                f"(while trying to {op.verb} {op.subject}; {attempt} attempts{_within(retry)})"
            )
            if attempt == retry.attempts:
                raise error from exc
            delay = retry.delay(attempt)
            cause = exc
        except _SHAPE_ERRORS as exc:
            raise bad_response(op, where, bounded(_first_line(exc))) from exc
        if deadline is not None and time.monotonic() + delay >= deadline:
            raise error from cause
        retry.sleep(delay)
    msg = "unreachable: the loop returns or raises"
    raise AssertionError(msg)  # pragma: no cover


def _limit(retry: RetryPolicy) -> str:
    """``--request-timeout 30s``, or ``30s`` for a bound no user set."""
    text = timeout_text(retry.timeout or 0.0)
    return f"{retry.timeout_source} {text}" if retry.timeout_source else text


def _within(retry: RetryPolicy) -> str:
    return "" if retry.timeout is None else f", within {_limit(retry)}"


def _timed_out(op: KubeOperation, host: str, retry: RetryPolicy, attempts: int) -> KubeUnreachable:
    return KubeUnreachable(
        f"no answer from the Kubernetes API at {host} within {_limit(retry)} "
        f"(while trying to {op.verb} {op.subject}; {attempts} attempts)"
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def bad_response(op: KubeOperation, host: str, what: str) -> KubeBadResponse:
    """The error for a response of the wrong shape: which call, which object, what was wrong."""
    return KubeBadResponse(
        f"the Kubernetes API at {host} answered {op.verb} {op.subject} with something that is not "
        f"a Kubernetes response: {what}"
    )


def expect_object(value: object, op: KubeOperation, host: str) -> dict[str, Any]:
    """``value`` if it is a JSON object, else :class:`KubeBadResponse` (the client hands back the
    raw text of a body that is not JSON, and a list where an object belongs)."""
    if isinstance(value, dict):
        return cast(dict[str, Any], value)
    raise bad_response(op, host, f"expected a JSON object, got {describe(value)}")


def describe(value: object) -> str:
    """What a value of the wrong shape is, briefly: ``a JSON array``, ``text '<html>...'``."""
    if isinstance(value, list):
        return "a JSON array"
    if isinstance(value, str | bytes):
        return f"text {shown(value)} {PROXY_HINT}"
    if value is None:
        return "nothing (null)"
    return f"a JSON {type(value).__name__} {shown(value)}"
