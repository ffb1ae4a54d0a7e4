"""A watch hub: one list-then-watch of the apps' namespace, fanned out to many subscribers.

Flyte's app service does this with an informer and a map from app NAME to channels (reference
(c)16). This hub keeps its semantics (create/update/delete ``WatchResponse`` events, a bounded
buffer per subscriber whose overflow is dropped with a warning, a subscriber never slows the
others) and fixes its bugs: subscriptions match on the full identity, so two apps called
``myapp`` in different projects do not see each other's events ((j)4); a subscription without a
target gets every app; ``update_event.old_app`` is filled from the cache; a new subscriber gets
the current apps as ``create_event``s atomically with its registration (nothing missed, nothing
twice).

Failure handling: a watch that ends (``timeoutSeconds``) is resumed from the last
resourceVersion. On 410 Gone (as an HTTP answer or as an in-stream ``ERROR`` event) or a dropped
connection, the hub lists again and emits the differences against its cache, by
resourceVersion, as create/update/delete events, then watches from the new list: nothing is
lost and nothing is sent twice.

Replica counts (``read_replicas``): upstream GETs the app's latest ready Revision for every event
((j)20), one API call per event, which bounded the hub at about a hundred events a second. The hub
keeps the namespace's Revisions in a cache of its own instead (a second list-then-watch, of
Revisions, kept only as name -> ``status.actualReplicas``), and reads a Revision only when the cache
does not have it yet (a KService event can arrive before its new Revision's). That needs ``list``
and ``watch`` on ``revisions.serving.knative.dev``; where RBAC refuses them (403), the hub says so
once and GETs the Revision per event, as upstream does. A count comes from the cache as the
Revision watch last reported it, so it can trail the API server by that watch's delay; as upstream,
a change of the count alone does not make an event.

Fan-out: each event is built once and the same message goes to every subscriber it is for (treat
events as read-only). Subscribers are grouped by the identity they asked for, one channel per
identity, so an event costs a few dictionary lookups and one append per interested channel; the
channels' events are handed to their subscribers in batches of up to ``_WAKE_AT`` (at once when the
stream has nothing more waiting), one buffer extend and at most one wake-up per subscriber and batch.
"""

from __future__ import annotations

import http.client
import json
import logging
import select
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any, Final, cast

import urllib3
from flyteidl2.app import app_definition_pb2 as app_pb
from flyteidl2.app import app_payload_pb2 as payload_pb
from flyteidl2.app.app_payload_pb2 import WatchResponse
from kubernetes import client as k8s

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import bounded
from flyte_apps.core.status import (
    AppConversionError,
    app_key,
    is_managed,
    kservice_to_app,
    latest_ready_revision,
)
from flyte_apps.kube.api import custom_resource
from flyte_apps.kube.apps import (
    REVISIONS,
    current_replicas,
    list_kservices,
    list_revision_replicas,
    revision_name,
    revision_replicas,
)
from flyte_apps.kube.bounded import MAX_EVENT_BYTES, bounded_lines
from flyte_apps.kube.errors import KubeBadResponse, KubeError, KubeUnreachable
from flyte_apps.kube.retry import DEFAULT_RETRY, KubeOperation, RetryPolicy, call, describe

log = logging.getLogger(__name__)

DEFAULT_WATCH_TIMEOUT: Final = 300
"""Seconds the API server keeps one watch open before the hub resumes it (client-go's range)."""
_CONNECT_TIMEOUT: Final = 10.0
_READ_GRACE: Final = 15.0
"""A watch is silent between events; the read timeout only has to outlast ``timeoutSeconds``."""
_STREAM_ERRORS: Final = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError, ValueError)
"""What a broken watch stream raises while it is read (ValueError: a truncated JSON line)."""
_HTTP_GONE: Final = 410
_HTTP_FORBIDDEN: Final = 403
_WAKE_AT: Final = 16
"""Events the hub holds back while a backlog streams in, to hand them to every subscriber as one batch
(one buffer extend and at most one wake-up per subscriber; see ``WatchHub._flush``): few enough that a
reader wakes with most of its buffer still free, even on a busy machine. At most half the buffer."""
_YIELD_S: Final = 0.001
"""How long the hub steps aside at a time while a reader it has woken has not run yet and its buffer
fills (see ``WatchHub._flush``)..."""
_YIELD_MAX_S: Final = 0.02
"""... and at most this long per batch: a reader's turn is waited for, never its reading."""
_LAG_DIVISOR: Final = 4
"""A woken reader that has not run lags once a quarter of its buffer is full."""
MAX_BAD_ROUNDS: Final = 5
"""Watch rounds in a row that end on a response of the wrong shape (an event that is not a watch
event, a list that cannot be read) before the hub gives up with a ``KubeBadResponse``: a cluster
(or a proxy) that answers garbage is not waited out."""
DEFAULT_RECONNECT: Final = RetryPolicy(base_delay=0.2, max_delay=5.0)
"""The backoff between watch rounds that fail: 0.2 s, doubling, at most 5 s (``attempts`` unused:
the hub reconnects until it is stopped)."""


