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

Nothing here prints: callers iterate :data:`LogEvent` values, one line at a time, or
:data:`LogBatch` values (:func:`read_app`, :func:`read_replica`): the lines of one read of a stream
together, and a :class:`CaughtUp` whenever everything read so far has been handed over. A line costs
a few microseconds of Python whichever way it travels, so a printer that pays per batch (one queue
item, one write) instead of per line keeps up with the API server, and one that flushes at
:class:`CaughtUp` still shows a lone line at once. Following runs one reader thread per replica;
closing the iterator (or Ctrl-C in the consuming thread) stops and unblocks them all.
"""

from __future__ import annotations

import contextlib
import http.client
import threading
import time
from collections import deque
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, cast

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import shown
from flyte_apps.core.config.models import AppId
from flyte_apps.core.logparse import LineBuffer, LogLine, ResumeCursor, parse_lines
from flyte_apps.core.naming import kservice_name
from flyte_apps.kube.api import DEFAULT_REQUEST_TIMEOUT, get_pod
from flyte_apps.kube.bounded import READ_SIZE
from flyte_apps.kube.errors import KubeError, KubeNotFound, KubeUnreachable
from flyte_apps.kube.replicas import Replicas, find_replicas
from flyte_apps.kube.retry import (
    DEFAULT_RETRY,
    PROXY_HINT,
    KubeOperation,
    RequestTimeout,
    RetryPolicy,
    bad_response,
    call,
)

DEFAULT_TAIL_LINES: Final = 1000
"""Upstream's ``defaultInitialLines``: how much history a stream starts with."""
DEFAULT_POLL_INTERVAL: Final = 1.0
"""Seconds between looks for new replicas while following an app."""

PHASE_PENDING: Final = "Pending"
PHASE_RUNNING: Final = "Running"
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})

_LOG_PATH: Final = "/api/v1/namespaces/{namespace}/pods/{name}/log"
_NOT_A_LOG: Final = frozenset({"text/html", "application/xhtml+xml"})
"""Content types of a page (a proxy's login form), never of the API server's log stream."""
_LOG_ACCEPT: Final = "application/json, */*"
"""What kubectl sends for logs. The API server negotiates every answer against the media types it
serializes (JSON, YAML, protobuf): ``Accept: text/plain`` alone gets 406 for every pod log, the log
itself included (kube-apiserver 1.34, found by the e2e suite); the log still comes as text/plain."""
_PENDING_LINES: Final = 20_000
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


@dataclass(frozen=True)
class ReplicaLines:
    """Consecutive lines of one replica that arrived together (one read of its stream), in order."""

    replica: str
    lines: Sequence[LogLine]


@dataclass(frozen=True)
class CaughtUp:
    """Every line read so far has been handed over and none is waiting: a consumer that buffers its
    output flushes it now (so ``logs -f | jq`` sees a lone line at once)."""


CAUGHT_UP: Final = CaughtUp()
LogBatch = ReplicaLines | Notice | CaughtUp


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


def _unscheduled(pod: Any) -> bool:
    """A Pending pod that no node took yet: the API answers its log with 204 and no body (it has
    no kubelet to ask), not with the 400 of a container that is waiting to start."""
    return _phase(pod) == PHASE_PENDING and not getattr(pod.spec, "node_name", None)


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

    def request(_request_timeout: RequestTimeout) -> Any:
        serialized = raw.param_serialize(
            "GET",
            _LOG_PATH,
            path_params={"namespace": namespace, "name": pod},
            query_params=query,
            header_params={"Accept": _LOG_ACCEPT},
            auth_settings=["BearerToken"],
        )
        response = raw.call_api(*serialized, _request_timeout=_request_timeout)
        if not 200 <= int(response.status) <= 299:
            response.read()
            raise ApiException(http_resp=response)
        return response.response

    op = KubeOperation("get", "pods/log", namespace, pod)
    host = str(api.configuration.host)
    body = call(request, _request_timeout=timeout, stream=follow, op=op, retry=options.retry, host=host)
    content_type = str(body.headers.get("Content-Type") or "")
    if content_type.split(";", 1)[0].strip().lower() in _NOT_A_LOG:
        _shutdown(body)
        raise bad_response(op, host, f"a {shown(content_type)} page instead of a log stream {PROXY_HINT}")
    return body


