"""HTTP transport of the fake Kubernetes API server: URL routing and HTTP/1.1 framing.

Kept apart from the server's state (``kube_api``) so the wire details (chunked streaming
flushed per line, connections cut mid-stream, kept-alive connections dropped on shutdown) can
be read on their own.  Knows nothing of objects: it hands each request to a :class:`Backend`.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, cast
from urllib.parse import parse_qs, unquote, urlsplit

from .kube_semantics import RESOURCES, ResourceType, status_body

SERVED_MEDIA_TYPES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
NOT_ACCEPTABLE = "only the following media types are accepted: " + ", ".join(SERVED_MEDIA_TYPES)


def acceptable(accept: str | None) -> bool:
    """Whether the API server can answer a request with this ``Accept`` header: like the real one, it
    negotiates every answer (pod logs and errors included) against the media types it serializes, so
    ``Accept: text/plain`` alone is refused with 406 (kube-apiserver 1.34, seen in the e2e suite)."""
    if not accept:
        return True
    for media_range in accept.split(","):
        media = media_range.split(";", 1)[0].strip().lower()
        if media in ("*/*", "application/*") or media in SERVED_MEDIA_TYPES:
            return True
    return False


@dataclass(frozen=True)
class Route:
    """Where a request path points: resource, namespace, name, subresource."""

    resource: ResourceType
    namespace: str | None
    name: str | None
    sub: str | None


@dataclass(frozen=True)
class JsonResponse:
    """A complete JSON answer."""

    code: int
    body: Any
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RawResponse(JsonResponse):
    """``body`` (bytes) sent as it is, with ``content_type``: garbage JSON, an HTML login page, for
    hostile-server tests. A ``JsonResponse`` so that a backend's answer type stays the same."""

    content_type: str = "application/json"


@dataclass
class StreamResponse:
    """A chunked answer; ``cut_after`` drops the connection after that many chunks."""

    content_type: str
    chunks: Iterator[bytes]
    cut_after: int | None = None
    headers: tuple[tuple[str, str], ...] = ()


def rbac_verb(method: str, route: Route, query: Mapping[str, str]) -> str:
    """The RBAC verb a real API server would authorise for this request."""
    if method == "GET":
        if route.name is None:
            return "watch" if query.get("watch") in ("true", "1") else "list"
        return "get"
    if method == "DELETE" and route.name is None:
        return "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower()
    )


def parse_route(path: str) -> Route | None:
    """Map a URL path onto (resource, namespace, name, subresource)."""
    parts = [unquote(p) for p in path.strip("/").split("/")]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None

    def lookup(plural: str) -> ResourceType | None:
        return next(
            (r for r in RESOURCES if (r.group, r.version, r.plural) == (group, version, plural)),
            None,
        )

    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        inner = lookup(rest[2])
        if inner is not None and inner.namespaced:
            namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    resource = lookup(rest[0])
    if resource is None:
        return None
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    return Route(resource, namespace, name, sub)


class Backend(Protocol):
    """What the transport needs from the server state: one call per request."""

    def handle(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str], body: bytes
    ) -> JsonResponse | StreamResponse: ...


class HttpFrontend(ThreadingHTTPServer):
    """The listener on 127.0.0.1 (free port); tracks connections so shutdown can drop them."""

    daemon_threads = True

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def close_connections(self) -> None:
        """Shut down every open connection (idle keep-alive ones included)."""
        with self.connections_lock:
            open_connections = list(self.connections)
        for conn in open_connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 framing: JSON answers with Content-Length, streams chunked and flushed per line."""

    protocol_version = "HTTP/1.1"
    # As Go's net/http (the real API server) does: without it each small answer waits for the
    # client's delayed ACK, about 40 ms.
    disable_nagle_algorithm = True

    @property
    def _server(self) -> HttpFrontend:
        return cast(HttpFrontend, self.server)

    def setup(self) -> None:
        super().setup()
        with self._server.connections_lock:
            self._server.connections.add(self.connection)

    def finish(self) -> None:
        with self._server.connections_lock:
            self._server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging; the backend keeps a request log."""

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            if not acceptable(headers.get("accept")):
                self._send_json(JsonResponse(406, status_body(406, NOT_ACCEPTABLE, reason="NotAcceptable")))
                return
            response = self._server.backend.handle(method, url.path, query, headers, raw)
            if isinstance(response, RawResponse):
                self._send_raw(response)
            elif isinstance(response, JsonResponse):
                self._send_json(response)
            else:
                self._send_stream(response)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_json(self, response: JsonResponse) -> None:
        data = json.dumps(response.body).encode()
        self.send_response(response.code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in response.headers:
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_raw(self, response: RawResponse) -> None:
        self.send_response(response.code)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        self.wfile.write(response.body)

    def _send_stream(self, response: StreamResponse) -> None:
        self.send_response(200)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        for key, value in response.headers:
            self.send_header(key, value)
        self.end_headers()
        self.wfile.flush()
        chunks = response.chunks
        try:
            for count, chunk in enumerate(chunks):
                if response.cut_after is not None and count >= response.cut_after:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)  # no terminating chunk: a broken stream
                    return
                self.wfile.write(f"{len(chunk):X}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")
