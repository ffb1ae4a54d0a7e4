"""A watch hub: one list-then-watch of the apps' namespace, fanned out to many subscribers.

Flyte's app service keeps an informer and a map from app NAME to channels (reference (c)16). The hub
keeps its create/update/delete events and bounded buffers, and fixes its bugs: subscriptions match on
the full identity ((j)4), ``update_event.old_app`` is filled in, and a new subscriber gets the current
apps as ``create_event``s atomically with its registration (nothing missed, nothing twice).

A :class:`_ListWatch` per kind lists, then watches, in a thread of its own; after 410 Gone or a broken
stream it lists again, and hands the hub only what changed. Each event is built once
(treat it as read-only) and put in every matching :class:`Subscription`'s bounded buffer (which
says what a full one does). A second loop keeps the Revisions' replica counts, so an event costs no
API call (upstream GETs a Revision per event, (j)20)."""

from __future__ import annotations

import http.client
import json
import logging
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from http import HTTPStatus
from typing import Any, Final, NamedTuple, cast

import urllib3
from flyteidl2.app import app_definition_pb2 as app_pb
from flyteidl2.app.app_payload_pb2 import WatchResponse
from kubernetes import client as k8s

from flyte_apps.core import constants as c
from flyte_apps.core import status
from flyte_apps.core.bounds import bounded
from flyte_apps.kube import apps as kube_apps
from flyte_apps.kube.api import custom_resource
from flyte_apps.kube.bounded import MAX_EVENT_BYTES, ResponseTooLarge, bounded_lines
from flyte_apps.kube.errors import KubeBadResponse, KubeError, KubeUnreachable
from flyte_apps.kube.retry import DEFAULT_RETRY, KubeOperation, RetryPolicy, call, describe

log = logging.getLogger(__name__)

DEFAULT_WATCH_TIMEOUT: Final = 300
"""Seconds the API server keeps one watch open before the hub resumes it (client-go's range)."""
_CONNECT_TIMEOUT: Final = 10.0
_READ_GRACE: Final = 15.0  # a watch is silent between events: the read timeout outlasts timeoutSeconds
_STREAM_ERRORS: Final = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError, ValueError)
"""What a broken watch stream raises while it is read (ValueError: a read of a closed response)."""
MAX_BAD_ROUNDS: Final = 5
"""Rounds in a row ending on an answer of the wrong shape before the hub gives up (not waited out)."""
DEFAULT_RECONNECT: Final = RetryPolicy(base_delay=0.2, max_delay=5.0)
"""The backoff between watch rounds that fail: 0.2 s, doubling, at most 5 s (``attempts`` unused)."""

_DROPPED: Final = "subscriber buffer full, dropping update for app: %s"
_ROOM_WAIT_S: Final = 1.0  # how long a full queue waits for its reader to take an event (Subscription)
_Key = tuple[str | None, str | None, str | None]  # a WatchTarget's fields: the target is its own key


class WatchTarget(NamedTuple):
    """Which apps a subscriber wants: each given field must match (none given: every app)."""

    project: str | None = None
    domain: str | None = None
    name: str | None = None

    def __str__(self) -> str:
        shown = "/".join(part if part is not None else "*" for part in self)
        return shown if self != (None, None, None) else "every app"


def _key(app: app_pb.App) -> _Key:
    """The exact target of ``app``."""
    i = app.metadata.id
    return i.project, i.domain, i.name


def _targets(key: _Key) -> list[_Key]:
    """Every target that matches an app's ``key`` (each field given or left out), the exact one first."""
    project, domain, name = key
    return [(p, d, n) for p in (project, None) for d in (domain, None) for n in (name, None)]


def event_app(event: WatchResponse) -> app_pb.App:
    """The app an event is about (the updated one for an update)."""
    kind = event.WhichOneof("event")
    return event.update_event.updated_app if kind == "update_event" else getattr(event, kind).app