def _chunks(response: Any) -> Iterator[bytes]:
    """The body as it arrives, in pieces of at most :data:`~flyte_apps.kube.bounded.READ_SIZE` bytes
    (urllib3's ``stream``: an HTTP chunk at a time, never a whole chunk the server says is huge)."""
    return cast(Iterator[bytes], response.stream(READ_SIZE))


def _refresh(api: k8s.ApiClient, *, namespace: str, name: str, options: LogOptions) -> Any | None:
    try:
        return get_pod(api, namespace=namespace, name=name, retry=options.retry)
    except KubeNotFound:
        return None


def replica_batches(
    api: k8s.ApiClient,
    pod: Any,
    *,
    namespace: str,
    options: LogOptions,
    stop: threading.Event | None = None,
    streams: OpenStreams | None = None,
) -> Iterator[Sequence[LogLine]]:
    """The log lines of one replica, a non-empty sequence per read, re-opening a broken stream where it broke.

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
        if _unscheduled(pod):
            if not options.follow:
                msg = f"replica {name} has not started yet (not scheduled to a node): no logs"
                raise ReplicaNotStarted(msg)
            if stop.wait(options.poll_interval):
                return
            continue
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
        admit = cursor.admit_all
        try:
            for chunk in _chunks(response):
                text = buffer.feed_text(chunk)
                if text is not None and (batch := admit(parse_lines(text))):
                    progress = True
                    yield batch
            text = buffer.finish_text()
            if text is not None and (last := admit(parse_lines(text))):
                yield last
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
    """One replica's lines, after checking that the pod is one of ``app``'s (:func:`read_replica`,
    a line at a time)."""
    return _one_by_one(read_replica(api, app=app, namespace=namespace, name=name, options=options))


def tail_app(
    api: k8s.ApiClient, *, app: AppId, namespace: str, options: LogOptions
) -> Generator[LogEvent, None, None]:
    """Every replica's lines (:func:`read_app`, a line at a time)."""
    return _one_by_one(read_app(api, app=app, namespace=namespace, options=options))


def _one_by_one(batches: Generator[LogBatch, None, None]) -> Generator[LogEvent, None, None]:
    try:
        for item in batches:
            if isinstance(item, ReplicaLines):
                replica = item.replica
                for line in item.lines:
                    yield ReplicaLine(replica, line)
            elif isinstance(item, Notice):
                yield item
    finally:
        batches.close()


def read_replica(
    api: k8s.ApiClient, *, app: AppId, namespace: str, name: str, options: LogOptions
) -> Generator[LogBatch, None, None]:
    """One replica's lines in batches, after checking that the pod is one of ``app``'s."""
    pod = get_replica(api, app=app, namespace=namespace, name=name, retry=options.retry)
    try:
        for batch in replica_batches(api, pod, namespace=namespace, options=options):
            yield ReplicaLines(name, batch)
    except ReplicaNotStarted as exc:
        yield Notice(str(exc))


