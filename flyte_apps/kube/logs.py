"""An app's logs from the Kubernetes API, read the way Flyte's ``TailLogs`` reads them.

Upstream behaviour kept (reference (c)14 and 19): replicas are the pods labelled
``serving.knative.dev/service=<KService>``, narrowed to ``serving.knative.dev/revision=<latest
ready revision>`` once the KService has one (``flyte_apps.kube.replicas``, the rule ``status``
uses too); each pod's log is its first container that is not
Knative's ``queue-proxy``, requested with ``timestamps=true``, ``tailLines`` (1000 by default) and
``follow`` only while the pod is Running.

Done better than upstream: a log stream cut mid-way is re-opened from the last printed line
(``sinceTime`` plus the de-duplication of :class:`~flyte_apps.core.logparse.ResumeCursor`) with bounded
retries; following an app picks up replicas that start later and ends by itself once every
replica is gone; a pod named as a replica must belong to the app; a replica whose container has
not started yet is waited for (``--follow``) or reported, not an error.

Nothing here prints: callers iterate :data:`LogEvent` values. Following runs one reader thread per
replica; closing the iterator (or Ctrl-C in the consuming thread) stops and unblocks them all.
"""

from __future__ import annotations

import contextlib
import http.client
import queue
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, cast

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from flyte_apps.core import constants as c
from flyte_apps.core.config.models import AppId
from flyte_apps.core.logparse import LineBuffer, LogLine, ResumeCursor, parse_line
from flyte_apps.core.naming import kservice_name
from flyte_apps.kube.api import DEFAULT_REQUEST_TIMEOUT, get_pod
from flyte_apps.kube.errors import KubeError, KubeNotFound, KubeUnreachable
from flyte_apps.kube.replicas import Replicas, find_replicas
from flyte_apps.kube.retry import DEFAULT_RETRY, KubeOperation, RetryPolicy, call

DEFAULT_TAIL_LINES: Final = 1000
"""Upstream's ``defaultInitialLines``: how much history a stream starts with."""
DEFAULT_POLL_INTERVAL: Final = 1.0
"""Seconds between looks for new replicas while following an app."""

PHASE_PENDING: Final = "Pending"
PHASE_RUNNING: Final = "Running"
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})

_LOG_PATH: Final = "/api/v1/namespaces/{namespace}/pods/{name}/log"
_READ_SIZE: Final = 64 * 1024
_QUEUE_SIZE: Final = 10_000
"""Lines buffered between the reader threads and a slow consumer before readers wait."""
_PUT_SLICE: Final = 0.1
_WAIT_SLICE: Final = 0.2
"""Longest the consuming thread blocks at once: Ctrl-C delivered to a reader thread is only
acted on by the main thread when it wakes up."""
_JOIN_BUDGET: Final = 2.0
"""Seconds ``close`` waits in total for reader threads; they are daemons, so none can hang exit."""
_STREAM_ERRORS: Final = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)
"""What reading a broken or cut stream raises (``ProtocolError`` for a cut chunked body)."""


# --- errors --------------------------------------------------------------------------------------


class AppNotFound(KubeNotFound):
    """Neither the app's KService nor any pod of it exists."""


class ReplicaNotFound(KubeNotFound):
    """The pod named as a replica does not exist, or belongs to another app."""


class NoUserContainer(KubeNotFound):
    """A replica pod with only Knative's ``queue-proxy``: there is no app log to read."""


class ReplicaNotStarted(KubeError):
    """The replica's container has not started, so it has no log yet (and we are not following)."""


class LogStreamBroken(KubeUnreachable):
    """A log stream kept breaking without delivering a new line, past the retry budget."""


# --- what callers get ----------------------------------------------------------------------------


@dataclass(frozen=True)
class LogOptions:
    """How to read: ``tail`` None means the whole log; ``poll_interval`` paces replica discovery."""

    follow: bool = False
    tail: int | None = DEFAULT_TAIL_LINES
    poll_interval: float = DEFAULT_POLL_INTERVAL
    retry: RetryPolicy = DEFAULT_RETRY
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT


@dataclass(frozen=True)
class ReplicaLine:
    """One log line of one replica (pod)."""

    replica: str
    line: LogLine


@dataclass(frozen=True)
class Notice:
    """Something the user should know that is not a log line (for stderr)."""

    message: str


LogEvent = ReplicaLine | Notice


# --- replicas ------------------------------------------------------------------------------------


def app_kservice(app: AppId) -> str:
    """The KService an app lives in."""
    return kservice_name(project=app.project, domain=app.domain, name=app.name)


