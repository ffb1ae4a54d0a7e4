"""Kubernetes access for flyte-apps: finding the cluster, retrying, and explaining failures.

Everything that talks to the Kubernetes API outside of pulumi-kubernetes goes through here so
that (1) we reach the *same* cluster pulumi-kubernetes does, using its lookup order; (2)
transient failures (429, 5xx, dropped connections) are retried in one place only, here, with
bounded backoff, never also by urllib3 behind our back; and (3) every failure reaches the user
as one :class:`KubeError` whose message names the operation, the object and what to fix,
instead of a raw ``ApiException`` dump (which also prints response headers).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar, cast

import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from flyte_apps.core.constants import KNATIVE_GROUP, KNATIVE_VERSION

T = TypeVar("T")

DEFAULT_KUBECONFIG: Final = Path(".kube") / "config"
"""Relative to the home directory, as kubectl and pulumi-kubernetes use it."""
DEFAULT_REQUEST_TIMEOUT: Final = 30.0
"""Seconds one HTTP request may take; a hung API server must not hang ``pulumi up``."""
CONNECTION_POOL_SIZE: Final = 64
"""HTTP connections kept per client (log follow streams, watch, API calls at once)."""
DEFAULT_PAGE_SIZE: Final = 500
"""List page size; bounds memory and server load in namespaces with many pods."""


# --- errors ----------------------------------------------------------------------------------


class KubeError(Exception):
    """Any failure talking to Kubernetes, already phrased for the person running the tool."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class KubeNotFound(KubeError):
    """The object (or its namespace) does not exist: HTTP 404."""


class KubeForbidden(KubeError):
    """RBAC denied the request: HTTP 403."""


class KubeConflict(KubeError):
    """HTTP 409: already exists, or a write raced another writer; never retried blindly."""


class KubeUnreachable(KubeError):
    """No HTTP answer at all: refused, reset, timed out (after our retries)."""


class KubeConfigError(KubeError):
    """No usable cluster configuration: nothing found, or what was found does not load."""


# --- target resolution -------------------------------------------------------------------------


@dataclass(frozen=True)
class KubeTarget:
    """Which cluster to talk to, as pulumi-kubernetes is told it.

    ``kubeconfig`` is a file path *or* the kubeconfig content itself (YAML or JSON), exactly
    like the ``kubernetes:kubeconfig`` stack setting; ``context`` picks a context in it.
    """

    kubeconfig: str | None = None
    context: str | None = None

    @property
    def kubeconfig_is_content(self) -> bool:
        """Content, not a path: paths have no newline and do not start a YAML/JSON document."""
        value = self.kubeconfig or ""
        stripped = value.lstrip()
        return "\n" in value or stripped.startswith(("{", "apiVersion"))


def _home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME") or env.get("USERPROFILE")
    return Path(home) if home else Path.home()


def _resolve(
    explicit: KubeTarget | None, stack: KubeTarget | None, env: Mapping[str, str]
) -> tuple[KubeTarget, list[str]]:
    """Resolve a target and describe every source consulted (for "nothing found" errors)."""
    tried: list[str] = []
    explicit = explicit or KubeTarget()
    stack = stack or KubeTarget()
    if explicit.kubeconfig:
        # A context from the stack belongs to the stack's kubeconfig, not to this one.
        return KubeTarget(explicit.kubeconfig, explicit.context), tried
    tried.append("an explicit kubeconfig (none given)")
    context = explicit.context or stack.context
    if stack.kubeconfig:
        return KubeTarget(stack.kubeconfig, context), tried
    tried.append("the stack setting kubernetes:kubeconfig (unset)")
    raw = env.get("KUBECONFIG", "")
    paths = [p for p in raw.split(os.pathsep) if p]
    for path in paths:
        if Path(path).expanduser().is_file():
            return KubeTarget(str(Path(path).expanduser()), context), tried
    tried.append(f"KUBECONFIG ({', '.join(paths)}: no such file)" if paths else "KUBECONFIG (unset)")
    default = _home(env) / DEFAULT_KUBECONFIG
    if default.is_file():
        return KubeTarget(str(default), context), tried
    tried.append(f"{default} (no such file)")
    return KubeTarget(None, context), tried


