"""An app's logs from the Kubernetes API, read the way Flyte's ``TailLogs`` reads them.

Upstream behaviour kept (reference (c)14 and 19): replicas are the pods labelled
``serving.knative.dev/service=<KService>``, narrowed to ``serving.knative.dev/revision=<latest
ready revision>`` once the KService has one (``flyte_apps.kube.replicas``, the rule ``status``
uses too); each pod's log is its first container that is not Knative's ``queue-proxy``, requested
with ``timestamps=true``, ``tailLines`` (1000 by default) and ``follow`` only while the pod is Running.

Done better than upstream: a log stream cut mid-way is re-opened from the last printed line
(``sinceTime`` plus the de-duplication of :class:`~flyte_apps.core.logparse.ResumeCursor`) with bounded
retries; following an app picks up replicas that start later and ends by itself once every
replica is gone; a pod named as a replica must belong to the app; a replica whose container has
not started yet is waited for (``--follow``) or reported, not an error.

Nothing here prints: :func:`read_app` and :func:`read_replica` yield the lines of each read of a
stream together, notices, and while following a :class:`CaughtUp` whenever nothing more is waiting.
Following runs a reader thread per replica into a bounded ``queue.Queue``; closing the iterator (or
Ctrl-C in the consuming thread) stops and unblocks them all.
"""

from __future__ import annotations

import contextlib
import http.client
import queue
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, NamedTuple, cast

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import shown
from flyte_apps.core.config.models import AppId
from flyte_apps.core.logparse import LineBuffer, LogLine, ResumeCursor, parse_line
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
_PENDING_READS: Final = 1024
"""Reads (each at most :data:`~flyte_apps.kube.bounded.READ_SIZE` bytes) queued before readers wait."""
_WAIT_SLICE: Final = 0.2
"""Longest a thread blocks on the queue at once, so that a stop or Ctrl-C is seen."""
_JOIN_BUDGET: Final = 2.0
"""Seconds ``close`` waits in total for reader threads (daemons: none can hang exit)."""
_STREAM_ERRORS: Final = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)
"""What reading a broken or cut stream raises (``ProtocolError`` for a cut chunked body)."""


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


@dataclass(frozen=True)
class LogOptions:
    """How to read: ``tail`` None means the whole log; ``poll_interval`` paces replica discovery."""

    follow: bool = False
    tail: int | None = DEFAULT_TAIL_LINES
    poll_interval: float = DEFAULT_POLL_INTERVAL
    retry: RetryPolicy = DEFAULT_RETRY
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT


class ReplicaLines(NamedTuple):
    """Consecutive lines of one replica that arrived together (one read of its stream), in order."""

    replica: str
    lines: Sequence[LogLine]


@dataclass(frozen=True)
class Notice:
    """Something the user should know that is not a log line (for stderr)."""

    message: str


@dataclass(frozen=True)
class CaughtUp:
    """Every line read so far has been handed over and none is waiting: a consumer that buffers its
    output flushes it now (so ``logs -f | jq`` sees a lone line at once)."""


CAUGHT_UP: Final = CaughtUp()
LogBatch = ReplicaLines | Notice | CaughtUp


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
    """Why ``container`` is not running yet (Pending, or its waiting reason), or None if it runs (or ran)."""
    if _phase(pod) not in (PHASE_PENDING, PHASE_RUNNING):
        return None
    for status in getattr(pod.status, "container_statuses", None) or ():
        if status.name == container and status.state is not None and status.state.waiting is not None:
            return str(status.state.waiting.reason or "waiting")
    return PHASE_PENDING if _phase(pod) == PHASE_PENDING else None


def _unscheduled(pod: Any) -> bool:
    """A Pending pod that no node took yet: the API answers its log with 204 and no body (it has
    no kubelet to ask), not with the 400 of a container that is waiting to start."""
    return _phase(pod) == PHASE_PENDING and not getattr(pod.spec, "node_name", None)