# --- targets and subscriptions --------------------------------------------------------------------

_TargetKey = tuple[str | None, str | None, str | None]


def _target_keys(ident: app_pb.Identifier) -> list[_TargetKey]:
    """The keys of every ``WatchTarget`` that matches ``ident``: each field given or left out."""
    return [
        (project, domain, name)
        for project in (ident.project, None)
        for domain in (ident.domain, None)
        for name in (ident.name, None)
    ]


@dataclass(frozen=True)
class WatchTarget:
    """Which apps a subscriber wants: each given field must match (none given: every app)."""

    project: str | None = None
    domain: str | None = None
    name: str | None = None

    def matches(self, ident: app_pb.Identifier) -> bool:
        return (
            (self.project is None or self.project == ident.project)
            and (self.domain is None or self.domain == ident.domain)
            and (self.name is None or self.name == ident.name)
        )

    @property
    def key(self) -> _TargetKey:
        """What the hub indexes subscriptions by."""
        return (self.project, self.domain, self.name)

    def __str__(self) -> str:
        if self.project is None and self.domain is None and self.name is None:
            return "every app"
        return "/".join(part if part is not None else "*" for part in (self.project, self.domain, self.name))


class Subscription:
    """One subscriber's events: the snapshot it joined with, then live events in a bounded buffer.

    ``get`` returns the next event, or None on timeout or once the subscription is closed and
    drained; iterating yields events until ``WatchHub.unsubscribe`` (or ``WatchHub.stop``) closes
    it. Events already buffered when it closes are still delivered.

    The hub hands events over in batches (see ``WatchHub``), and a hundred subscribers made the lock
    rounds and wake-ups the bulk of its work. So the buffers are deques (extend and popleft are
    atomic), taken and filled without a lock; the lock and condition are only for a reader that finds
    nothing and waits, and a delivery wakes a reader only if one is waiting. Deliveries are made under
    the hub's lock, one at a time; a reader registers as waiting before it looks once more, under the
    lock the delivery's wake-up also takes, so no wake-up is lost.
    """

    def __init__(self, target: WatchTarget, capacity: int) -> None:
        self.target = target
        self.capacity = capacity
        self.dropped = 0
        """Live events lost because the buffer was full."""
        self._cond = threading.Condition(threading.Lock())
        self._snapshot: deque[WatchResponse] = deque()
        self._events: deque[WatchResponse] = deque()
        self._closed = False
        self._failure: KubeError | None = None
        self._waiting = 0
        """Readers blocked (or about to block) in ``get``."""

    @property
    def closed(self) -> bool:
        with self._cond:
            return self._closed

    @property
    def failure(self) -> KubeError | None:
        """Why the hub ended this subscription when it gave up (None: stopped, or still open)."""
        with self._cond:
            return self._failure

    def get(self, timeout: float | None = None) -> WatchResponse | None:
        events = self._events
        if events and not self._snapshot:  # the common case, inline: it runs for every event
            try:
                return events.popleft()
            except IndexError:  # another reader of this subscription took it
                pass
        event = self._take()
        if event is not None:
            return event
        with self._cond:
            self._waiting += 1
            try:
                if not (self._snapshot or self._events or self._closed):
                    # Woken only by an event, the snapshot or the close: one wait does.
                    self._cond.wait(timeout)
            finally:
                self._waiting -= 1
        return self._take()

    def _take(self) -> WatchResponse | None:
        """The snapshot first (it was complete before any live event could be delivered), then live
        events. Tested before it is taken: an empty deque's ``popleft`` raises, which costs more than
        the test, and this runs for every event of every subscriber."""
        if self._snapshot:
            try:
                return self._snapshot.popleft()
            except IndexError:  # another reader of this subscription took it
                pass
        try:
            return self._events.popleft()
        except IndexError:
            return None

    def __iter__(self) -> Iterator[WatchResponse]:
        while True:
            event = self.get()
            if event is None:
                return
            yield event

    def _seed(self, events: list[WatchResponse]) -> None:
        with self._cond:
            self._snapshot.extend(events)
            self._cond.notify_all()

    def _deliver(self, batch: list[WatchResponse]) -> int:
        """Non-blocking put of a batch, in order: what fits in the buffer is kept, the rest dropped
        (and counted); returns how many were dropped. Wakes a waiting reader."""
        if self._closed:
            return 0
        events = self._events
        room = self.capacity - len(events)  # only readers shrink it meanwhile: never over capacity
        lost = len(batch) - room
        if lost <= 0:
            events.extend(batch)
            lost = 0
        else:
            events.extend(batch[:room])
            self.dropped += lost
        if self._waiting:
            self._wake()
        return lost

    def _lags(self) -> bool:
        """Woken with events (it waits, yet its buffer is a quarter full) but not run since."""
        return bool(self._waiting) and len(self._events) * _LAG_DIVISOR >= self.capacity

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _close(self, failure: KubeError | None = None) -> None:
        with self._cond:
            self._closed = True
            if failure is not None and self._failure is None:
                self._failure = failure
            self._cond.notify_all()