class Subscription:
    """One subscriber's events: the snapshot it joined with, then live events in a bounded queue.

    ``get`` returns the next event, or None on timeout or once closed and drained (the reader is one
    thread). At most ``capacity`` live events wait. A live event that finds them full waits for the
    reader to take one, for up to ``_ROOM_WAIT_S`` at a time, as long as it does: a reader that keeps
    reading, however slowly, loses nothing. If it takes none in that time, the event is dropped for it
    alone (counted in ``dropped``; the oldest are kept), and so is every event that finds the queue
    full until it reads again: one that stopped reading costs the hub one wait. ``offer`` and
    ``close`` are the hub's side; ``failure``: why the hub gave up."""

    def __init__(self, target: WatchTarget, capacity: int, snapshot: list[WatchResponse]) -> None:
        self.target, self.capacity, self.dropped, self.closed = target, capacity, 0, False
        self.failure: KubeError | None = None
        self._snapshot = deque(snapshot)
        # One more place than events: the end (None) always fits, after what is queued.
        self._queue: queue.Queue[WatchResponse | None] = queue.Queue(maxsize=capacity + 1)
        self._taken = threading.Event()  # set by the reader each time it takes an event
        self._stalled = False  # a wait for room ran out: no more waits until the reader takes one
        self._ended = False  # the reader has met the end
        self._closing = threading.Lock()

    def get(self, timeout: float | None = None) -> WatchResponse | None:
        if self._snapshot:
            return self._snapshot.popleft()
        if self._ended:
            return None
        try:
            event = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        if event is None:
            self._ended = True
            return None
        self._stalled = False
        self._taken.set()
        return event

    def __iter__(self) -> Iterator[WatchResponse]:
        while (event := self.get()) is not None:
            yield event

    def offer(self, event: WatchResponse) -> bool:
        """Queue a live event, waiting for room while the reader reads; False if it was dropped."""
        if self._queue.qsize() >= self.capacity and not self._room_made():
            self.dropped += 1
            return False
        if not self.closed:
            self._queue.put_nowait(event)  # the hub is the one producer: the room it saw is still there
        return True

    def _room_made(self) -> bool:
        """Whether the reader took an event to make room (the class says how long this waits)."""
        while not self._stalled:
            self._taken.clear()  # before looking: a take after the look is not missed
            if self._queue.qsize() < self.capacity or self.closed:
                return True
            if not self._taken.wait(_ROOM_WAIT_S):
                self._stalled = True
        return self.closed

    def close(self, failure: KubeError | None = None) -> None:
        """End the subscription after what is queued (``failure``: why, if the hub gave up)."""
        with self._closing:  # the hub's thread and the reader's may both close it: one end
            if self.closed:
                return
            self.failure = self.failure or failure
            self.closed = True
            self._queue.put_nowait(None)
        self._taken.set()  # a hub waiting for room stops waiting


class _Relist(Exception):
    """The watch cannot go on from its resourceVersion (410 Gone, a broken stream): list again."""


def _parse(line: bytes) -> tuple[str, dict[str, Any]]:
    """One line of a watch stream as (type, object), or ``KubeBadResponse`` saying what is wrong."""
    try:
        event = json.loads(line)
    except ValueError as exc:
        msg = f"an event that is not JSON ({bounded(str(exc))}): {describe(line)}"
        raise KubeBadResponse(msg) from exc
    if not isinstance(event, dict):
        msg = f"an event that is not a JSON object: {describe(event)}"
    elif not isinstance(event.get("object"), dict):
        msg = f"an event whose 'object' is not a JSON object: {describe(event.get('object'))}"
    else:
        return str(event.get("type") or ""), event["object"]
    raise KubeBadResponse(msg)


def _name_version(obj: Mapping[str, Any]) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("name") or ""), str(metadata.get("resourceVersion") or "")


@dataclass(frozen=True)
class _Watching:  # what the list-then-watch loops of one hub share
    client: k8s.ApiClient
    namespace: str
    retry: RetryPolicy
    reconnect: RetryPolicy
    timeout: int
    stopping: threading.Event
    give_up: Callable[[KubeError], None]