def _shutdown(response: urllib3.BaseHTTPResponse | None) -> None:
    # urllib3's shutdown() exists to unblock a read in another thread; close() alone may not.
    with contextlib.suppress(Exception):
        if response is not None:
            response.shutdown()


def open_log(
    api: k8s.ApiClient, *, namespace: str, pod: str, query: list[tuple[str, object]], options: LogOptions
) -> urllib3.BaseHTTPResponse:
    """GET ``pods/{pod}/log`` unread (a urllib3 response), with our retries and error messages.

    The client's own ``param_serialize``/``call_api`` (what ``read_namespaced_pod_log`` does with
    ``_preload_content=False``), because that method cannot send ``sinceTime`` (kubernetes 37).
    """
    follow = ("follow", True) in query
    # A follow may stay silent for hours: no read timeout then, like upstream's streaming client.
    timeout = (options.request_timeout, None if follow else options.request_timeout)

    def request(_request_timeout: RequestTimeout) -> urllib3.BaseHTTPResponse:
        serialized = api.param_serialize(
            "GET",
            _LOG_PATH,
            path_params={"namespace": namespace, "name": pod},
            query_params=query,
            header_params={"Accept": _LOG_ACCEPT},
            auth_settings=["BearerToken"],
        )
        response: Any = api.call_api(*serialized, _request_timeout=_request_timeout)
        if not 200 <= int(response.status) <= 299:
            response.read()
            raise ApiException(http_resp=response)
        return cast(urllib3.BaseHTTPResponse, response.response)

    op = KubeOperation("get", "pods/log", namespace, pod)
    host = str(api.configuration.host)
    body = call(request, _request_timeout=timeout, stream=follow, op=op, retry=options.retry, host=host)
    content_type = str(body.headers.get("Content-Type") or "")
    if content_type.split(";", 1)[0].strip().lower() in _NOT_A_LOG:
        _shutdown(body)
        raise bad_response(op, host, f"a {shown(content_type)} page instead of a log stream {PROXY_HINT}")
    return body