# --- events ----------------------------------------------------------------------------------------


def create_event(app: app_pb.App) -> WatchResponse:
    return WatchResponse(create_event=payload_pb.CreateEvent(app=app))


def update_event(updated: app_pb.App, old: app_pb.App) -> WatchResponse:
    return WatchResponse(update_event=payload_pb.UpdateEvent(updated_app=updated, old_app=old))


def delete_event(app: app_pb.App) -> WatchResponse:
    return WatchResponse(delete_event=payload_pb.DeleteEvent(app=app))


def event_app(event: WatchResponse) -> app_pb.App:
    """The app an event is about (the updated one for an update)."""
    kind = event.WhichOneof("event")
    if kind == "create_event":
        return event.create_event.app
    if kind == "update_event":
        return event.update_event.updated_app
    return event.delete_event.app


@dataclass(frozen=True)
class _Entry:
    resource_version: str
    app: app_pb.App


@dataclass(frozen=True)
class _Change:
    name: str
    resource_version: str
    app: app_pb.App | None
    """None: the KService is gone, or no longer a (readable) managed app."""


class _Gone(Exception):
    """HTTP 410: the watch's resourceVersion is too old; the hub must list again."""


class _Dropped(Exception):
    """The watch stream broke; the hub lists again, since events may have been lost."""


class _BadEvent(Exception):
    """A line of the watch stream that is not a watch event; the hub lists again, and gives up
    after :data:`MAX_BAD_ROUNDS` rounds in a row."""


def _event(line: bytes | str) -> dict[str, Any]:
    """One line of a watch stream as a watch event, or :class:`_BadEvent` saying what is wrong."""
    try:
        event = json.loads(line)
    except ValueError as exc:
        msg = f"an event that is not JSON ({bounded(str(exc))}): {describe(line)}"
        raise _BadEvent(msg) from exc
    problem = None
    obj = event.get("object") if isinstance(event, dict) else None
    if not isinstance(event, dict):
        problem = f"an event that is not a JSON object: {describe(event)}"
    elif not isinstance(obj, dict):
        problem = f"an event whose 'object' is not a JSON object: {describe(obj)}"
    elif obj.get("metadata") is not None and not isinstance(obj["metadata"], dict):
        problem = f"an event whose object's 'metadata' is not a JSON object: {describe(obj.get('metadata'))}"
    if problem is not None:
        raise _BadEvent(problem)
    return cast(dict[str, Any], event)


# --- one list-then-watch loop ------------------------------------------------------------------------