def read_app(
    api: k8s.ApiClient, *, app: AppId, namespace: str, options: LogOptions
) -> Generator[LogBatch, None, None]:
    """Every replica's lines in batches: one replica after the other, or interleaved as they come
    when following (then with a :class:`CaughtUp` each time nothing more is waiting).

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
                for batch in replica_batches(api, pod, namespace=namespace, options=options):
                    yield ReplicaLines(name, batch)
            except ReplicaNotStarted as exc:
                yield Notice(str(exc))
        return
    follower = _Follower(api, namespace=namespace, kservice=kservice, options=options)
    yield from follower.run(replicas)


@dataclass(frozen=True)
class _Ended:
    replica: str
    error: Exception | None = None


class _Mailbox:
    """Batches from the reader threads to the consuming thread, taken all at once.

    A ``queue.Queue`` item per read cost a lock round, a wake-up and a thread switch for every read,
    and with the API server sending a line per chunk every read is one line. Here a reader appends
    its batch (waking the consumer only if it waits) and the consumer takes everything waiting in
    one go: under load, one wake-up for many batches. Readers wait while ``capacity`` lines are
    waiting, so a slow consumer bounds the memory."""

    def __init__(self, capacity: int) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._items: list[ReplicaLines | _Ended] = []
        self._lines = 0
        self._capacity = capacity

    def put(self, item: ReplicaLines | _Ended, stop: threading.Event) -> bool:
        """Hand ``item`` over, waiting while full; False (not handed over) once ``stop`` is set."""
        size = len(item.lines) if isinstance(item, ReplicaLines) else 0
        with self._cond:
            while not stop.is_set():
                if self._lines < self._capacity:
                    self._items.append(item)
                    self._lines += size
                    self._cond.notify_all()
                    return True
                self._cond.wait(_PUT_SLICE)
        return False

    def take(self, timeout: float = 0.0) -> list[ReplicaLines | _Ended]:
        """Everything waiting, oldest first; waits up to ``timeout`` seconds when nothing is."""
        with self._cond:
            if not self._items and timeout > 0:
                self._cond.wait(timeout)
            items, self._items = self._items, []
            if self._lines >= self._capacity:
                self._cond.notify_all()  # readers waiting for room
            self._lines = 0
            return items


@dataclass
class _Follower:
    """One reader thread per replica feeding a mailbox (a batch of lines per read); this (consuming)
    thread polls for replicas."""

    api: k8s.ApiClient
    namespace: str
    kservice: str
    options: LogOptions
    _mailbox: _Mailbox = field(default_factory=lambda: _Mailbox(_PENDING_LINES))
    _ready: deque[ReplicaLines | _Ended] = field(default_factory=deque)
    """Taken from the mailbox, not yet handed on."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _streams: OpenStreams = field(default_factory=OpenStreams)
    _threads: dict[str, threading.Thread] = field(default_factory=dict)
    _ended: set[str] = field(default_factory=set)
    _unflushed: bool = False
    """Lines were handed over since the last :class:`CaughtUp`."""

    def run(self, replicas: Replicas) -> Iterator[ReplicaLines | CaughtUp]:
        """Lines until every replica seen has ended and none is left running or starting."""
        try:
            while True:
                self._start(replicas.pods)
                if self._finished(replicas.pods):
                    return
                yield from self._drain(time.monotonic() + self.options.poll_interval)
                yield from self._caught_up()  # listing the replicas below waits for the API
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

    def _drain(self, deadline: float) -> Iterator[ReplicaLines | CaughtUp]:
        """Lines until ``deadline``, or until a replica's stream ends (then look at the pods now);
        a :class:`CaughtUp` each time nothing is waiting after lines."""
        ready = self._ready
        while (remaining := deadline - time.monotonic()) > 0:
            if not ready:
                ready.extend(self._mailbox.take())
                if not ready:
                    yield from self._caught_up()
                    ready.extend(self._mailbox.take(min(remaining, _WAIT_SLICE)))
                    continue
            item = ready.popleft()
            if isinstance(item, _Ended):
                self._ended.add(item.replica)
                if item.error is not None:
                    raise item.error
                return
            self._unflushed = True
            yield item

    def _caught_up(self) -> Iterator[CaughtUp]:
        if self._unflushed:
            self._unflushed = False
            yield CAUGHT_UP

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
            batches = replica_batches(
                self.api,
                pod,
                namespace=self.namespace,
                options=self.options,
                stop=self._stop,
                streams=self._streams,
            )
            for batch in batches:
                if not self._put(ReplicaLines(name, batch)):
                    return
        except Exception as exc:  # handed over: the consuming thread raises it
            error = exc
        finally:
            self._put(_Ended(name, error))

    def _put(self, item: ReplicaLines | _Ended) -> bool:
        return self._mailbox.put(item, self._stop)