@dataclass
class ReplicaReader:
    """The log lines of one replica, re-opening a broken stream where it broke (:meth:`batches`)."""

    api: k8s.ApiClient
    pod: Any
    namespace: str
    options: LogOptions
    stop: threading.Event = field(default_factory=threading.Event)
    response: urllib3.BaseHTTPResponse | None = None
    """The stream being read, for :meth:`interrupt`."""
    cursor: ResumeCursor = field(default_factory=ResumeCursor)
    failures: int = 0
    """Breaks (or unexplained 400s) in a row without a new line."""

    @property
    def name(self) -> str:
        return str(self.pod.metadata.name)

    def interrupt(self) -> None:
        """From another thread, after setting ``stop``: unblock the read of the current stream."""
        _shutdown(self.response)

    def batches(self) -> Iterator[list[LogLine]]:
        """A non-empty list of lines per read. Without ``options.follow``, what there is; following
        (``follow`` asked only while the pod is Running), until the pod is gone or has terminated (a
        restarted container continues in a new stream). A container not started yet raises
        :class:`ReplicaNotStarted`, or is waited for when following. A broken stream is re-opened from
        the last printed timestamp; ``options.retry.attempts`` breaks in a row without a new line
        raise :class:`LogStreamBroken`."""
        container = pick_user_container(self.pod)
        fresh = True  # ``pod`` is up to date; after any wait it is read again before a re-open
        delay: float | None
        while not self.stop.is_set():
            if not fresh and not self._refresh():
                return  # the pod is gone, and its log with it
            if _unscheduled(self.pod):
                if not self.options.follow:
                    msg = f"replica {self.name} has not started yet (not scheduled to a node): no logs"
                    raise ReplicaNotStarted(msg)
                fresh, delay = False, self.options.poll_interval
            else:
                try:
                    response = self._open(container)
                except KubeNotFound:
                    return
                except KubeError as exc:
                    fresh, delay = False, self._after_refusal(exc, container)
                else:
                    progress, broken = yield from self._read(response)
                    if self.stop.is_set() or (broken is None and not self.options.follow):
                        return
                    fresh, delay = self._after_stream(progress=progress, broken=broken)
            if delay is None or self.stop.wait(delay):  # a bounded wait that a stop ends at once
                return
        # A broken stream of a pod that has ended since is read to its end (without follow).

    def _open(self, container: str) -> urllib3.BaseHTTPResponse:
        query: list[tuple[str, object]] = [("container", container), ("timestamps", True)]
        if self.options.follow and _phase(self.pod) == PHASE_RUNNING:
            query.append(("follow", True))
        if not self.cursor.started and self.options.tail is not None:
            query.append(("tailLines", self.options.tail))
        if (since := self.cursor.since_time()) is not None:
            query.append(("sinceTime", since))
        return open_log(self.api, namespace=self.namespace, pod=self.name, query=query, options=self.options)

    def _read(
        self, response: urllib3.BaseHTTPResponse
    ) -> Generator[list[LogLine], None, tuple[bool, Exception | None]]:
        """The lines of one stream, as urllib3 hands its body over; (progress, the error that broke it)."""
        self.cursor.reopen()
        buffer, admit, progress = LineBuffer(), self.cursor.admit_all, False
        self.response = response
        if self.stop.is_set():  # stopped since the stream opened: interrupt() may have missed it
            _shutdown(response)
        try:
            for chunk in response.stream(READ_SIZE):
                if (lines := buffer.feed(chunk)) and (batch := admit([parse_line(x) for x in lines])):
                    progress = True
                    yield batch
            if last := admit([parse_line(x) for x in buffer.finish()]):
                yield last
        except _STREAM_ERRORS as exc:
            return progress, exc
        finally:
            with contextlib.suppress(Exception):
                response.close()
        return progress, None

    def _after_refusal(self, exc: KubeError, container: str) -> float | None:
        """After an error opening the stream: seconds to wait before trying again, or None to end.
        400 is how the API says "container is waiting to start" (or that a finished pod's log is gone)."""
        if exc.status != 400:
            raise exc
        if not self._refresh() or _phase(self.pod) in TERMINAL_PHASES:
            return None
        reason = _waiting_reason(self.pod, container)
        if reason is not None and not self.options.follow:
            msg = f"replica {self.name} has not started yet ({reason}): no logs"
            raise ReplicaNotStarted(msg, status=exc.status) from exc
        if reason is not None:
            return self.options.poll_interval  # wait for the container to start
        # It runs now (it started since the request), or the 400 means something else.
        self.failures += 1
        if self.failures >= self.options.retry.attempts:
            raise exc
        return self.options.retry.delay(self.failures)

    def _after_stream(self, *, progress: bool, broken: Exception | None) -> tuple[bool, float | None]:
        """After a followed stream ended: (whether ``pod`` is fresh, seconds to wait or None to end)."""
        if broken is not None:
            self.failures = 1 if progress else self.failures + 1
            if self.failures >= self.options.retry.attempts:
                msg = (
                    f"the log stream of replica '{self.namespace}/{self.name}' broke {self.failures} "
                    f"times in a row without a new line (last: {broken})"
                )
                raise LogStreamBroken(msg) from broken
            return False, self.options.retry.delay(self.failures)
        # A followed stream ends cleanly when the container stops (or was not followed because the
        # pod was not Running). A pod that has ended is done; one that still runs restarts its
        # container, whose next instance continues in a new stream.
        if _phase(self.pod) in TERMINAL_PHASES or not self._refresh() or _phase(self.pod) in TERMINAL_PHASES:
            return False, None
        self.failures = 0
        return progress, 0.0 if progress else self.options.poll_interval

    def _refresh(self) -> bool:
        """Read the pod again; False if it is gone."""
        try:
            self.pod = get_pod(self.api, namespace=self.namespace, name=self.name, retry=self.options.retry)
        except KubeNotFound:
            return False
        return True


