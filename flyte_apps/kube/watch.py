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
"""

from __future__ import annotations

import http.client
import json
import logging
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
from kubernetes.watch import watch as k8s_watch

from flyte_apps.core import constants as c
from flyte_apps.core.status import AppConversionError, app_key, is_managed, kservice_to_app
from flyte_apps.kube.apps import KSERVICES, current_replicas, list_kservices
from flyte_apps.kube.errors import KubeError
from flyte_apps.kube.retry import DEFAULT_RETRY, KubeOperation, RetryPolicy, call

log = logging.getLogger(__name__)

DEFAULT_WATCH_TIMEOUT: Final = 300
"""Seconds the API server keeps one watch open before the hub resumes it (client-go's range)."""
_CONNECT_TIMEOUT: Final = 10.0
_READ_GRACE: Final = 15.0
"""A watch is silent between events; the read timeout only has to outlast ``timeoutSeconds``."""
_STREAM_ERRORS: Final = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError, ValueError)
"""What a broken watch stream raises while it is read (ValueError: a truncated JSON line)."""
_HTTP_GONE: Final = 410
DEFAULT_RECONNECT: Final = RetryPolicy(base_delay=0.2, max_delay=5.0)
"""The backoff between watch rounds that fail: 0.2 s, doubling, at most 5 s (``attempts`` unused:
the hub reconnects until it is stopped)."""


# --- targets and subscriptions --------------------------------------------------------------------


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

    def __str__(self) -> str:
        if self.project is None and self.domain is None and self.name is None:
            return "every app"
        return "/".join(part if part is not None else "*" for part in (self.project, self.domain, self.name))


class Subscription:
    """One subscriber's events: the snapshot it joined with, then live events in a bounded buffer.

    ``get`` returns the next event, or None on timeout or once the subscription is closed and
    drained; iterating yields events until ``WatchHub.unsubscribe`` (or ``WatchHub.stop``) closes
    it. Events already buffered when it closes are still delivered.
    """

    def __init__(self, target: WatchTarget, capacity: int) -> None:
        self.target = target
        self.capacity = capacity
        self.dropped = 0
        """Live events lost because the buffer was full."""
        self._cond = threading.Condition()
        self._snapshot: deque[WatchResponse] = deque()
        self._events: deque[WatchResponse] = deque()
        self._closed = False

    @property
    def closed(self) -> bool:
        with self._cond:
            return self._closed

    def get(self, timeout: float | None = None) -> WatchResponse | None:
        with self._cond:
            self._cond.wait_for(lambda: self._snapshot or self._events or self._closed, timeout)
            if self._snapshot:
                return self._snapshot.popleft()
            if self._events:
                return self._events.popleft()
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

    def _offer(self, event: WatchResponse) -> bool:
        """Non-blocking put: False (and counted) when the buffer is full."""
        with self._cond:
            if self._closed:
                return True
            if len(self._events) >= self.capacity:
                self.dropped += 1
                return False
            self._events.append(event)
            self._cond.notify_all()
            return True

    def _close(self) -> None:
        with self._cond:
            self._closed = True
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


# --- the hub -----------------------------------------------------------------------------------------


