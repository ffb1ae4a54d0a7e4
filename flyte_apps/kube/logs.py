"""An app's logs from the Kubernetes API, read the way Flyte's ``TailLogs`` reads them ((c)14, 19).

Kept from upstream: the replicas are the pods :mod:`flyte_apps.kube.replicas` finds (as ``status``);
a pod's log is its first container that is not ``queue-proxy``, asked with ``timestamps=true``,
``tailLines`` (1000 by default) and ``follow`` while the pod is Running. Better: a cut stream resumes
after its last printed line (``sinceTime``, :class:`~flyte_apps.core.logparse.ResumeCursor`) with
bounded retries; following picks up replicas that start later and ends once all are gone; a
container not started yet is waited for or reported.

Nothing here prints: :func:`read_app` and :func:`read_replica` yield batches of lines, notices and,
following, a :class:`CaughtUp` whenever nothing more is waiting. Following reads each replica in a
thread of its own into a bounded ``queue.Queue``; closing the iterator (or Ctrl-C) stops them all.
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
from flyte_apps.kube.api import DEFAULT_REQUEST_TIMEOUT, get_pod
from flyte_apps.kube.apps import kservice_name_of
from flyte_apps.kube.bounded import READ_SIZE
from flyte_apps.kube.errors import KubeError, KubeNotFound, KubeUnreachable
from flyte_apps.kube.replicas import Replicas, find_replicas, get_replica
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

_LOG_PATH: Final = "/api/v1/namespaces/{namespace}/pods/{name}/log"
_NOT_A_LOG: Final = frozenset({"text/html", "application/xhtml+xml"})
"""Content types of a page (a proxy's login form), never of the API server's log stream."""
_LOG_ACCEPT: Final = "application/json, */*"
"""What kubectl sends: ``Accept: text/plain`` alone gets 406 for every pod log (kube-apiserver 1.34,
found by the e2e suite), which still comes as text/plain."""
_PENDING_READS: Final = 1024
"""Reads (each at most :data:`~flyte_apps.kube.bounded.READ_SIZE` bytes) queued before readers wait."""
_WAIT_SLICE: Final = 0.2
"""Longest a reader thread blocks on a full queue at once, so that a stop is seen."""
_JOIN_BUDGET: Final = 2.0
"""Seconds ``close`` waits in total for reader threads (daemons: none can hang exit)."""
_STREAM_ERRORS: Final = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)
"""What reading a broken or cut stream raises (``ProtocolError`` for a cut chunked body)."""


class AppNotFound(KubeNotFound):
    """Neither the app's KService nor any pod of it exists."""


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
    """Nothing more is waiting: a consumer that buffers its output flushes it now."""


CAUGHT_UP: Final = CaughtUp()
LogBatch = ReplicaLines | Notice | CaughtUp


def pick_user_container(pod: Any) -> str:
    """Upstream's ``pickUserContainer``: the first container not named ``queue-proxy``."""
    for container in pod.spec.containers or ():
        if container.name != c.QUEUE_PROXY_CONTAINER:
            return str(container.name)
    msg = f"no user container found in pod {pod.metadata.namespace}/{pod.metadata.name}"
    raise NoUserContainer(msg)


def _age_order(pod: Any) -> tuple[float, str]:
    """Oldest first, then by name: the order in which replicas are read one after the other."""
    created = pod.metadata.creation_timestamp
    return (created.timestamp() if created is not None else 0.0, str(pod.metadata.name))


def _phase(pod: Any) -> str:
    return str(getattr(pod.status, "phase", None) or "")


def _terminal(pod: Any) -> bool:
    return _phase(pod) in (c.POD_SUCCEEDED, c.POD_FAILED)


def _waiting_reason(pod: Any, container: str) -> str | None:
    """Why ``container`` is not running yet (Pending, or its waiting reason), or None if it runs (or ran)."""
    if _phase(pod) not in (c.POD_PENDING, c.POD_RUNNING):
        return None
    for status in getattr(pod.status, "container_statuses", None) or ():
        if status.name == container and status.state is not None and status.state.waiting is not None:
            return str(status.state.waiting.reason or "waiting")
    return c.POD_PENDING if _phase(pod) == c.POD_PENDING else None


def _unscheduled(pod: Any) -> bool:
    """A Pending pod that no node took yet: the API answers its log with 204 and no body (it has
    no kubelet to ask), not with the 400 of a container that is waiting to start."""
    return _phase(pod) == c.POD_PENDING and not getattr(pod.spec, "node_name", None)


def _shutdown(response: urllib3.BaseHTTPResponse | None) -> None:
    # urllib3's shutdown() exists to unblock a read in another thread; close() alone may not.
    with contextlib.suppress(Exception):
        if response is not None:
            response.shutdown()


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
    error: Exception | None = None
    """What ended :meth:`batches` in a reader thread."""

    @property
    def name(self) -> str:
        return str(self.pod.metadata.name)

    def interrupt(self) -> None:
        """From another thread, after setting ``stop``: unblock the read of the current stream."""
        _shutdown(self.response)

    def batches(self) -> Iterator[list[LogLine]]:
        """A non-empty list of lines per read: what there is, or following until the pod is gone or
        has ended. A container not started raises :class:`ReplicaNotStarted` (waited for when
        following); ``options.retry.attempts`` breaks in a row without a new line raise
        :class:`LogStreamBroken`."""
        container = pick_user_container(self.pod)
        while (delay := (yield from self._attempt(container))) is not None:
            # A wait that a stop ends at once; the pod is read again after one (gone: its log too).
            if self.stop.wait(delay) or (delay and not self._refresh()):
                return

    def _attempt(self, container: str) -> Generator[list[LogLine], None, float | None]:
        """Open the log and read it: the seconds to wait before the next attempt, or None to end."""
        if _unscheduled(self.pod):
            return self._not_started("not scheduled to a node")
        try:
            response = self._open(container)
        except KubeNotFound:
            return None
        except KubeError as exc:
            return self._after_refusal(exc, container)
        progress, broken = yield from self._read(response)
        if self.stop.is_set() or (broken is None and not self.options.follow):
            return None
        return self._after_stream(progress=progress, broken=broken)

    def _open(self, container: str) -> urllib3.BaseHTTPResponse:
        """GET the pod's log, unread, with our retries and messages: the client's public
        ``param_serialize``/``call_api``, as ``read_namespaced_pod_log(_preload_content=False)`` does
        it, since that method cannot send ``sinceTime`` (kubernetes 37)."""
        query: list[tuple[str, object]] = [("container", container), ("timestamps", True)]
        # Not followed unless Running: a broken stream of a pod that has ended since is read to its end.
        follow = self.options.follow and _phase(self.pod) == c.POD_RUNNING
        if follow:
            query.append(("follow", True))
        if not self.cursor.started and self.options.tail is not None:
            query.append(("tailLines", self.options.tail))
        if (since := self.cursor.since_time()) is not None:
            query.append(("sinceTime", since))

        def request(_request_timeout: RequestTimeout) -> urllib3.BaseHTTPResponse:
            serialized = self.api.param_serialize(
                "GET",
                _LOG_PATH,
                path_params={"namespace": self.namespace, "name": self.name},
                query_params=query,
                header_params={"Accept": _LOG_ACCEPT},
                auth_settings=["BearerToken"],
            )
            response: Any = self.api.call_api(*serialized, _request_timeout=_request_timeout)
            if not 200 <= int(response.status) <= 299:
                response.read()
                raise ApiException(http_resp=response)
            return cast(urllib3.BaseHTTPResponse, response.response)

        op = KubeOperation("get", "pods/log", self.namespace, self.name)
        host = str(self.api.configuration.host)
        # A follow may stay silent for hours: no read timeout then, like upstream's streaming client.
        timeout = (DEFAULT_REQUEST_TIMEOUT, None if follow else DEFAULT_REQUEST_TIMEOUT)
        body = call(
            request, _request_timeout=timeout, stream=follow, op=op, retry=self.options.retry, host=host
        )
        content_type = str(body.headers.get("Content-Type") or "")
        if content_type.split(";", 1)[0].strip().lower() in _NOT_A_LOG:
            _shutdown(body)
            raise bad_response(op, host, f"a {shown(content_type)} page instead of a log stream {PROXY_HINT}")
        return body

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
        if not self._refresh() or _terminal(self.pod):
            return None
        if (reason := _waiting_reason(self.pod, container)) is not None:
            return self._not_started(reason)
        # It runs now (it started since the request), or the 400 means something else.
        self.failures += 1
        if self.failures >= self.options.retry.attempts:
            raise exc
        return self.options.retry.delay(self.failures)

    def _not_started(self, reason: str) -> float:
        """The container has not started: following, seconds to wait for it; else it is said."""
        if not self.options.follow:
            msg = f"replica {self.name} has not started yet ({reason}): no logs"
            raise ReplicaNotStarted(msg)
        return self.options.poll_interval

    def _after_stream(self, *, progress: bool, broken: Exception | None) -> float | None:
        """After a followed stream ended: seconds to wait (0: the pod was just read), or None to end."""
        if broken is not None:
            self.failures = 1 if progress else self.failures + 1
            if self.failures >= self.options.retry.attempts:
                msg = (
                    f"the log stream of replica '{self.namespace}/{self.name}' broke {self.failures} "
                    f"times in a row without a new line (last: {broken})"
                )
                raise LogStreamBroken(msg) from broken
            return self.options.retry.delay(self.failures)
        # A clean end: the container stopped (or the pod was not Running). A pod that ended is done;
        # a running one restarts its container, which continues in a new stream.
        if _terminal(self.pod) or not self._refresh() or _terminal(self.pod):
            return None
        self.failures = 0
        return 0.0 if progress else self.options.poll_interval

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
    """The replica's lines read in this thread; following, each read is shown before the next."""
    try:
        for batch in reader.batches():
            yield ReplicaLines(reader.name, batch)
            if reader.options.follow:
                yield CAUGHT_UP
    except ReplicaNotStarted as exc:
        yield Notice(str(exc))


def read_app(
    api: k8s.ApiClient, *, app: AppId, namespace: str, options: LogOptions
) -> Generator[LogBatch, None, None]:
    """Every replica's lines in batches, one replica after the other (oldest first), or interleaved
    as they come when following. :class:`AppNotFound` if neither the KService nor a replica exists;
    an app scaled to zero yields a :class:`Notice` (and following waits for a replica)."""
    kservice = kservice_name_of(app)
    replicas = find_replicas(api, namespace=namespace, kservice=kservice, retry=options.retry)
    if not replicas.pods:
        if not replicas.kservice_found:
            msg = f"app {app} not found: no KService '{kservice}' "
            msg += f"and no replica pods in namespace '{namespace}'"
            raise AppNotFound(msg)
        waiting = "; waiting for a replica to start (Ctrl-C to stop)" if options.follow else ""
        yield Notice(f"app {app} has no running replicas (scaled to zero){waiting}")
    if not options.follow:
        for pod in sorted(replicas.pods, key=_age_order):
            yield from _one_replica(ReplicaReader(api, pod, namespace, options))
        return
    yield from _follow(api, namespace=namespace, kservice=kservice, options=options, replicas=replicas)


def _follow(
    api: k8s.ApiClient, *, namespace: str, kservice: str, options: LogOptions, replicas: Replicas
) -> Iterator[ReplicaLines | CaughtUp]:
    """A reader thread per replica, started as replicas appear, feeding a bounded queue (a batch per
    read; an empty one when a reader ends); lines until every replica seen has ended and none is left
    running or starting. This (consuming) thread polls for replicas. ``options.tail`` is history: it
    applies to the replicas that had started when following began; every line of one still pending then,
    or created since, was written since, so it is read from its first line (a poll's delay loses none)."""
    batches: queue.Queue[ReplicaLines] = queue.Queue(_PENDING_READS)
    stop = threading.Event()
    readers: dict[str, tuple[ReplicaReader, threading.Thread]] = {}
    ended: set[str] = set()
    with_history = {str(pod.metadata.name) for pod in replicas.pods if _phase(pod) != c.POD_PENDING}
    from_start = replace(options, tail=None)
    try:
        while True:
            for pod in replicas.pods:
                if (name := str(pod.metadata.name)) not in readers:
                    reading = options if name in with_history else from_start
                    reader = ReplicaReader(api, pod, namespace, reading, stop)
                    thread = threading.Thread(
                        target=_feed, args=(reader, batches), name=f"logs-{name}", daemon=True
                    )
                    readers[name] = (reader, thread)
                    thread.start()
            if readers and len(ended) == len(readers) and all(map(_terminal, replicas.pods)):
                return
            if (gone := (yield from _drain(batches, time.monotonic() + options.poll_interval))) is not None:
                ended.add(gone)  # look at the pods now
                if (error := readers[gone][0].error) is not None:
                    raise error
            replicas = find_replicas(api, namespace=namespace, kservice=kservice, retry=options.retry)
    finally:
        stop.set()
        for reader, _ in readers.values():
            reader.interrupt()
        deadline = time.monotonic() + _JOIN_BUDGET
        for _, thread in readers.values():
            thread.join(max(0.0, deadline - time.monotonic()))


def _drain(
    batches: queue.Queue[ReplicaLines], deadline: float
) -> Generator[ReplicaLines | CaughtUp, None, str | None]:
    """Batches until ``deadline`` or until a reader ends (its replica is returned), and a
    :class:`CaughtUp` each time the queue is empty after lines. (A wait on a queue ends at Ctrl-C.)"""
    unflushed, ended = False, None
    while ended is None and (remaining := deadline - time.monotonic()) > 0:
        if unflushed and batches.empty():
            unflushed = False
            yield CAUGHT_UP
        try:
            item = batches.get(timeout=remaining)
        except queue.Empty:
            break
        if item.lines:
            unflushed = True
            yield item
        else:
            ended = item.replica
    if unflushed:
        yield CAUGHT_UP
    return ended


def _feed(reader: ReplicaReader, batches: queue.Queue[ReplicaLines]) -> None:
    """A reader thread: the replica's batches into the queue, then an empty one (its error, if any,
    kept on the reader for the consuming thread to raise)."""
    try:
        for lines in reader.batches():
            if not _put(batches, ReplicaLines(reader.name, lines), reader.stop):
                return
    except Exception as exc:  # handed over: the consuming thread raises it
        reader.error = exc
    _put(batches, ReplicaLines(reader.name, []), reader.stop)


def _put(batches: queue.Queue[ReplicaLines], item: ReplicaLines, stop: threading.Event) -> bool:
    """Queue ``item``, waiting while the queue is full; False (not queued) once stopped."""
    while not stop.is_set():
        try:
            batches.put(item, timeout=_WAIT_SLICE)
        except queue.Full:
            continue
        return True
    return False