def read_replica(
    api: k8s.ApiClient, *, app: AppId, namespace: str, name: str, options: LogOptions
) -> Generator[LogBatch, None, None]:
    """One replica's lines in batches, after checking that the pod is one of ``app``'s."""
    pod = get_replica(api, app=app, namespace=namespace, name=name, retry=options.retry)
    yield from _one_replica(ReplicaReader(api, pod, namespace, options))


def _one_replica(reader: ReplicaReader) -> Iterator[LogBatch]:
    try:
        for batch in reader.batches():
            yield ReplicaLines(reader.name, batch)
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
            yield from _one_replica(ReplicaReader(api, pod, namespace, options))
        return
    yield from _Follower(api, namespace=namespace, kservice=kservice, options=options).run(replicas)


@dataclass(frozen=True)
class _Ended:
    replica: str
    error: Exception | None = None


@dataclass
class _Follower:
    """One reader thread per replica feeding a bounded queue (a batch of lines per read); this
    (consuming) thread polls for replicas."""

    api: k8s.ApiClient
    namespace: str
    kservice: str
    options: LogOptions
    _queue: queue.Queue[ReplicaLines | _Ended] = field(default_factory=lambda: queue.Queue(_PENDING_READS))
    _stop: threading.Event = field(default_factory=threading.Event)
    _readers: dict[str, tuple[ReplicaReader, threading.Thread]] = field(default_factory=dict)
    _ended: set[str] = field(default_factory=set)

    def run(self, replicas: Replicas) -> Iterator[ReplicaLines | CaughtUp]:
        """Lines until every replica seen has ended and none is left running or starting."""
        try:
            while True:
                for pod in replicas.pods:
                    if (name := str(pod.metadata.name)) not in self._readers:
                        reader = ReplicaReader(self.api, pod, self.namespace, self.options, self._stop)
                        thread = threading.Thread(
                            target=self._read, args=(reader,), name=f"logs-{name}", daemon=True
                        )
                        self._readers[name] = (reader, thread)
                        thread.start()
                if (
                    self._readers
                    and len(self._ended) == len(self._readers)
                    and all(_phase(pod) in TERMINAL_PHASES for pod in replicas.pods)
                ):
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
        for reader, _ in self._readers.values():
            reader.interrupt()
        deadline = time.monotonic() + _JOIN_BUDGET
        for _, thread in self._readers.values():
            thread.join(max(0.0, deadline - time.monotonic()))

    def _drain(self, deadline: float) -> Iterator[ReplicaLines | CaughtUp]:
        """Lines until ``deadline``, or until a replica's stream ends (then look at the pods now);
        a :class:`CaughtUp` each time nothing is waiting after lines."""
        unflushed = False
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                if unflushed:
                    unflushed = False
                    yield CAUGHT_UP
                try:
                    item = self._queue.get(timeout=min(remaining, _WAIT_SLICE))
                except queue.Empty:
                    continue
            if isinstance(item, _Ended):
                self._ended.add(item.replica)
                if item.error is not None:
                    raise item.error
                break
            unflushed = True
            yield item
        if unflushed:
            yield CAUGHT_UP  # listing the replicas next waits for the API

    def _read(self, reader: ReplicaReader) -> None:
        error: Exception | None = None
        name = reader.name
        try:
            for batch in reader.batches():
                if not self._put(ReplicaLines(name, batch)):
                    return
        except Exception as exc:  # handed over: the consuming thread raises it
            error = exc
        finally:
            self._put(_Ended(name, error))

    def _put(self, item: ReplicaLines | _Ended) -> bool:
        """Queue ``item``, waiting while the queue is full; False (not queued) once stopped."""
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_WAIT_SLICE)
            except queue.Full:
                continue
            return True
        return False
