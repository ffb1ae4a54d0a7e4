"""A fake Kubernetes API server for tests that must go through the real ``kubernetes`` client.

Mocking the client would test our assumptions about it; this fake instead speaks HTTP the way
an API server does, so the real client's serialisation, error mapping, watch and log
streaming are exercised.  It serves core ``v1`` pods and namespaces and Knative
``serving.knative.dev/v1`` services and revisions with real semantics (resourceVersion,
generation, 404/409/415/410 ``Status`` bodies, label selectors, limit/continue, watches with
history compaction, pod logs with follow), plus what tests need to provoke hard cases:
scripted faults, latency, streams cut mid-way, and a tiny Knative controller simulation.

Use the ``kube_server`` fixture (re-export it from a ``conftest.py``); it starts a server on
127.0.0.1 with a free port and writes a kubeconfig for it (context/cluster/user ``fake``,
bearer token :data:`FAKE_TOKEN`) to ``server.kubeconfig_path``.
"""

from __future__ import annotations

import copy
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

import pytest
import yaml

from .kube_http import HttpFrontend, JsonResponse, RawResponse, Route, StreamResponse, parse_route, rbac_verb
from .kube_semantics import (
    KSERVICES,
    NAMESPACES,
    PODS,
    REVISIONS,
    ApiError,
    ResourceType,
    api_error,
    parse_field_selector,
    parse_label_selector,
    parse_rfc3339,
    reason_for,
    rfc3339,
    rfc3339_nano,
    status_body,
    utc_now,
)
from .kube_store import ObjectStore

FAKE_NODE: Final = "fake-node-1"
"""The node a fake pod runs on unless a test says it was never scheduled."""