class WatchHub:
    """One list-then-watch of every KService in ``namespace``, feeding all subscribers.

    ``start`` lists synchronously (so a cluster that cannot be reached or read fails there, as a
    ``KubeError``), then watches from a background thread until ``stop``. The watch has no label
    selector: a KService that loses ``flyte.org/app-managed`` then arrives as a modification the
    hub can turn into a delete event (an API server filtering on labels would only do that from
    its watch cache).

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
        self._watch_timeout = watch_timeout_seconds
        self._stopping = threading.Event()
        # Our retries wait on the stop event, so ``stop`` never waits out a backoff.
        self._retry = replace(retry, sleep=self._wait)
        self._reconnect = replace(reconnect, sleep=self._wait)
        self._read_replicas = read_replicas
        self._lock = threading.Lock()
        self._cache: dict[str, _Entry] = {}
        self._ignored: dict[str, str] = {}
        self._subscriptions: list[Subscription] = []
        self._resource_version = ""
        self._relists = 0
        self._progress = False
        self._api: k8s.ApiClient | None = None
        self._response: Any = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """List the namespace (raising ``KubeError`` on failure), then watch in the background."""
        if self._thread is not None:
            return
        self._api = self._client_factory()
        try:
            self._relist()
        except BaseException:
            self._close_client()
            raise
        self._thread = threading.Thread(target=self._run, name="flyte-apps-watch-hub", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching, end every subscription and close the client."""
        self._stopping.set()
        with self._lock:
            response = self._response
            subscriptions, self._subscriptions = self._subscriptions, []
        _interrupt(response)
        if self._thread is not None:
            self._thread.join(timeout)
        for subscription in subscriptions:
            subscription._close()
        self._close_client()

    def __enter__(self) -> WatchHub:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def relists(self) -> int:
        """How many times the hub has listed (1 after ``start``; each 410 or broken stream adds one)."""
        with self._lock:
            return self._relists

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
            entries = sorted(self._cache.values(), key=lambda e: _sort_key(e.app))
            subscription._seed(
                [create_event(entry.app) for entry in entries if target.matches(entry.app.metadata.id)]
            )
            if self._stopping.is_set():
                subscription._close()
            else:
                self._subscriptions.append(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """No more events for ``subscription``; its iteration ends after what is buffered."""
        with self._lock:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)
        subscription._close()

    # --- the background loop -----------------------------------------------------------------------

    def _run(self) -> None:
        must_list = False
        failures = 0  # consecutive rounds that failed without delivering anything
        while not self._stopping.is_set():
            self._progress = False
            try:
                if must_list:
                    self._relist()
                    must_list = False
                self._watch_once()
                failures = 0
                continue
            except _Gone as exc:
                log.info("watch of KServices in %s expired (%s); listing again", self.namespace, exc)
                routine = True
            except _Dropped as exc:
                log.info("watch of KServices in %s broke (%s); listing again", self.namespace, exc)
                routine = True
            except KubeError as exc:
                if self._stopping.is_set():
                    break
                log.warning("watching apps in namespace %s: %s; retrying", self.namespace, exc)
                routine = False
            except Exception:  # never let the hub thread die silently
                log.exception("watch hub failed; listing again")
                routine = False
            must_list = True
            failures = 1 if self._progress else failures + 1
            delay = self._backoff(failures, routine=routine)
            if delay:
                self._reconnect.sleep(delay)

    def _backoff(self, failures: int, *, routine: bool) -> float:
        """No wait after a first 410 or broken stream (routine); ``reconnect``'s exponential
        backoff after that, starting from its base delay at the second failure in a row (or at
        the first failure that is not routine)."""
        if routine and failures <= 1:
            return 0.0
        return self._reconnect.delay(max(1, failures - 1))

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def _watch_once(self) -> None:
        """One watch from the last resourceVersion, until the server ends it (or ``stop``)."""
        api = self._client()
        try:
            response = call(
                k8s.CustomObjectsApi(api).list_namespaced_custom_object,
                c.KNATIVE_GROUP,
                c.KNATIVE_VERSION,
                self.namespace,
                c.KSERVICE_PLURAL,
                watch=True,
                allow_watch_bookmarks=True,
                resource_version=self._resource_version or None,
                timeout_seconds=self._watch_timeout,
                _preload_content=False,
                _request_timeout=(_CONNECT_TIMEOUT, self._watch_timeout + _READ_GRACE),
                op=KubeOperation("watch", KSERVICES, self.namespace),
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
                    self._handle(json.loads(line))
        except _STREAM_ERRORS as exc:
            if self._stopping.is_set():
                return
            raise _Dropped(_describe(exc)) from exc
        finally:
            with self._lock:
                self._response = None
            _release(response)

    def _handle(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = obj.get("code")
            message = str(obj.get("message") or obj)
            if code == _HTTP_GONE:
                raise _Gone(message)
            msg = f"watch of {KSERVICES} in namespace '{self.namespace}' failed: HTTP {code} ({message})"
            raise KubeError(msg, status=code if isinstance(code, int) else None)
        metadata = obj.get("metadata") or {}
        version = str(metadata.get("resourceVersion") or "")
        if kind in ("ADDED", "MODIFIED"):
            self._apply([self._change(obj)])
        elif kind == "DELETED":
            name = str(metadata.get("name") or "")
            self._ignored.pop(name, None)
            self._apply([_Change(name, version, None)])
        self._progress = True
        if version:
            self._resource_version = version  # BOOKMARKs only move the resourceVersion

    def _relist(self) -> None:
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
            self._resource_version = version
            self._relists += 1

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
        replicas = 0
        if self._read_replicas:
            replicas = current_replicas(self._client(), self.namespace, obj, retry=self._retry)
        try:
            app = kservice_to_app(
                obj,
                base_domain=self._base_domain,
                scheme=self._scheme,
                ingress_apps_port=self._ingress_apps_port,
                current_replicas=replicas,
                now=datetime.now(UTC),
            )
        except AppConversionError as exc:
            if self._ignored.get(name) != version:
                log.warning("skipping KService: %s", exc)
            self._ignored[name] = version
            return _Change(name, version, None)
        self._ignored.pop(name, None)
        return _Change(name, version, app)

    def _apply(self, changes: list[_Change]) -> None:
        """Update the cache and fan the events out, under the lock ``subscribe`` also takes."""
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

    def _dispatch(self, app: app_pb.App, make: Callable[[app_pb.App], WatchResponse]) -> None:
        """Non-blocking delivery to every matching subscriber (each gets its own message)."""
        for subscription in self._subscriptions:
            if not subscription.target.matches(app.metadata.id):
                continue
            if not subscription._offer(make(app)):
                log.warning("subscriber buffer full, dropping update for app: %s", app_key(app.metadata.id))

    def _client(self) -> k8s.ApiClient:
        if self._api is None:
            self._api = self._client_factory()
        return self._api

    def _close_client(self) -> None:
        api, self._api = self._api, None
        if api is not None:
            cast(Callable[[], None], api.close)()


def _sort_key(app: app_pb.App) -> tuple[str, str, str]:
    ident = app.metadata.id
    return (ident.project, ident.domain, ident.name)


def _copy(app: app_pb.App) -> app_pb.App:
    copied = app_pb.App()
    copied.CopyFrom(app)
    return copied


def _lines(response: Any) -> Iterator[str]:
    """The stream's lines (the ``kubernetes`` package's own splitter, untyped there)."""
    split = cast(Callable[[Any], Iterator[str]], k8s_watch.iter_resp_lines)
    return split(response)


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