class _ListWatch:
    """One kind's list-then-watch loop, run in a thread of its own until ``stopping`` is set.

    ``relist`` lists everything (applying it to whatever cache the owner keeps) and returns the
    list's resourceVersion; ``handle`` applies one ``ADDED``/``MODIFIED``/``DELETED`` event, and
    ``idle`` is called whenever no more of the stream is waiting to be read (and when it ends). A watch
    that ends (``timeoutSeconds``) is resumed from the last resourceVersion; 410 Gone or a broken
    stream lists again; other failures back off (``reconnect``) and list again. ``refused`` is
    asked about every ``KubeError`` first: True ends the loop (the owner has given up on this kind).
    After :data:`MAX_BAD_ROUNDS` rounds in a row that end on a response of the wrong shape, the
    loop ends and hands a :class:`KubeBadResponse` to ``give_up``.
    """

    def __init__(
        self,
        *,
        client: Callable[[], k8s.ApiClient],
        namespace: str,
        plural: str,
        relist: Callable[[], str],
        handle: Callable[[str, Mapping[str, Any]], None],
        refused: Callable[[KubeError], bool],
        retry: RetryPolicy,
        reconnect: RetryPolicy,
        watch_timeout: int,
        stopping: threading.Event,
        give_up: Callable[[KubeError], None],
        idle: Callable[[], None] = lambda: None,
    ) -> None:
        self._client = client
        self._give_up = give_up
        self.namespace = namespace
        self._plural = plural
        self._resource = custom_resource(c.KNATIVE_GROUP, plural)
        self._relist_fn = relist
        self._handle_fn = handle
        self._refused = refused
        self._idle = idle
        self._retry = retry
        self._reconnect = reconnect
        self._watch_timeout = watch_timeout
        self._stopping = stopping
        self._lock = threading.Lock()
        self._resource_version = ""
        self._progress = False
        self._response: Any = None
        self._thread: threading.Thread | None = None

    def relist(self) -> None:
        """List now (raises ``KubeError``); the next watch starts from this list."""
        version = self._relist_fn()
        with self._lock:
            self._resource_version = version

    def start(self, name: str, *, listed: bool) -> None:
        """Watch from a thread called ``name``; ``listed`` False lists first."""
        self._thread = threading.Thread(
            target=self._run, kwargs={"must_list": not listed}, name=name, daemon=True
        )
        self._thread.start()

    def interrupt(self) -> None:
        """Unblock a watch being read (``stopping`` must already be set)."""
        with self._lock:
            response = self._response
        _interrupt(response)

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self, *, must_list: bool) -> None:
        failures = 0  # consecutive rounds that failed without delivering anything
        bad = 0  # consecutive rounds that ended on a response of the wrong shape
        while not self._stopping.is_set():
            self._progress = False
            try:
                if must_list:
                    self.relist()
                    must_list = False
                self._watch_once()
                failures = bad = 0
                continue
            except _Gone as exc:
                log.info("watch of %s in %s expired (%s); listing again", self._resource, self.namespace, exc)
                routine = True
            except _Dropped as exc:
                log.info("watch of %s in %s broke (%s); listing again", self._resource, self.namespace, exc)
                routine = True
            except (_BadEvent, KubeBadResponse) as exc:
                bad = 1 if self._progress else bad + 1
                if self._stopping.is_set() or self._bad_round(exc, bad):
                    break
                routine = False
            except KubeError as exc:
                if self._stopping.is_set() or self._refused(exc):
                    break
                log.warning("watching %s in namespace %s: %s; retrying", self._resource, self.namespace, exc)
                routine = False
            except Exception as exc:  # never let the thread die silently (an object of the wrong shape)
                bad = 1 if self._progress else bad + 1
                cause = f"{type(exc).__name__}: {bounded(str(exc))}"
                if self._stopping.is_set() or self._bad_round(cause, bad):
                    break
                routine = False
            must_list = True
            failures = 1 if self._progress else failures + 1
            delay = self._backoff(failures, routine=routine)
            if delay:
                self._reconnect.sleep(delay)

    def _bad_round(self, cause: object, bad: int) -> bool:
        """Say why the loop lists again; True (after ``give_up``) when it has seen
        :data:`MAX_BAD_ROUNDS` bad rounds in a row."""
        if bad < MAX_BAD_ROUNDS:
            log.warning(
                "watch of %s in namespace %s: %s; listing again", self._resource, self.namespace, cause
            )
            return False
        self._give_up(
            KubeBadResponse(
                f"watch of {self._resource} in namespace '{self.namespace}' gave up after {bad} bad "
                f"responses in a row; the last: {cause}"
            )
        )
        return True

    def _backoff(self, failures: int, *, routine: bool) -> float:
        """No wait after a first 410 or broken stream (routine); ``reconnect``'s exponential
        backoff after that, starting from its base delay at the second failure in a row (or at
        the first failure that is not routine)."""
        if routine and failures <= 1:
            return 0.0
        return self._reconnect.delay(max(1, failures - 1))

    def _watch_once(self) -> None:
        """One watch from the last resourceVersion, until the server ends it (or ``stop``)."""
        api = self._client()
        try:
            response = call(
                k8s.CustomObjectsApi(api).list_namespaced_custom_object,
                c.KNATIVE_GROUP,
                c.KNATIVE_VERSION,
                self.namespace,
                self._plural,
                watch=True,
                allow_watch_bookmarks=True,
                resource_version=self._resource_version or None,
                timeout_seconds=self._watch_timeout,
                _preload_content=False,
                _request_timeout=(_CONNECT_TIMEOUT, self._watch_timeout + _READ_GRACE),
                stream=True,
                op=KubeOperation("watch", self._resource, self.namespace),
                retry=self._retry,
                host=str(api.configuration.host),
            )
        except KubeError as exc:
            if exc.status == _HTTP_GONE:
                raise _Gone(str(exc)) from exc
            raise
        with self._lock:
            self._response = response
        try:
            if self._stopping.is_set():
                return
            for line in _lines(response):
                if self._stopping.is_set():
                    return
                if line.strip():
                    self._handle(_event(line))
                if not _more_waiting(response):
                    self._idle()
        except _STREAM_ERRORS as exc:
            if self._stopping.is_set():
                return
            raise _Dropped(_describe(exc)) from exc
        finally:
            self._idle()
            with self._lock:
                self._response = None
            _release(response)

    def _handle(self, event: Mapping[str, Any]) -> None:
        kind = str(event.get("type") or "")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = obj.get("code")
            message = str(obj.get("message") or obj)
            if code == _HTTP_GONE:
                raise _Gone(message)
            msg = f"watch of {self._resource} in namespace '{self.namespace}' failed: HTTP {code} ({message})"
            raise KubeError(msg, status=code if isinstance(code, int) else None)
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self._handle_fn(kind, obj)
        self._progress = True
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if version:
            self._resource_version = version  # BOOKMARKs only move the resourceVersion