class _ListWatch:
    """One kind's list-then-watch loop, in a thread of its own until ``stopping`` is set. It keeps the
    resourceVersion of each object by name and hands every change to ``change(name, obj)`` (None: gone),
    once per version, so a relist hands over only what differs. ``refused`` may end the loop on a
    ``KubeError``. A first 410 or broken
    stream lists again at once, other failures wait ``reconnect``'s backoff; :data:`MAX_BAD_ROUNDS`
    answers of the wrong shape in a row end the loop and the hub."""

    def __init__(
        self,
        w: _Watching,
        plural: str,
        change: Callable[[str, dict[str, Any] | None], None],
        refused: Callable[[KubeError], bool] = lambda _: False,
    ) -> None:
        self.w, self.plural, self.change, self.refused = w, plural, change, refused
        self.resource = custom_resource(c.KNATIVE_GROUP, plural)
        self.where = f"{self.resource} in namespace '{w.namespace}'"
        self.versions: dict[str, str] = {}  # of what ``change`` has been given, by name
        self.relists, self.version = 0, ""  # version: where the next watch starts (none: list first)
        self.failures = self.bad = 0  # rounds in a row that failed; that ended on a bad answer
        self._response: urllib3.BaseHTTPResponse | None = None
        self.thread = threading.Thread(target=self._run, name=f"flyte-apps-watch-{plural}", daemon=True)

    def relist(self) -> None:
        """List everything (raises ``KubeError``); the next watch starts from this list."""
        w = self.w
        items, version = kube_apps.list_knative(w.client, w.namespace, self.plural, retry=w.retry)
        for obj in items:
            self._apply("MODIFIED", obj)
        listed = {_name_version(obj)[0] for obj in items}
        for name in [name for name in self.versions if name not in listed]:
            self._apply("DELETED", {"metadata": {"name": name}})
        self.version, self.relists = version, self.relists + 1

    def _apply(self, kind: str, obj: dict[str, Any]) -> None:
        """Hand one ADDED, MODIFIED or DELETED object to ``change``, unless it has been already."""
        name, version = _name_version(obj)
        if kind == "DELETED" and name in self.versions:
            self.change(name, None)
            del self.versions[name]
        elif kind != "DELETED" and self.versions.get(name) != version:  # else replayed, or unchanged
            self.change(name, obj)  # first: if it raises, the relist that follows hands it over again
            self.versions[name] = version

    def stop(self, timeout: float) -> None:
        """Unblock a watch being read and wait for the thread (``stopping`` must already be set)."""
        with suppress(ValueError, RuntimeError, OSError):  # released meanwhile: nothing to unblock
            if (response := self._response) is not None:
                response.shutdown()
        if self.thread.ident is not None:
            self.thread.join(timeout)

    def _run(self) -> None:
        while not self.w.stopping.is_set():
            try:
                if not self.version:
                    self.relist()
                self._watch_once()
                self.failures = self.bad = 0
                continue
            except _Relist as exc:
                log.info("watch of %s: %s; listing again", self.where, exc)
                routine = True
            except Exception as exc:  # a KubeError, or an answer of the wrong shape: never die silently
                if self.w.stopping.is_set():
                    return
                if isinstance(exc, KubeError) and not isinstance(exc, KubeBadResponse):
                    if self.refused(exc):
                        return
                    log.warning("watching %s: %s; retrying", self.where, exc)
                elif self._gives_up(exc):
                    return
                routine = False
            self.version, self.failures = "", self.failures + 1
            if not routine or self.failures > 1:
                self.w.reconnect.sleep(self.w.reconnect.delay(max(1, self.failures - 1)))

    def _gives_up(self, exc: Exception) -> bool:
        """After an answer of the wrong shape: say so, or give up (True) if it is one too many in a row."""
        self.bad += 1
        cause = bounded(str(exc) if isinstance(exc, KubeError) else f"{type(exc).__name__}: {exc}")
        if self.bad < MAX_BAD_ROUNDS:
            log.warning("watch of %s: %s; listing again", self.where, cause)
            return False
        msg = f"watch of {self.where} gave up after {self.bad} bad responses in a row; the last: {cause}"
        self.w.give_up(KubeBadResponse(msg))
        return True

    def _watch_once(self) -> None:
        """One watch from ``version``, until the server ends it (or ``stop``)."""
        api, ns = self.w.client, self.w.namespace
        try:
            response = call(
                k8s.CustomObjectsApi(api).list_namespaced_custom_object,
                c.KNATIVE_GROUP,
                c.KNATIVE_VERSION,
                ns,
                self.plural,
                watch=True,
                allow_watch_bookmarks=True,
                resource_version=self.version or None,
                timeout_seconds=self.w.timeout,
                _preload_content=False,
                _request_timeout=(_CONNECT_TIMEOUT, self.w.timeout + _READ_GRACE),
                stream=True,
                op=KubeOperation("watch", self.resource, ns),
                retry=self.w.retry,
            )
        except KubeError as exc:
            if exc.status == HTTPStatus.GONE:
                raise _Relist(str(exc)) from exc
            raise
        response = self._response = cast(urllib3.BaseHTTPResponse, response)  # ``stop`` can shut it down
        try:
            for line in bounded_lines(response, limit=MAX_EVENT_BYTES):
                if self.w.stopping.is_set():
                    return
                if line.strip():
                    self._event(*_parse(line))
        except ResponseTooLarge:
            raise  # an answer of the wrong shape, not a broken stream
        except _STREAM_ERRORS as exc:
            if not self.w.stopping.is_set():
                msg = f"the stream broke ({str(exc) or type(exc).__name__})"
                raise _Relist(msg) from exc
        finally:
            self._response = None
            response.close()
            response.release_conn()

    def _event(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "ERROR":
            code, message = obj.get("code"), str(obj.get("message") or obj)
            if code == HTTPStatus.GONE:
                raise _Relist(message)
            msg = f"watch of {self.where} failed: HTTP {code} ({message})"
            raise KubeError(msg, status=code if isinstance(code, int) else None)
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self._apply(kind, obj)
        self.failures = self.bad = 0  # the round got somewhere: a failure now is the first in a row
        self.version = _name_version(obj)[1] or self.version  # a BOOKMARK only moves the resourceVersion


class WatchHub:
    """One list-then-watch of every KService in ``namespace``, feeding all subscribers.

    ``start`` lists (a cluster that cannot be reached or read fails there, as a ``KubeError``), then
    watches until ``stop``, with no label selector: a KService that loses ``flyte.org/app-managed`` is a
    modification, which makes a delete event. ``retry`` governs each API call, ``reconnect`` the backoff."""

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
        self.namespace, self._api, self._buffer_size = namespace, client_factory(), buffer_size
        to_app = partial(status.kservice_to_app, base_domain=base_domain, scheme=scheme)
        self._convert = partial(to_app, ingress_apps_port=ingress_apps_port)
        self._stopping = threading.Event()
        self._retry = replace(retry, sleep=self._wait)
        self._lock = threading.Lock()  # ``_apps`` and ``_subscriptions``: a snapshot sees each state once
        self._apps: dict[str, app_pb.App] = {}  # the managed KServices' apps, by KService name
        self._subscriptions: dict[_Key, list[Subscription]] = {}  # by target
        self._replicas: dict[str, int] = {}  # each Revision's ``status.actualReplicas``, by name
        self._failure: KubeError | None = None
        self.reads_revisions_per_event = False
        """True once RBAC refused the Revision cache, so each event with a ready Revision costs a GET."""
        reconnect, timeout = replace(reconnect, sleep=self._wait), watch_timeout_seconds
        w = _Watching(self._api, namespace, self._retry, reconnect, timeout, self._stopping, self._end)
        self._kservices = _ListWatch(w, c.KSERVICE_PLURAL, self._kservice_changed)
        revisions = _ListWatch(w, c.REVISION_PLURAL, self._revision_changed, self._revisions_refused)
        self._revisions = revisions if read_replicas else None
        self._loops = [revisions, self._kservices] if read_replicas else [self._kservices]

    def start(self) -> None:
        """List the namespace (raising ``KubeError`` on failure), then watch in the background. The
        Revisions come first, so the first apps have their replica counts. A refusal to list them is
        said once the KServices are listed (each app's Revision is then read per event); after another
        failure (not an unreachable cluster) their loop lists again, and says why if that fails too."""
        failure: KubeError | None = None
        try:
            if self._revisions is not None:
                try:
                    self._revisions.relist()
                except KubeUnreachable:
                    raise
                except KubeError as exc:
                    failure = exc
            self._kservices.relist()
        except BaseException:
            self._stopping.set()
            cast(Callable[[], None], self._api.close)()
            raise
        if failure is not None and self._revisions_refused(failure):
            self._loops = [self._kservices]  # the Revision loop does not run
        for loop in self._loops:
            loop.thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching, end every subscription and close the client."""
        self._stopping.set()
        for loop in self._loops:
            loop.stop(timeout)
        self._end(None)
        cast(Callable[[], None], self._api.close)()  # again after a failed ``start``: harmless

    @property
    def relists(self) -> int:
        """How many times the hub has listed KServices (1 after ``start``; +1 per 410 or broken stream)."""
        return self._kservices.relists

    def subscribe(self, target: WatchTarget | None = None) -> Subscription:
        """Register a subscriber; it first gets every matching app as a ``create_event``."""
        target = target or WatchTarget()
        with self._lock:
            apps = sorted((a for a in self._apps.values() if target in _targets(_key(a))), key=_key)
            snapshot = [WatchResponse(create_event={"app": app}) for app in apps]
            subscription = Subscription(target, self._buffer_size, snapshot)
            if self._stopping.is_set():
                subscription.close(self._failure)
            else:
                self._subscriptions.setdefault(target, []).append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """No more events for ``subscription``; its iteration ends after what is buffered."""
        with self._lock:
            same_target = self._subscriptions.get(subscription.target, [])
            if subscription in same_target:
                same_target.remove(subscription)
        subscription.close()

    def _to_app(self, obj: dict[str, Any]) -> app_pb.App | None:
        """The app of a KService (None: not a managed, readable app), with its latest ready Revision's
        replica count: from the cache, else one GET (0 without ``read_replicas`` or a ready Revision)."""
        if not status.is_managed(obj):
            return None
        replicas = 0
        if self._revisions is not None and (revision := status.latest_ready_revision(obj)) is not None:
            replicas = self._replicas.get(revision, -1)  # counts are never negative
            if replicas < 0:  # not in the cache (yet)
                replicas = kube_apps.current_replicas(self._api, self.namespace, obj, retry=self._retry)
        try:
            return self._convert(obj, current_replicas=replicas, now=datetime.now(UTC))
        except status.AppConversionError as exc:
            log.warning("skipping KService: %s", exc)
            return None

    def _kservice_changed(self, name: str, kservice: dict[str, Any] | None) -> None:
        """Send the events of one KService's change (None: gone) under ``_lock``, which a new
        subscriber's snapshot also takes: it gets each state once, either way."""
        new = None if kservice is None else self._to_app(kservice)
        with self._lock:
            old = self._apps.pop(name, None)
            if new is not None:
                self._apps[name] = new
            if old is not None and new is not None and _key(old) == _key(new):
                self._send(new, update_event={"updated_app": new, "old_app": old})
                return
            if old is not None:  # gone, or the KService now holds another app
                self._send(old, delete_event={"app": old})
            if new is not None:
                self._send(new, create_event={"app": new})

    def _send(self, app: app_pb.App, **fields: dict[str, app_pb.App]) -> None:
        """Offer the event (its ``WatchResponse`` fields), built once (each app copied once), to every
        subscription whose target matches ``app``."""
        event = None
        for key in _targets(_key(app)):
            for subscription in self._subscriptions.get(key, ()):
                event = WatchResponse(**fields) if event is None else event
                if not subscription.offer(event):
                    log.warning(_DROPPED, status.app_key(app.metadata.id))

    def _revision_changed(self, name: str, revision: dict[str, Any] | None) -> None:
        if revision is None:
            self._replicas.pop(name, None)
        else:
            self._replicas[name] = kube_apps.revision_replicas(revision)

    def _revisions_refused(self, exc: KubeError) -> bool:
        """Whether RBAC refused the Revision loop (which then ends): said once, and each app's Revision
        is read per event (the hub GETs a Revision its cache does not have)."""
        if exc.status != HTTPStatus.FORBIDDEN:
            return False
        self.reads_revisions_per_event = True
        self._replicas.clear()
        grant = f"grant list and watch on {kube_apps.REVISIONS} in namespace {self.namespace} to avoid"
        log.warning(
            "%s; reading each app's Revision per event instead (%s an API call per event)", exc, grant
        )
        return True

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)  # a backoff, ended early by ``stop``

    def _end(self, failure: KubeError | None) -> None:
        """Stop, and end every subscription (with ``failure`` when a loop gave up: ``watch`` raises it)."""
        self._failure = self._failure or failure
        self._stopping.set()
        with self._lock:
            subscriptions, self._subscriptions = self._subscriptions, {}
        for subscription in [s for same_target in subscriptions.values() for s in same_target]:
            subscription.close(failure)