FAKE_TOKEN: Final = "fake-token-secret"
"""Bearer token in the fake kubeconfig; tests assert it never appears in messages."""
CONTEXT_NAME: Final = "fake"
MERGE_PATCH: Final = "application/merge-patch+json"
LABEL_SERVICE: Final = "serving.knative.dev/service"
LABEL_REVISION: Final = "serving.knative.dev/revision"
_TERMINAL_PHASES: Final = ("Succeeded", "Failed")
_WAIT_SLICE: Final = 0.25  # longest a streaming thread sleeps before re-checking shutdown


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake saw it (never the Authorization header)."""

    method: str
    path: str
    query: Mapping[str, str]
    content_type: str | None


@dataclass
class _Rule:
    """A scripted behaviour applied to the next matching requests (``remaining`` None = all)."""

    remaining: int | None
    method: str | None
    path_contains: str | None

    def take(self, method: str, path: str) -> bool:
        """Consume one use if this rule applies to the request."""
        if self.remaining == 0:
            return False
        if self.method is not None and self.method.upper() != method:
            return False
        if self.path_contains is not None and self.path_contains not in path:
            return False
        if self.remaining is not None:
            self.remaining -= 1
        return True


@dataclass
class _Fault(_Rule):
    status: int = 503
    message: str | None = None
    retry_after: str | None = None


@dataclass
class _Stream(_Rule):
    chunks: Callable[[], Iterator[bytes]] = lambda: iter(())
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class _Raw(_Rule):
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"


@dataclass
class _Latency(_Rule):
    seconds: float = 0.0


@dataclass
class _Cut(_Rule):
    lines: int = 0


@dataclass(frozen=True)
class _LogLine:
    at: datetime
    text: str


class FakeKubeApi:
    """In-memory API server state plus an HTTP front end; one instance per test."""

    def __init__(self, *, watch_gone_as_http: bool = False, knative_gc: bool = True) -> None:
        self.watch_gone_as_http = watch_gone_as_http
        """True: too-old watches get an HTTP 410; False: a 200 stream with an ERROR event."""
        self.knative_gc = knative_gc
        """Deleting a revision deletes its pods, deleting a KService its revisions."""
        self.kubeconfig_path: Path | None = None
        self._cond = threading.Condition()
        self._store = ObjectStore(self._cond.notify_all)
        self._logs: dict[tuple[str, str, str], list[_LogLine]] = {}
        self._expire_generation = 0
        self._open_watches = 0
        self._revision_counters: dict[tuple[str, str], int] = {}
        self._names = itertools.count(1)
        self._requests: list[RecordedRequest] = []
        self._faults: list[_Fault] = []
        self._raws: list[_Raw] = []
        self._streams: list[_Stream] = []
        self._latencies: list[_Latency] = []
        self._cuts: list[_Cut] = []
        self._stopped = False
        self._httpd: HttpFrontend | None = None
        self.ensure_namespace("default")

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Listen on 127.0.0.1 with a free port and serve from a daemon thread."""
        self._httpd = HttpFrontend(self)
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def stop(self) -> None:
        """Stop serving, end open streams and drop kept-alive connections."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.close_connections()
            self._httpd.server_close()

    @property
    def url(self) -> str:
        """Base URL of the running server."""
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def kubeconfig_dict(self) -> dict[str, Any]:
        """A kubeconfig (cluster/user/context ``fake``) pointing at this server."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": CONTEXT_NAME, "cluster": {"server": self.url}}],
            "users": [{"name": CONTEXT_NAME, "user": {"token": FAKE_TOKEN}}],
            "contexts": [
                {
                    "name": CONTEXT_NAME,
                    "context": {"cluster": CONTEXT_NAME, "user": CONTEXT_NAME, "namespace": "default"},
                }
            ],
            "current-context": CONTEXT_NAME,
        }

    def write_kubeconfig(self, path: Path) -> Path:
        """Write :meth:`kubeconfig_dict` as YAML and remember it as ``kubeconfig_path``."""
        path.write_text(yaml.safe_dump(self.kubeconfig_dict(), sort_keys=False))
        self.kubeconfig_path = path
        return path

    # --- inspection ----------------------------------------------------------------------------

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        """Every request received so far, oldest first."""
        with self._cond:
            return tuple(self._requests)

    def requests_matching(
        self, method: str | None = None, path_contains: str | None = None
    ) -> tuple[RecordedRequest, ...]:
        """Requests filtered by method and/or a path substring."""
        return tuple(
            r
            for r in self.requests
            if (method is None or r.method == method.upper())
            and (path_contains is None or path_contains in r.path)
        )

    @property
    def resource_version(self) -> int:
        """The current global resourceVersion."""
        with self._cond:
            return self._store.rv

    @property
    def open_watches(self) -> int:
        """Number of watch streams currently being served."""
        with self._cond:
            return self._open_watches

    def get(self, resource: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        """A copy of a stored object, or None."""
        with self._cond:
            obj = self._store.objects.get((resource, namespace if resource.namespaced else "", name))
            return copy.deepcopy(obj) if obj is not None else None

    def names(self, resource: ResourceType, namespace: str | None = None) -> list[str]:
        """Sorted names of stored objects of a resource (optionally in one namespace)."""
        with self._cond:
            return sorted(
                n for (r, ns, n) in self._store.objects if r == resource and namespace in (None, ns)
            )

    # --- scripted behaviour --------------------------------------------------------------------

    def fail_next(
        self,
        status: int,
        *,
        times: int = 1,
        method: str | None = None,
        path_contains: str | None = None,
        message: str | None = None,
        retry_after: str | None = None,
    ) -> None:
        """Answer the next ``times`` matching requests with ``status`` and a ``Status`` body."""
        with self._cond:
            self._faults.append(_Fault(times, method, path_contains, status, message, retry_after))

    def serve_raw_next(
        self,
        path_contains: str | None,
        status: int,
        body: bytes | str,
        content_type: str = "application/json",
        *,
        times: int | None = 1,
        method: str | None = None,
    ) -> None:
        """Answer the next ``times`` matching requests (all when None) with ``body`` as it is (garbage
        JSON, an HTML login page). ``path_contains`` is matched against the path and its query
        string (``watch=true`` picks the watches)."""
        data = body.encode() if isinstance(body, str) else body
        with self._cond:
            self._raws.append(_Raw(times, method, path_contains, status, data, content_type))

    def serve_stream_next(
        self,
        path_contains: str | None,
        chunks: Callable[[], Iterator[bytes]],
        *,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
        times: int | None = 1,
        method: str | None = None,
    ) -> None:
        """Answer the next ``times`` matching requests (all when None) with status 200 and the chunks
        ``chunks()`` yields, each sent as an HTTP chunk as soon as it comes (a generator may sleep
        between them, or never end): bodies without end, a gzip bomb, a server that drips, for
        hostile-server tests. ``headers`` are sent too (``Content-Encoding``)."""
        rule = _Stream(times, method, path_contains, chunks, content_type, tuple((headers or {}).items()))
        with self._cond:
            self._streams.append(rule)

    def add_latency(
        self,
        seconds: float,
        *,
        times: int | None = None,
        method: str | None = None,
        path_contains: str | None = None,
    ) -> None:
        """Delay matching requests (all of them when ``times`` is None) before answering."""
        with self._cond:
            self._latencies.append(_Latency(times, method, path_contains, seconds))

    def cut_streams_after(self, lines: int, *, times: int = 1, path_contains: str | None = None) -> None:
        """Drop the connection of the next matching log/watch streams after ``lines`` lines."""
        with self._cond:
            self._cuts.append(_Cut(times, None, path_contains, lines))

    def compact_history(self) -> int:
        """Forget watch history up to now; older resourceVersions then get 410 Gone."""
        with self._cond:
            return self._store.compact()

    def expire_watches(self) -> int:
        """Send an in-stream 410 ``ERROR`` event to every open watch and end it."""
        with self._cond:
            self._expire_generation += 1
            self._cond.notify_all()
            return self._open_watches

    # --- object helpers ------------------------------------------------------------------------

    def create(self, resource: ResourceType, obj: Mapping[str, Any], namespace: str = "") -> dict[str, Any]:
        """Store a new object as a POST would (namespace created on demand)."""
        with self._cond:
            if resource.namespaced:
                self.ensure_namespace(namespace)
            return copy.deepcopy(self._store.create(resource, namespace, dict(obj)))

    def patch(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        status: bool = False,
    ) -> dict[str, Any]:
        """Merge-patch an object (its ``/status`` when ``status``) as the API would."""
        with self._cond:
            return copy.deepcopy(
                self._store.update(resource, namespace, name, dict(patch), patch=True, status=status)
            )

    def delete(self, resource: ResourceType, namespace: str, name: str) -> None:
        """Delete an object (with the Knative garbage collection simulation)."""
        with self._cond:
            self._delete(resource, namespace, name)

    def ensure_namespace(self, name: str) -> None:
        """Create a namespace unless it exists."""
        with self._cond:
            if (NAMESPACES, "", name) not in self._store.objects:
                self._store.create(NAMESPACES, "", {"metadata": {"name": name}})

    def add_kservice(
        self,
        namespace: str,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        spec: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Create a Knative Service (not yet reconciled: no status)."""
        body = {
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": dict(spec)
            if spec is not None
            else {"template": {"spec": {"containers": [{"image": "app"}]}}},
        }
        return self.create(KSERVICES, body, namespace)

    def reconcile_kservice(self, namespace: str, name: str, ready: bool = True) -> str:
        """Act like Knative once: create the next revision and record it in the status.

        Sets ``status.observedGeneration`` to the current generation, creates revision
        ``{name}-0000N`` and makes it ``latestCreatedRevisionName`` (and, if ``ready``,
        ``latestReadyRevisionName``).  Returns the revision name.
        """
        with self._cond:
            ksvc = self._store.get(KSERVICES, namespace, name)
            counter = self._revision_counters.get((namespace, name), 0) + 1
            self._revision_counters[(namespace, name)] = counter
            revision = f"{name}-{counter:05d}"
            generation = ksvc["metadata"]["generation"]
            template = ksvc.get("spec", {}).get("template", {})
            self._store.create(
                REVISIONS,
                namespace,
                {
                    "metadata": {
                        "name": revision,
                        "labels": {
                            LABEL_SERVICE: name,
                            "serving.knative.dev/configuration": name,
                            "serving.knative.dev/configurationGeneration": str(generation),
                        },
                        "ownerReferences": [
                            {"apiVersion": KSERVICES.api_version, "kind": "Configuration", "name": name}
                        ],
                    },
                    "spec": copy.deepcopy(template.get("spec", {})),
                    "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "Unknown"}]},
                },
            )
            status: dict[str, Any] = {"observedGeneration": generation, "latestCreatedRevisionName": revision}
            if ready:
                status["latestReadyRevisionName"] = revision
            status["conditions"] = [{"type": "Ready", "status": "True" if ready else "Unknown"}]
            self._store.update(KSERVICES, namespace, name, {"status": status}, patch=True, status=True)
            return revision

    def mark_revision_ready(self, namespace: str, kservice: str) -> str:
        """Make the latest created revision the latest ready one (a late readiness)."""
        with self._cond:
            status = self._store.get(KSERVICES, namespace, kservice).get("status", {})
            revision = str(status["latestCreatedRevisionName"])
            patch = {
                "latestReadyRevisionName": revision,
                "conditions": [{"type": "Ready", "status": "True"}],
            }
            self._store.update(KSERVICES, namespace, kservice, {"status": patch}, patch=True, status=True)
            return revision

    def add_pod(
        self,
        namespace: str,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        containers: Sequence[str] = ("app",),
        phase: str = "Running",
        node: str | None = FAKE_NODE,
    ) -> dict[str, Any]:
        """Create a pod with the given containers, phase and ready container statuses, on ``node``
        (None: a Pending pod no node took yet, whose log the API answers with 204 and no body). A
        running pod is Ready, as the kubelet reports it; one on a node and not running is not."""
        running = phase == "Running"
        ready = {"type": "Ready", "status": "True" if running else "False"}
        if not running:
            ready["reason"] = "ContainersNotReady"
        body = {
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {
                "containers": [{"name": c, "image": f"example.com/{c}:1"} for c in containers],
                **({"nodeName": node} if node else {}),
            },
            "status": {
                "phase": phase,
                "conditions": [ready] if node else [],
                "containerStatuses": [
                    {
                        "name": c,
                        "ready": running,
                        "restartCount": 0,
                        "image": f"example.com/{c}:1",
                        "imageID": "",
                        "state": {"running": {"startedAt": rfc3339(utc_now())}}
                        if running
                        else {"waiting": {"reason": "ContainerCreating"}},
                    }
                    for c in containers
                ],
            },
        }
        return self.create(PODS, body, namespace)

    def add_revision_pods(
        self,
        namespace: str,
        kservice: str,
        revision: str,
        *,
        count: int = 1,
        containers: Sequence[str] = ("queue-proxy", "app"),
    ) -> list[str]:
        """Create ``count`` running pods labelled like Knative labels a revision's pods."""
        names = []
        for _ in range(count):
            name = f"{revision}-deployment-{next(self._names):05x}"
            labels = {LABEL_SERVICE: kservice, LABEL_REVISION: revision}
            self.add_pod(namespace, name, labels=labels, containers=containers)
            names.append(name)
        return names

    def append_log(
        self, namespace: str, pod: str, container: str, *lines: str, at: datetime | None = None
    ) -> None:
        """Append log lines (stamped ``at`` or now) and wake followers."""
        with self._cond:
            stored = self._logs.setdefault((namespace, pod, container), [])
            for text in lines:
                stored.append(_LogLine(at or utc_now(), text))
            self._cond.notify_all()

    def finish_pod(self, namespace: str, name: str, phase: str = "Succeeded") -> None:
        """Terminate a pod after its last log line: phase set, following log streams end."""
        with self._cond:
            pod = self._store.get(PODS, namespace, name)
            statuses = [
                dict(s, ready=False, state={"terminated": {"exitCode": 0 if phase == "Succeeded" else 1}})
                for s in pod.get("status", {}).get("containerStatuses", [])
            ]
            patch = {"phase": phase, "containerStatuses": statuses}
            self._store.update(PODS, namespace, name, {"status": patch}, patch=True, status=True)

    # --- deletion with cascades (call with the lock held) -------------------------------------

    def _delete(self, resource: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        """Delete, then cascade like the cluster would (namespace contents, Knative GC)."""
        namespace = namespace if resource.namespaced else ""
        obj = self._store.delete(resource, namespace, name)
        if self.knative_gc and resource in (KSERVICES, REVISIONS):
            label = LABEL_SERVICE if resource == KSERVICES else LABEL_REVISION
            child = REVISIONS if resource == KSERVICES else PODS
            for key in [k for k in self._store.objects if k[0] == child and k[1] == namespace]:
                child_obj = self._store.objects.get(key)
                if child_obj is not None and child_obj["metadata"].get("labels", {}).get(label) == name:
                    self._delete(*key)
        if resource == NAMESPACES:
            for key in [k for k in self._store.objects if k[0].namespaced and k[1] == name]:
                if key in self._store.objects:
                    self._delete(*key)
        return obj

    # --- HTTP request handling ---------------------------------------------------------------

    def handle(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str], body: bytes
    ) -> JsonResponse | StreamResponse:
        """Everything between the socket and the store: record, script, authorise, serve."""
        with self._cond:
            self._requests.append(RecordedRequest(method, path, dict(query), headers.get("content-type")))
            delays = [rule.seconds for rule in self._latencies if rule.take(method, path)]
            fault = next((f for f in self._faults if f.take(method, path)), None)
            address = f"{path}?{urlencode(sorted(query.items()))}"
            raws = self._raws if fault is None else []
            raw_rule = next((r for r in raws if r.take(method, address)), None)
            streams = self._streams if fault is None and raw_rule is None else []
            stream_rule = next((r for r in streams if r.take(method, address)), None)
        if delays:
            time.sleep(sum(delays))
        target = parse_route(path)
        if headers.get("authorization") != f"Bearer {FAKE_TOKEN}":
            return JsonResponse(401, status_body(401, "Unauthorized"))
        if fault is not None:
            return self._fault_response(fault, method, target, query)
        if raw_rule is not None:
            return RawResponse(raw_rule.status, raw_rule.body, content_type=raw_rule.content_type)
        if stream_rule is not None:
            return StreamResponse(stream_rule.content_type, stream_rule.chunks(), headers=stream_rule.headers)
        if path == "/version":
            return JsonResponse(200, {"major": "1", "minor": "31", "gitVersion": "v1.31.0-fake"})
        if target is None:
            return JsonResponse(404, status_body(404, "the server could not find the requested resource"))
        try:
            with self._cond:
                result = self._serve(method, target, query, headers, body)
        except ApiError as exc:
            return JsonResponse(exc.body["code"], exc.body)
        if isinstance(result, StreamResponse):
            with self._cond:
                cut = next((c for c in self._cuts if c.take(method, path)), None)
            result.cut_after = cut.lines if cut is not None else None
        return result

    def _fault_response(
        self, fault: _Fault, method: str, route: Route | None, query: Mapping[str, str]
    ) -> JsonResponse:
        message = fault.message
        if message is None and fault.status == 403 and route is not None:
            resource = route.resource
            where = f' in the namespace "{route.namespace}"' if route.namespace else " at the cluster scope"
            subject = f'{resource.qualified} "{route.name}"' if route.name else resource.qualified
            message = (
                f'{subject} is forbidden: User "system:serviceaccount:flyte:flyte-apps" cannot '
                f'{rbac_verb(method, route, query)} resource "{resource.plural}" in API group '
                f'"{resource.group}"{where}'
            )
        body = status_body(
            fault.status,
            message or f"fake fault: {reason_for(fault.status)}",
            name=route.name if route else None,
            resource=route.resource if route else None,
        )
        headers = (("Retry-After", fault.retry_after),) if fault.retry_after is not None else ()
        return JsonResponse(fault.status, body, headers)

    def _serve(
        self, method: str, route: Route, query: Mapping[str, str], headers: Mapping[str, str], raw: bytes
    ) -> JsonResponse | StreamResponse:
        resource, name, sub = route.resource, route.name, route.sub
        namespace = route.namespace or ""
        if resource.namespaced and route.namespace is None and (name is not None or method != "GET"):
            return JsonResponse(404, status_body(404, "the server could not find the requested resource"))
        if sub not in (None, "status", "log") or (sub == "log" and resource != PODS):
            return JsonResponse(404, status_body(404, "the server could not find the requested resource"))

        def body() -> dict[str, Any]:
            try:
                parsed = json.loads(raw or b"null")
            except ValueError as exc:
                raise api_error(400, f"invalid JSON body: {exc}") from exc
            if not isinstance(parsed, dict):
                raise api_error(400, "the request body must be a JSON object")
            return parsed

        if name is None:
            if method == "GET" and query.get("watch") in ("true", "1"):
                return self._watch(resource, route.namespace, query)
            if method == "GET":
                return JsonResponse(200, self._store.list(resource, route.namespace, query))
            if method == "POST":
                return JsonResponse(201, self._store.create(resource, namespace, body()))
            return JsonResponse(
                405, status_body(405, f"the server does not allow this method on {resource.qualified}")
            )
        if sub == "log":
            if method != "GET":
                return JsonResponse(
                    405, status_body(405, "the server does not allow this method on pods/log")
                )
            return self._log(namespace, name, query)
        if method == "GET":
            return JsonResponse(200, copy.deepcopy(self._store.get(resource, namespace, name)))
        if method == "PUT":
            return JsonResponse(
                200,
                self._store.update(resource, namespace, name, body(), patch=False, status=sub == "status"),
            )
        if method == "PATCH":
            content_type = (headers.get("content-type") or "").split(";")[0].strip()
            if content_type != MERGE_PATCH:
                return JsonResponse(
                    415,
                    status_body(
                        415,
                        f"the body of the request was in an unknown format ({content_type or 'none'}) - "
                        f"this fake accepts only {MERGE_PATCH}",
                    ),
                )
            return JsonResponse(
                200, self._store.update(resource, namespace, name, body(), patch=True, status=sub == "status")
            )
        if method == "DELETE" and sub is None:
            deleted = self._delete(resource, namespace, name)
            if resource.is_custom:
                details = {
                    "name": name,
                    "group": resource.group,
                    "kind": resource.plural,
                    "uid": deleted["metadata"]["uid"],
                }
                return JsonResponse(
                    200,
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Success",
                        "details": details,
                    },
                )
            return JsonResponse(200, deleted)
        return JsonResponse(405, status_body(405, "method not allowed"))

    # --- watches -------------------------------------------------------------------------------

    def _watch(
        self, resource: ResourceType, namespace: str | None, query: Mapping[str, str]
    ) -> JsonResponse | StreamResponse:
        try:
            labels = parse_label_selector(query.get("labelSelector"))
            fields = parse_field_selector(query.get("fieldSelector"))
        except ValueError as exc:
            raise api_error(400, str(exc)) from exc
        raw_rv = query.get("resourceVersion") or ""
        since = int(raw_rv) if raw_rv not in ("", "0") else None
        if since is not None and since < self._store.compacted:
            gone = status_body(
                410, f"too old resource version: {since} ({self._store.compacted})", reason="Expired"
            )
            if self.watch_gone_as_http:
                return JsonResponse(410, gone)
            return StreamResponse("application/json", iter([_event_line("ERROR", gone)]))
        timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None

        def matches(obj: dict[str, Any]) -> bool:
            meta = obj["metadata"]
            return (
                namespace in (None, meta.get("namespace", ""))
                and labels(meta.get("labels", {}))
                and fields(obj)
            )

        initial: list[bytes] = []
        if since is None:
            initial = [
                _event_line("ADDED", obj)
                for (r, _, _), obj in sorted(self._store.objects.items(), key=lambda kv: kv[0][1:])
                if r == resource and matches(obj)
            ]
        start = self._store.rv if since is None else since
        return StreamResponse(
            "application/json", self._watch_stream(resource, matches, start, initial, timeout)
        )

    def _watch_stream(
        self, resource: ResourceType, matches: Any, last_rv: int, initial: list[bytes], timeout: float | None
    ) -> Iterator[bytes]:
        deadline = time.monotonic() + timeout if timeout is not None else None
        with self._cond:
            generation = self._expire_generation
            self._open_watches += 1
        try:
            yield from initial
            while True:
                expired = False
                with self._cond:
                    while True:
                        if self._stopped:
                            return
                        if self._expire_generation != generation:
                            gone = status_body(
                                410,
                                f"too old resource version: {last_rv} ({self._store.rv})",
                                reason="Expired",
                            )
                            pending, expired = [_event_line("ERROR", gone)], True
                            break
                        newer = [e for e in self._store.events if e.rv > last_rv]
                        if newer:
                            last_rv = newer[-1].rv
                            pending = [
                                _event_line(e.type, e.obj)
                                for e in newer
                                if e.resource == resource and matches(e.obj)
                            ]
                            if pending:
                                break
                            continue
                        remaining = deadline - time.monotonic() if deadline is not None else _WAIT_SLICE
                        if remaining <= 0:
                            return
                        self._cond.wait(min(remaining, _WAIT_SLICE))
                yield from pending
                if expired:
                    return  # like the API server, end the watch after an ERROR event
        finally:
            with self._cond:
                self._open_watches -= 1

    # --- pod logs ------------------------------------------------------------------------------

    def _log(self, namespace: str, name: str, query: Mapping[str, str]) -> StreamResponse | RawResponse:
        pod = self._store.get(PODS, namespace, name)
        containers = [c["name"] for c in pod.get("spec", {}).get("containers", [])]
        container = query.get("container")
        if not container:
            if len(containers) != 1:
                choices = " ".join(containers)
                message = f"a container name must be specified for pod {name}, choose one of: [{choices}]"
                raise api_error(400, message)
            container = containers[0]
        elif container not in containers:
            raise api_error(400, f"container {container} is not valid for pod {name}")
        if pod.get("status", {}).get("phase") == "Pending" and not pod.get("spec", {}).get("nodeName"):
            return RawResponse(204, b"", content_type="text/plain")  # no node, no kubelet to ask
        if pod.get("status", {}).get("phase") == "Pending":
            raise api_error(
                400, f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating'
            )
        if query.get("sinceTime") and query.get("sinceSeconds"):
            raise api_error(
                422, "at most one of sinceTime or sinceSeconds may be specified", reason="Invalid"
            )
        since: datetime | None = None
        try:
            if query.get("sinceTime"):
                # The real API carries sinceTime as metav1.Time: whole seconds, truncated.
                since = parse_rfc3339(query["sinceTime"]).replace(microsecond=0)
            elif query.get("sinceSeconds"):
                since = utc_now() - timedelta(seconds=int(query["sinceSeconds"]))
            tail = int(query["tailLines"]) if query.get("tailLines") else None
        except ValueError as exc:
            raise api_error(400, str(exc)) from exc
        follow = query.get("follow") in ("true", "1")
        stamps = query.get("timestamps") in ("true", "1")
        return StreamResponse(
            "text/plain", self._log_stream((namespace, name, container), since, tail, follow, stamps)
        )

    def _log_stream(
        self, key: tuple[str, str, str], since: datetime | None, tail: int | None, follow: bool, stamps: bool
    ) -> Iterator[bytes]:
        def render(line: _LogLine) -> bytes:
            prefix = f"{rfc3339_nano(line.at)} " if stamps else ""
            return f"{prefix}{line.text}\n".encode()

        with self._cond:
            lines = list(self._logs.get(key, []))
        sent = len(lines)
        first = [line for line in lines if since is None or line.at >= since]
        if tail is not None:
            first = first[-tail:] if tail > 0 else []
        for line in first:
            yield render(line)
        while follow:
            with self._cond:
                while True:
                    lines = list(self._logs.get(key, []))
                    pod = self._store.objects.get((PODS, key[0], key[1]))
                    done = (
                        self._stopped or pod is None or pod.get("status", {}).get("phase") in _TERMINAL_PHASES
                    )
                    if len(lines) > sent or done:
                        break
                    self._cond.wait(_WAIT_SLICE)
            for line in lines[sent:]:
                yield render(line)
            sent = len(lines)
            if done:
                return


def _event_line(event_type: str, obj: Mapping[str, Any]) -> bytes:
    """One watch event as the newline-delimited JSON the API server streams."""
    return (json.dumps({"type": event_type, "object": obj}) + "\n").encode()


@pytest.fixture
def kube_server(tmp_path: Path) -> Iterator[FakeKubeApi]:
    """A running fake API server with ``kubeconfig_path`` written under ``tmp_path``."""
    server = FakeKubeApi()
    server.start()
    server.write_kubeconfig(tmp_path / "kubeconfig")
    try:
        yield server
    finally:
        server.stop()