# --- the Revision cache ------------------------------------------------------------------------------


class _RevisionReplicas:
    """The hub's cache of the namespace's Revisions, as name -> ``status.actualReplicas``.

    Kept by a list-then-watch of its own (``_ListWatch``). Until the first list succeeds, and for
    good once RBAC has refused ``list`` or ``watch`` on Revisions (said once, as a warning), it
    knows nothing and the hub GETs each Revision it needs, as upstream does."""

    def __init__(
        self,
        client: Callable[[], k8s.ApiClient],
        *,
        namespace: str,
        retry: RetryPolicy,
        reconnect: RetryPolicy,
        watch_timeout: int,
        stopping: threading.Event,
        give_up: Callable[[KubeError], None],
    ) -> None:
        self.namespace = namespace
        self._client = client
        self._retry = retry
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._synced = False
        self._refused_once = False
        self._first_failure: KubeError | None = None
        self._loop = _ListWatch(
            client=client,
            namespace=namespace,
            plural=c.REVISION_PLURAL,
            relist=self._relist,
            handle=self._handle,
            refused=self._refused,
            retry=retry,
            reconnect=reconnect,
            watch_timeout=watch_timeout,
            stopping=stopping,
            give_up=give_up,
        )

    @property
    def refused(self) -> bool:
        """RBAC refused listing or watching Revisions: the hub reads them one by one."""
        with self._lock:
            return self._refused_once

    def prime(self) -> None:
        """The first list, before the hub lists KServices (so that they find their Revisions). It
        says nothing and starts nothing: a failure is kept for :meth:`launch`, so a hub that cannot
        start (its KService list fails too) ends with that one error, not with warnings about
        Revisions in front of it. A cluster that does not answer (:class:`KubeUnreachable`) is the
        hub's failure at once: the ``--request-timeout`` it took bounds the whole start."""
        try:
            self._loop.relist()
        except KubeUnreachable:
            raise  # the cluster did not answer within the timeout: the KServices' list would wait again
        except KubeError as exc:
            self._first_failure = exc
        else:
            self._first_failure = None

    def launch(self) -> None:
        """Once the hub has started: watch from :meth:`prime`'s list; or, if that list failed, say
        so (a refusal, once, for good; another failure is retried in the background)."""
        failure = self._first_failure
        if failure is None:
            self._loop.start("flyte-apps-watch-revisions", listed=True)
            return
        if self._refused(failure):
            return
        log.warning(
            "listing %s in namespace %s: %s; reading Revisions one by one until it works",
            REVISIONS,
            self.namespace,
            failure,
        )
        self._loop.start("flyte-apps-watch-revisions", listed=False)

    def stop(self, timeout: float) -> None:
        self._loop.interrupt()
        self._loop.join(timeout)

    def get(self, name: str) -> int | None:
        """The cached replica count of Revision ``name``; None when the cache cannot tell."""
        with self._lock:
            return self._counts.get(name) if self._synced else None

    def _relist(self) -> str:
        counts, version = list_revision_replicas(self._client(), self.namespace, retry=self._retry)
        with self._lock:
            self._counts = counts
            self._synced = True
        return version

    def _handle(self, kind: str, obj: Mapping[str, Any]) -> None:
        name = revision_name(obj)
        with self._lock:
            if kind == "DELETED":
                self._counts.pop(name, None)
            else:
                self._counts[name] = revision_replicas(obj)

    def _refused(self, exc: KubeError) -> bool:
        if exc.status != _HTTP_FORBIDDEN:
            return False
        with self._lock:
            first = not self._refused_once
            self._refused_once = True
            self._synced = False
            self._counts = {}
        if first:
            log.warning(
                "%s; reading each app's Revision per event instead (grant list and watch on %s in "
                "namespace %s to avoid an API call per event)",
                exc,
                REVISIONS,
                self.namespace,
            )
        return True


# --- the hub -----------------------------------------------------------------------------------------