def list_replicas(
    api: k8s.ApiClient, *, namespace: str, kservice: str, retry: RetryPolicy = DEFAULT_RETRY
) -> Replicas:
    """The app's replica pods (:func:`~flyte_apps.kube.replicas.find_replicas`), oldest first
    (then by name), so that logs come out in the order the replicas started."""
    found = find_replicas(api, namespace=namespace, kservice=kservice, retry=retry)
    return replace(found, pods=tuple(sorted(found.pods, key=_age_order)))


def get_replica(
    api: k8s.ApiClient, *, app: AppId, namespace: str, name: str, retry: RetryPolicy = DEFAULT_RETRY
) -> Any:
    """The pod ``name``, checked to be one of ``app``'s replicas (upstream does not check)."""
    try:
        pod: Any = get_pod(api, namespace=namespace, name=name, retry=retry)
    except KubeNotFound as exc:
        msg = f"replica '{name}' of app {app} not found in namespace '{namespace}'"
        raise ReplicaNotFound(msg, status=exc.status) from exc
    kservice = app_kservice(app)
    owner = (pod.metadata.labels or {}).get(c.LABEL_KNATIVE_SERVICE)
    if owner != kservice:
        label = f"{c.LABEL_KNATIVE_SERVICE}={owner}" if owner else f"no {c.LABEL_KNATIVE_SERVICE} label"
        msg = (
            f"pod '{namespace}/{name}' is not a replica of app {app} "
            f"(KService '{kservice}'; the pod has {label})"
        )
        raise ReplicaNotFound(msg)
    return pod


def pick_user_container(pod: Any) -> str:
    """Upstream's ``pickUserContainer``: the first container not named ``queue-proxy``."""
    for container in pod.spec.containers or ():
        if container.name != c.QUEUE_PROXY_CONTAINER:
            return str(container.name)
    msg = f"no user container found in pod {pod.metadata.namespace}/{pod.metadata.name}"
    raise NoUserContainer(msg)


def _age_order(pod: Any) -> tuple[float, str]:
    created = pod.metadata.creation_timestamp
    return (created.timestamp() if created is not None else 0.0, str(pod.metadata.name))


def _phase(pod: Any) -> str:
    return str(getattr(pod.status, "phase", None) or "")


def _waiting_reason(pod: Any, container: str) -> str | None:
    """Why ``container`` is not running yet, or None if it runs (or ran)."""
    if _phase(pod) == PHASE_PENDING:
        return _status_waiting(pod, container) or PHASE_PENDING
    if _phase(pod) != PHASE_RUNNING:
        return None
    return _status_waiting(pod, container)


def _status_waiting(pod: Any, container: str) -> str | None:
    for status in getattr(pod.status, "container_statuses", None) or ():
        if status.name == container:
            state = status.state
            if state is not None and state.waiting is not None:
                return str(state.waiting.reason or "waiting")
            return None
    return None


# --- one stream ----------------------------------------------------------------------------------