def resolve_target(
    explicit: KubeTarget | None, stack: KubeTarget | None, env: Mapping[str, str]
) -> KubeTarget:
    """Pick the kubeconfig and context the way pulumi-kubernetes does.

    Order: the explicit kubeconfig (with its own context), the stack's ``kubernetes:kubeconfig``
    / ``kubernetes:context``, the first existing file in ``KUBECONFIG`` (a ``os.pathsep`` list),
    ``~/.kube/config``.  An explicit context overrides the stack's.  A result without
    ``kubeconfig`` means "use the in-cluster service account".
    """
    return _resolve(explicit, stack, env)[0]


def _new_configuration() -> k8s.Configuration:
    """A fresh configuration (never the process-wide default) without urllib3 retries."""
    configuration = k8s.Configuration()
    # Our ``call`` is the only retry layer: urllib3 retrying too would multiply attempts and
    # hide how long a failing cluster was waited for.
    configuration.retries = urllib3.util.Retry(total=0, redirect=False)
    # `logs -f` holds one streaming connection per replica; the default pool (5 per CPU) would
    # make urllib3 warn and discard connections when following more replicas than that.
    configuration.connection_pool_maxsize = CONNECTION_POOL_SIZE
    return configuration


def build_api_client(
    target: KubeTarget | None = None,
    env: Mapping[str, str] | None = None,
    *,
    stack: KubeTarget | None = None,
) -> k8s.ApiClient:
    """A new ``ApiClient`` for ``target`` (then ``stack``, env, home, in-cluster).

    Raises :class:`KubeConfigError` naming every source tried when none yields a cluster.
    The kubeconfig is never written back (``persist_config=False``) and the ``kubernetes``
    package's global default configuration is left untouched.
    """
    environment: Mapping[str, str] = os.environ if env is None else env
    resolved, tried = _resolve(target, stack, environment)
    configuration = _new_configuration()
    if resolved.kubeconfig is None:
        try:
            load_incluster = cast(Callable[..., None], k8s_config.load_incluster_config)
            load_incluster(client_configuration=configuration)
        except ConfigException as exc:
            tried.append(f"the in-cluster service account ({exc})")
            msg = "no Kubernetes configuration found; tried " + "; ".join(tried)
            raise KubeConfigError(msg) from exc
        return k8s.ApiClient(configuration)
    loaded: dict[str, Any] | None = None
    path: Path | None = None
    if resolved.kubeconfig_is_content:
        source = "the kubeconfig content"
        try:
            content = yaml.safe_load(resolved.kubeconfig)
        except yaml.YAMLError as exc:
            # Only the position and the parser's complaint: str(exc) quotes the offending line,
            # which may hold a token.
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None)
            msg = f"{source} is not valid YAML/JSON{where}" + (f": {problem}" if problem else "")
            raise KubeConfigError(msg) from exc
        if not isinstance(content, dict):
            msg = f"{source} is not a YAML/JSON mapping"
            raise KubeConfigError(msg)
        loaded = content
    else:
        path = Path(resolved.kubeconfig).expanduser()
        source = f"kubeconfig file {path}"
        if not path.is_file():
            msg = f"{source} does not exist"
            raise KubeConfigError(msg)
    # The loaders are untyped in the ``kubernetes`` package; their contract is documented.
    from_dict = cast(Callable[..., k8s.ApiClient], k8s_config.new_client_from_config_dict)
    from_file = cast(Callable[..., k8s.ApiClient], k8s_config.new_client_from_config)
    try:
        if loaded is not None:
            return from_dict(
                config_dict=loaded,
                context=resolved.context,
                persist_config=False,
                client_configuration=configuration,
            )
        return from_file(
            config_file=str(path),
            context=resolved.context,
            persist_config=False,
            client_configuration=configuration,
        )
    except (ConfigException, OSError, ValueError, TypeError) as exc:
        context = f" (context {resolved.context!r})" if resolved.context else ""
        msg = f"cannot load {source}{context}: {exc}"
        raise KubeConfigError(msg) from exc


# --- retries and error rewriting ---------------------------------------------------------------


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


def custom_resource(group: str, plural: str) -> str:
    """``plural.group``, the name RBAC rules and API errors use for a resource."""
    return f"{plural}.{group}" if group else plural


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


# --- typed helpers ---------------------------------------------------------------------------


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