class WatchHub:
    """One list-then-watch of every KService in ``namespace``, feeding all subscribers.

    ``start`` lists synchronously (so a cluster that cannot be reached or read fails there, as a
    ``KubeError``), then watches from a background thread until ``stop``. The watch has no label
    selector: a KService that loses ``flyte.org/app-managed`` then arrives as a modification the
    hub can turn into a delete event (an API server filtering on labels would only do that from
    its watch cache). With ``read_replicas``, a second list-then-watch keeps the Revisions' replica
    counts (see the module's docstring).

    ``retry`` governs each API call (list, watch, replica reads); ``reconnect`` is the backoff
    between rounds that fail (its ``base_delay`` and ``max_delay``; ``attempts`` is unused, the
    hub keeps trying until ``stop``). Both wait on the stop event, so ``stop`` never waits one out.
    """

    def __init__(
        self,
        client_factory: Callable[[], k8s.ApiClient],
        *,
        namespace: str,
        base_domain: str = "",
        scheme: str = "https",
        ingress_apps_port: int = 0,
        buffer_size: int = 100,
        watch_timeout_seconds: int = DEFAULT_WATCH_TIMEOUT,
        retry: RetryPolicy = DEFAULT_RETRY,
        reconnect: RetryPolicy = DEFAULT_RECONNECT,
        read_replicas: bool = True,
    ) -> None:
        if buffer_size < 1:
            msg = "buffer_size must be at least 1"
            raise ValueError(msg)
        self._client_factory = client_factory
        self.namespace = namespace
        self._base_domain = base_domain
        self._scheme = scheme
        self._ingress_apps_port = ingress_apps_port
        self._buffer_size = buffer_size
        self._stopping = threading.Event()
        # Our retries wait on the stop event, so ``stop`` never waits out a backoff.
        self._retry = replace(retry, sleep=self._wait)
        reconnect = replace(reconnect, sleep=self._wait)
        self._lock = threading.Lock()
        self._cache: dict[str, _Entry] = {}
        self._ignored: dict[str, str] = {}
        self._subscriptions: set[Subscription] = set()
        self._channels: dict[_TargetKey, _Channel] = {}
        """Subscriptions by the identity they asked for (None: any)."""
        self._held: list[_Channel] = []
        """Channels with events not yet handed to their subscribers (see ``_flush``)."""
        self._held_events = 0
        self._batch = max(1, min(_WAKE_AT, buffer_size // 2))
        """Events held back at most before a batch is handed over."""
        self._relists = 0
        self._failure: KubeError | None = None
        self._api: k8s.ApiClient | None = None
        self._api_lock = threading.Lock()
        self._started = False
        self._kservices = _ListWatch(
            client=self._client,
            namespace=namespace,
            plural=c.KSERVICE_PLURAL,
            relist=self._relist,
            handle=self._handle,
            refused=lambda _exc: False,
            retry=self._retry,
            reconnect=reconnect,
            watch_timeout=watch_timeout_seconds,
            stopping=self._stopping,
            give_up=self._give_up,
            idle=self._flush_held,
        )
        self._revisions = (
            _RevisionReplicas(
                self._client,
                namespace=namespace,
                retry=self._retry,
                reconnect=reconnect,
                watch_timeout=watch_timeout_seconds,
                stopping=self._stopping,
                give_up=self._give_up,
            )
            if read_replicas
            else None
        )

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """List the namespace (raising ``KubeError`` on failure), then watch in the background."""
        if self._started:
            return
        try:
            if self._revisions is not None:
                self._revisions.prime()  # first, so the KServices listed next find their Revisions
            self._kservices.relist()
        except BaseException:
            self._stopping.set()  # nothing watches yet, and the Revisions' list said nothing
            self._close_client()
            raise
        self._started = True
        if self._revisions is not None:
            self._revisions.launch()
        self._kservices.start("flyte-apps-watch-hub", listed=True)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching, end every subscription and close the client."""
        self._stopping.set()
        with self._lock:
            self._flush()  # what was dispatched before is delivered, as an event never held back
            subscriptions, self._subscriptions = self._subscriptions, set()
            self._channels = {}
        self._kservices.interrupt()
        if self._revisions is not None:
            self._revisions.stop(timeout)
        self._kservices.join(timeout)
        for subscription in subscriptions:
            subscription._close()
        self._close_client()

    def __enter__(self) -> WatchHub:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def failure(self) -> KubeError | None:
        """Why the hub gave up watching (None while it watches, or after a plain ``stop``)."""
        with self._lock:
            return self._failure

    @property
    def relists(self) -> int:
        """How many times the hub has listed KServices (1 after ``start``; each 410 or broken stream
        adds one)."""
        with self._lock:
            return self._relists

    @property
    def reads_revisions_per_event(self) -> bool:
        """True when RBAC refused the Revision cache, so each event with a ready Revision costs a GET."""
        return self._revisions is not None and self._revisions.refused

    def apps(self) -> list[app_pb.App]:
        """The cached apps (copies), sorted by identity."""
        with self._lock:
            entries = list(self._cache.values())
        return [_copy(entry.app) for entry in sorted(entries, key=lambda e: _sort_key(e.app))]

    # --- subscriptions ---------------------------------------------------------------------------

    def subscribe(self, target: WatchTarget | None = None) -> Subscription:
        """Register a subscriber; it first gets every matching cached app as a ``create_event``."""
        target = target or WatchTarget()
        subscription = Subscription(target, self._buffer_size)
        with self._lock:
            self._flush()  # events held back are in the snapshot: only the subscribers before get them
            entries = sorted(self._cache.values(), key=lambda e: _sort_key(e.app))
            subscription._seed(
                [create_event(entry.app) for entry in entries if target.matches(entry.app.metadata.id)]
            )
            if self._stopping.is_set():
                subscription._close(self._failure)
            else:
                self._subscriptions.add(subscription)
                channel = self._channels.get(target.key)
                if channel is None:
                    channel = self._channels[target.key] = _Channel()
                channel.subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """No more events for ``subscription``; its iteration ends after what is buffered."""
        with self._lock:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)
                channel = self._channels[subscription.target.key]
                channel.subscriptions.remove(subscription)
                if not channel.subscriptions:
                    del self._channels[subscription.target.key]
        subscription._close()

    # --- KService events ---------------------------------------------------------------------------

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def _give_up(self, failure: KubeError) -> None:
        """A watch loop gave up (the cluster keeps answering garbage): stop, and end every
        subscription with ``failure``, which its reader raises (``watch`` exits 3)."""
        with self._lock:
            if self._failure is None:
                self._failure = failure
            self._flush()
            subscriptions, self._subscriptions = self._subscriptions, set()
            self._channels = {}
        self._stopping.set()
        for subscription in subscriptions:
            subscription._close(failure)

    def _handle(self, kind: str, obj: Mapping[str, Any]) -> None:
        if kind == "DELETED":
            metadata = obj.get("metadata") or {}
            name = str(metadata.get("name") or "")
            self._ignored.pop(name, None)
            self._apply([_Change(name, str(metadata.get("resourceVersion") or ""), None)], later=True)
        else:
            self._apply([self._change(obj)], later=True)

    def _relist(self) -> str:
        """List everything and emit what differs from the cache (by resourceVersion)."""
        items, version = list_kservices(
            self._client(), self.namespace, label_selector=None, retry=self._retry
        )
        present = {str((obj.get("metadata") or {}).get("name") or "") for obj in items}
        changes = [self._change(obj) for obj in items if not self._unchanged(obj)]
        changes.extend(_Change(name, "", None) for name in list(self._cache) if name not in present)
        for name in [name for name in self._ignored if name not in present]:
            del self._ignored[name]
        self._apply(changes)
        with self._lock:
            self._relists += 1
        return version

    def _unchanged(self, obj: Mapping[str, Any]) -> bool:
        metadata = obj.get("metadata") or {}
        name, version = str(metadata.get("name") or ""), str(metadata.get("resourceVersion") or "")
        entry = self._cache.get(name)  # only this thread writes the cache
        return (entry is not None and entry.resource_version == version) or self._ignored.get(name) == version

    def _change(self, obj: Mapping[str, Any]) -> _Change:
        """Convert outside the lock (it may read the Revision); None app = not an app (any more)."""
        metadata = obj.get("metadata") or {}
        name, version = str(metadata.get("name") or ""), str(metadata.get("resourceVersion") or "")
        entry = self._cache.get(name)
        if entry is not None and entry.resource_version == version:
            return _Change(name, version, entry.app)  # a replayed event: nothing new
        if not is_managed(obj):
            self._ignored[name] = version
            return _Change(name, version, None)
        try:
            app = kservice_to_app(
                obj,
                base_domain=self._base_domain,
                scheme=self._scheme,
                ingress_apps_port=self._ingress_apps_port,
                current_replicas=self._replicas(obj),
                now=datetime.now(UTC),
            )
        except AppConversionError as exc:
            if self._ignored.get(name) != version:
                log.warning("skipping KService: %s", exc)
            self._ignored[name] = version
            return _Change(name, version, None)
        self._ignored.pop(name, None)
        return _Change(name, version, app)

    def _replicas(self, obj: Mapping[str, Any]) -> int:
        """The latest ready Revision's replica count: from the cache, else one GET (0 without
        ``read_replicas`` or a ready Revision)."""
        if self._revisions is None:
            return 0
        revision = latest_ready_revision(obj)
        if revision is None:
            return 0
        cached = self._revisions.get(revision)
        if cached is not None:
            return cached
        return current_replicas(self._client(), self.namespace, obj, retry=self._retry)

    def _flush_held(self) -> None:
        """Hand the events held back to their subscribers (the watch stream has nothing more waiting)."""
        with self._lock:
            self._flush()  # no more events are coming now: no need to step aside

    def _apply(self, changes: list[_Change], *, later: bool = False) -> None:
        """Update the cache and fan the events out, under the lock ``subscribe`` also takes; with
        ``later``, the events may be held back until a batch is full or :meth:`_flush_held`."""
        with self._lock:
            for change in changes:
                entry = self._cache.get(change.name)
                if change.app is None:
                    if entry is not None:
                        del self._cache[change.name]
                        self._dispatch(entry.app, delete_event)
                    continue
                if entry is not None and entry.resource_version == change.resource_version:
                    continue
                self._cache[change.name] = _Entry(change.resource_version, change.app)
                if entry is None:
                    self._dispatch(change.app, create_event)
                elif app_key(entry.app.metadata.id) != app_key(change.app.metadata.id):
                    self._dispatch(entry.app, delete_event)  # the KService now holds another app
                    self._dispatch(change.app, create_event)
                else:
                    self._dispatch(change.app, partial(update_event, old=entry.app))
            lagging = self._flush() if not later or self._held_events >= self._batch else []
        waited = 0.0
        while lagging and waited < _YIELD_MAX_S and not self._stopping.wait(_YIELD_S):
            waited += _YIELD_S
            lagging = [subscription for subscription in lagging if subscription._lags()]

    def _dispatch(self, app: app_pb.App, make: Callable[[app_pb.App], WatchResponse]) -> None:
        """Queue the event on every matching channel (under the lock): built once, for the first of
        them, and shared."""
        event: WatchResponse | None = None
        channels = self._channels
        for key in _target_keys(app.metadata.id):
            channel = channels.get(key)
            if channel is None:
                continue
            if event is None:
                event = make(app)
                self._held_events += 1
            if not channel.pending:
                self._held.append(channel)
            channel.pending.append(event)

    def _flush(self) -> list[Subscription]:
        """Non-blocking delivery of the events held back (under the lock): each channel's batch to
        each of its subscribers in one go; a full buffer drops the rest of the batch, with a warning
        per event.

        Returns the readers that lag: each still waits although it holds more than this batch, so an
        earlier batch woke it and it has not run since, and its buffer is a quarter full. That happens
        on a busy machine, when the hub's thread keeps the interpreter while a hundred woken readers
        wait for it; the caller then steps aside (outside the lock, :data:`_YIELD_S` at a time, at
        most :data:`_YIELD_MAX_S`) until they have run, so that they do before their buffers fill. A
        subscriber that never reads never waits, so it never makes the hub step aside."""
        held, self._held = self._held, []
        self._held_events = 0
        lagging: list[Subscription] = []
        for channel in held:
            batch, channel.pending = channel.pending, []
            for subscription in channel.subscriptions:
                lost = subscription._deliver(batch)
                for event in batch[len(batch) - lost :] if lost else ():
                    ident = app_key(event_app(event).metadata.id)
                    log.warning("subscriber buffer full, dropping update for app: %s", ident)
                if len(subscription._events) > len(batch) and subscription._lags():
                    lagging.append(subscription)  # more than this batch: an earlier one woke it
        return lagging

    def _client(self) -> k8s.ApiClient:
        with self._api_lock:
            if self._api is None:
                self._api = self._client_factory()
            return self._api

    def _close_client(self) -> None:
        with self._api_lock:
            api, self._api = self._api, None
        if api is not None:
            cast(Callable[[], None], api.close)()


class _Channel:
    """The subscriptions that asked for one identity, and the events held back for them."""

    __slots__ = ("pending", "subscriptions")

    def __init__(self) -> None:
        self.subscriptions: list[Subscription] = []
        self.pending: list[WatchResponse] = []


def _sort_key(app: app_pb.App) -> tuple[str, str, str]:
    ident = app.metadata.id
    return (ident.project, ident.domain, ident.name)


def _copy(app: app_pb.App) -> app_pb.App:
    copied = app_pb.App()
    copied.CopyFrom(app)
    return copied


def _more_waiting(response: Any) -> bool:
    """Whether more of the stream has already arrived (the socket is readable right now). Data
    the HTTP layer has already buffered is not seen, so this can say no too soon, never yes."""
    try:
        poller = select.poll()
        poller.register(response.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll() on this platform, or a closed stream
        return False


def _lines(response: Any) -> Iterator[str]:
    """The stream's lines, each an event of at most :data:`MAX_EVENT_BYTES` (a longer one is
    :class:`~flyte_apps.kube.bounded.ResponseTooLarge`: a bad round)."""
    for line in bounded_lines(response, limit=MAX_EVENT_BYTES):
        yield line.decode("utf-8", "replace")


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _interrupt(response: Any) -> None:
    """Unblock a thread reading ``response`` (shut the socket down for reading)."""
    if response is None:
        return
    try:
        response.shutdown()
    except Exception:  # already released, or an urllib3 without shutdown(): close instead
        try:
            response.close()
        except Exception:
            log.debug("could not interrupt the watch stream", exc_info=True)


def _release(response: Any) -> None:
    try:
        response.close()
        response.release_conn()
    except Exception:
        log.debug("could not release the watch connection", exc_info=True)