class OpenStreams:
    """Log responses being read, so that another thread can unblock their reads at shutdown."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: set[Any] = set()
        self._closed = False

    def add(self, response: Any) -> None:
        with self._lock:
            if not self._closed:
                self._open.add(response)
                return
        _shutdown(response)

    def discard(self, response: Any) -> None:
        with self._lock:
            self._open.discard(response)

    def close_all(self) -> None:
        """Shut every stream down, now and as soon as any later one is added."""
        with self._lock:
            self._closed = True
            responses, self._open = list(self._open), set()
        for response in responses:
            _shutdown(response)


def _shutdown(response: Any) -> None:
    # urllib3's shutdown() exists to unblock a read in another thread; close() alone may not.
    with contextlib.suppress(Exception):
        response.shutdown()


def _open_log(
    api: k8s.ApiClient,
    *,
    namespace: str,
    pod: str,
    container: str,
    follow: bool,
    tail: int | None,
    since: str | None,
    options: LogOptions,
) -> Any:
    """GET ``pods/{pod}/log`` unread (a urllib3 response), with our retries and error messages.

    Built with ``param_serialize``/``call_api`` because ``read_namespaced_pod_log`` cannot send
    ``sinceTime`` (kubernetes 37) and would read the whole body before returning.
    """
    query: list[tuple[str, object]] = [("container", container), ("timestamps", True)]
    if follow:
        query.append(("follow", True))
    if tail is not None:
        query.append(("tailLines", tail))
    if since is not None:
        query.append(("sinceTime", since))
    # A follow may stay silent for hours: no read timeout then, like upstream's streaming client.
    timeout = (options.request_timeout, None if follow else options.request_timeout)
    raw = cast(Any, api)

    def request() -> Any:
        serialized = raw.param_serialize(
            "GET",
            _LOG_PATH,
            path_params={"namespace": namespace, "name": pod},
            query_params=query,
            header_params={"Accept": "text/plain"},
            auth_settings=["BearerToken"],
        )
        response = raw.call_api(*serialized, _request_timeout=timeout)
        if not 200 <= int(response.status) <= 299:
            response.read()
            raise ApiException(http_resp=response)
        return response.response

    return call(
        request,
        op=KubeOperation("get", "pods/log", namespace, pod),
        retry=options.retry,
        host=str(api.configuration.host),
    )


def _refresh(api: k8s.ApiClient, *, namespace: str, name: str, options: LogOptions) -> Any | None:
    try:
        return get_pod(api, namespace=namespace, name=name, retry=options.retry)
    except KubeNotFound:
        return None


def stream_replica(
    api: k8s.ApiClient,
    pod: Any,
    *,
    namespace: str,
    options: LogOptions,
    stop: threading.Event | None = None,
    streams: OpenStreams | None = None,
) -> Iterator[LogLine]:
    """The log lines of one replica, re-opening a broken stream where it broke.

    Without ``options.follow`` it reads what there is and ends. Following, it streams (``follow``
    is asked only while the pod is Running) until the pod is gone or has terminated; a container
    that restarts continues in a new stream. A container that has not started yet raises
    :class:`ReplicaNotStarted`, or is waited for when following. A stream that breaks is re-opened
    from the last printed timestamp; ``options.retry.attempts`` breaks in a row without a new line
    raise :class:`LogStreamBroken`.
    """
    stop = stop if stop is not None else threading.Event()
    streams = streams if streams is not None else OpenStreams()
    name = str(pod.metadata.name)
    container = pick_user_container(pod)
    cursor = ResumeCursor()
    failures = 0
    fresh = True  # ``pod`` is up to date; after any wait it is read again before a re-open
    while not stop.is_set():
        if not fresh:
            pod = _refresh(api, namespace=namespace, name=name, options=options)
            if pod is None:
                return  # the pod is gone, and its log with it
        fresh = False
        follow = options.follow and _phase(pod) == PHASE_RUNNING
        try:
            response = _open_log(
                api,
                namespace=namespace,
                pod=name,
                container=container,
                follow=follow,
                tail=None if cursor.started else options.tail,
                since=cursor.since_time(),
                options=options,
            )
        except KubeNotFound:
            return
        except KubeError as exc:
            if exc.status != 400:
                raise
            # 400 is how the API says "container is waiting to start" (or that the log of a
            # finished pod is gone).
            current = _refresh(api, namespace=namespace, name=name, options=options)
            if current is None or _phase(current) in TERMINAL_PHASES:
                return
            reason = _waiting_reason(current, container)
            if reason is not None and not options.follow:
                msg = f"replica {name} has not started yet ({reason}): no logs"
                raise ReplicaNotStarted(msg, status=exc.status) from exc
            if reason is not None:
                delay = options.poll_interval  # wait for the container to start
            else:
                # It runs now (it started since the request), or the 400 means something else.
                failures += 1
                if failures >= options.retry.attempts:
                    raise
                delay = options.retry.delay(failures)
            if stop.wait(delay):
                return
            continue
        cursor.reopen()
        buffer = LineBuffer()
        progress = False
        broken: Exception | None = None
        streams.add(response)
        try:
            while True:
                chunk = response.read1(_READ_SIZE)
                if not chunk:
                    break
                for text in buffer.feed(chunk):
                    line = parse_line(text)
                    if cursor.admit(line):
                        progress = True
                        yield line
            for text in buffer.finish():
                line = parse_line(text)
                if cursor.admit(line):
                    yield line
        except _STREAM_ERRORS as exc:
            broken = exc
        finally:
            streams.discard(response)
            with contextlib.suppress(Exception):
                response.close()
        if stop.is_set() or (broken is None and not options.follow):
            return
        if broken is not None:
            failures = 1 if progress else failures + 1
            if failures >= options.retry.attempts:
                msg = (
                    f"the log stream of replica '{namespace}/{name}' broke {failures} times in a row "
                    f"without a new line (last: {broken})"
                )
                raise LogStreamBroken(msg) from broken
            delay = options.retry.delay(failures)
        else:
            # Following, a stream ends cleanly when the container stops (or was not followed
            # because the pod was not Running). A pod that has ended is done; one that still
            # runs restarts its container, whose next instance continues in a new stream.
            if _phase(pod) in TERMINAL_PHASES:
                return
            failures = 0
            delay = 0.0 if progress else options.poll_interval
            pod = _refresh(api, namespace=namespace, name=name, options=options)
            if pod is None or _phase(pod) in TERMINAL_PHASES:
                return
            fresh = delay == 0.0
        if stop.wait(delay):
            return
        # A broken stream of a pod that has ended since is read to its end (without follow).


# --- an app --------------------------------------------------------------------------------------


def tail_replica(
    api: k8s.ApiClient, *, app: AppId, namespace: str, name: str, options: LogOptions
) -> Generator[LogEvent, None, None]:
    """One replica's lines, after checking that the pod is one of ``app``'s."""
    pod = get_replica(api, app=app, namespace=namespace, name=name, retry=options.retry)
    try:
        for line in stream_replica(api, pod, namespace=namespace, options=options):
            yield ReplicaLine(name, line)
    except ReplicaNotStarted as exc:
        yield Notice(str(exc))


def tail_app(
    api: k8s.ApiClient, *, app: AppId, namespace: str, options: LogOptions
) -> Generator[LogEvent, None, None]:
    """Every replica's lines: one after the other, or interleaved as they come when following.

    Raises :class:`AppNotFound` when neither the KService nor any replica exists. An app with no
    replica (scaled to zero) yields a :class:`Notice`; following then waits for one to start.
    """
    kservice = app_kservice(app)
    replicas = list_replicas(api, namespace=namespace, kservice=kservice, retry=options.retry)
    if not replicas.pods:
        if not replicas.kservice_found:
            msg = (
                f"app {app} not found: no KService '{kservice}' "
                f"and no replica pods in namespace '{namespace}'"
            )
            raise AppNotFound(msg)
        waiting = "; waiting for a replica to start (Ctrl-C to stop)" if options.follow else ""
        yield Notice(f"app {app} has no running replicas (scaled to zero){waiting}")
    if not options.follow:
        for pod in replicas.pods:
            name = str(pod.metadata.name)
            try:
                for line in stream_replica(api, pod, namespace=namespace, options=options):
                    yield ReplicaLine(name, line)
            except ReplicaNotStarted as exc:
                yield Notice(str(exc))
        return
    follower = _Follower(api, namespace=namespace, kservice=kservice, options=options)
    yield from follower.run(replicas)


@dataclass(frozen=True)
class _Ended:
    replica: str
    error: Exception | None = None


@dataclass
class _Follower:
    """One reader thread per replica feeding a queue; this (consuming) thread polls for replicas."""

    api: k8s.ApiClient
    namespace: str
    kservice: str
    options: LogOptions
    _events: queue.Queue[ReplicaLine | _Ended] = field(default_factory=lambda: queue.Queue(_QUEUE_SIZE))
    _stop: threading.Event = field(default_factory=threading.Event)
    _streams: OpenStreams = field(default_factory=OpenStreams)
    _threads: dict[str, threading.Thread] = field(default_factory=dict)
    _ended: set[str] = field(default_factory=set)

    def run(self, replicas: Replicas) -> Iterator[ReplicaLine]:
        """Lines until every replica seen has ended and none is left running or starting."""
        try:
            while True:
                self._start(replicas.pods)
                if self._finished(replicas.pods):
                    return
                yield from self._drain(time.monotonic() + self.options.poll_interval)
                replicas = list_replicas(
                    self.api, namespace=self.namespace, kservice=self.kservice, retry=self.options.retry
                )
        finally:
            self.close()

    def close(self) -> None:
        """Stop every reader and unblock its read; idempotent."""
        self._stop.set()
        self._streams.close_all()
        deadline = time.monotonic() + _JOIN_BUDGET
        for thread in self._threads.values():
            thread.join(max(0.0, deadline - time.monotonic()))

    def _drain(self, deadline: float) -> Iterator[ReplicaLine]:
        """Lines until ``deadline``, or until a replica's stream ends (then look at the pods now)."""
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                item = self._events.get(timeout=min(remaining, _WAIT_SLICE))
            except queue.Empty:
                continue
            if isinstance(item, _Ended):
                self._ended.add(item.replica)
                if item.error is not None:
                    raise item.error
                return
            yield item

    def _finished(self, pods: Sequence[Any]) -> bool:
        if not self._threads or len(self._ended) < len(self._threads):
            return False
        return all(_phase(pod) in TERMINAL_PHASES for pod in pods)

    def _start(self, pods: Sequence[Any]) -> None:
        for pod in pods:
            name = str(pod.metadata.name)
            if name in self._threads:
                continue
            thread = threading.Thread(target=self._read, args=(pod,), name=f"logs-{name}", daemon=True)
            self._threads[name] = thread
            thread.start()

    def _read(self, pod: Any) -> None:
        name = str(pod.metadata.name)
        error: Exception | None = None
        try:
            lines = stream_replica(
                self.api,
                pod,
                namespace=self.namespace,
                options=self.options,
                stop=self._stop,
                streams=self._streams,
            )
            for line in lines:
                if not self._put(ReplicaLine(name, line)):
                    return
        except Exception as exc:  # handed over: the consuming thread raises it
            error = exc
        finally:
            self._put(_Ended(name, error))

    def _put(self, item: ReplicaLine | _Ended) -> bool:
        while not self._stop.is_set():
            try:
                self._events.put(item, timeout=_PUT_SLICE)
            except queue.Full:
                continue
            return True
        return False
