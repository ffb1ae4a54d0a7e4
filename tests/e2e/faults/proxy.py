"""A proxy of ours in front of the API server that cuts exactly where a scenario tells it.

It terminates TLS with the API server's own serving certificate (valid for 127.0.0.1 on any port) and
dials the API server as the admin, with the admin's client certificate: what a client of the proxy may do
is what the admin may. It offers HTTP/1.1 only (ALPN), so Go's clients (the Kubernetes provider, kubectl)
and Python's send it one request at a time per connection, which it reads whole (its line, headers and
body) before passing it on; answers flow back as they come (a watch, `logs -f`).

A ``Cut`` names the requests it counts (method and path) and the one it acts on (the ``nth``): that
request reaches the API server, which acts on it and answers; the proxy drops the answer, closes every
connection and stops listening, so the client sees its answer lost and every later dial refused: the API
server gone, right after it did what was asked. ``restore`` listens again on the same port. Nothing is
timed by a sleep: a scenario waits for ``fired`` (bounded) and then acts.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from tests.e2e.cluster import LOOPBACK
from tests.e2e.cluster.pki import ADMIN, write_kubeconfig

HEAD_LIMIT: Final = 1 << 16
"""The most bytes a request's line and headers may take (the API server's clients send far fewer)."""
CHUNK: Final = 1 << 16
CONTROL_TIMEOUT_S: Final = 30.0
"""The longest a call into the proxy's event loop (start, cut, restore, stop) may take."""


class ProxyError(Exception):
    """The proxy could not do what it was told (named in the message)."""


@dataclass(frozen=True)
class Cut:
    """Cut at the ``nth`` request (counted from 1) whose method is ``method``, whose path (without
    its query) matches ``path`` and, when ``agent`` is given, whose User-Agent starts with it (the
    Kubernetes provider's requests from the RevisionReaper's, say). A dry run (``dryRun`` in the query:
    what a preview sends) never counts unless ``dry_runs``. With ``hold``, the request is not cut but held
    back until ``release`` (the API server sees it then): a scenario looks at the cluster in the moment
    before, e.g. before a revision is deleted."""

    method: str
    path: str
    nth: int = 1
    agent: str | None = None
    dry_runs: bool = False
    hold: bool = False

    def matches(self, method: str, target: str, agent: str = "") -> bool:
        path, _, query = target.partition("?")
        return (
            method == self.method
            and re.fullmatch(self.path, path) is not None
            and (self.agent is None or agent.startswith(self.agent))
            and (self.dry_runs or "dryRun" not in urllib.parse.parse_qs(query))
        )

    def describe(self) -> str:
        by = f" from {self.agent}" if self.agent is not None else ""
        return f"request {self.nth} of {self.method} {self.path}{by}"


@dataclass(eq=False)
class _Connection:
    """One client connection and its dial to the API server."""

    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter
    drop_answer: bool = False
    answered: asyncio.Event = field(default_factory=asyncio.Event)

    def close(self) -> None:
        for writer in (self.client, self.upstream):
            with contextlib.suppress(Exception):
                writer.transport.abort()


@dataclass(frozen=True)
class Seen:
    """A request the proxy passed on (for a scenario's checks)."""

    method: str
    target: str
    agent: str


class FaultProxy:
    """``start`` listens on a free loopback port (``port``); ``kubeconfig`` writes a kubeconfig for it;
    ``arm`` sets the next cut; ``fired`` is set once it happened; ``disarm`` takes a cut back;
    ``restore`` brings the API server back; ``stop`` ends everything. The proxy's loop runs in a thread
    of its own."""

    def __init__(self, pki: Path, apiserver_port: int) -> None:
        self._pki = pki
        self._apiserver_port = apiserver_port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._serving: ssl.SSLContext | None = None
        self._upstream: ssl.SSLContext | None = None
        self._connections: set[_Connection] = set()
        self._cut: Cut | None = None
        self._counted = 0
        self.port = 0
        self.fired = threading.Event()
        self._release = asyncio.Event()
        self.seen: list[Seen] = []
        self._passed = threading.Condition()

    # -- control, from the scenario's thread ----------------------------------------------------------

    def start(self) -> None:
        """Listen; the TLS contexts are made here, once: the API server's certificate for clients, the
        admin's towards the API server, HTTP/1.1 both ways."""
        self._serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._serving.load_cert_chain(self._pki / "apiserver.crt", self._pki / "apiserver.key")
        self._upstream = ssl.create_default_context(cafile=str(self._pki / "ca.crt"))
        self._upstream.load_cert_chain(self._pki / f"{ADMIN}.crt", self._pki / f"{ADMIN}.key")
        for context in (self._serving, self._upstream):
            context.set_alpn_protocols(["http/1.1"])
        self._thread.start()
        self._call(self._listen)

    def kubeconfig(self, path: Path) -> Path:
        """A kubeconfig that reaches the API server through this proxy, as the admin."""
        write_kubeconfig(path, server=f"https://{LOOPBACK}:{self.port}", pki=self._pki, user=ADMIN)
        return path

    def arm(self, cut: Cut) -> None:
        """Cut at ``cut`` from now on (requests before this call do not count)."""

        async def set_cut() -> None:
            self._cut, self._counted = cut, 0
            self.fired.clear()

        self._call(set_cut)

    def release(self) -> None:
        """Let a held request go on to the API server."""
        self._call(self._release.set)

    def disarm(self) -> None:
        """No cut from now on, and a held request goes on: a cut that never came (its client stopped
        first) would otherwise catch the next run's request."""

        async def clear() -> None:
            self._cut = None
            self._release.set()

        self._call(clear)

    def wait_fired(self, timeout: float) -> None:
        if not self.fired.wait(timeout):
            cut = self._cut.describe() if self._cut is not None else "no cut"
            msg = f"the proxy's cut ({cut}) did not happen within {timeout:.0f} s ({self._counted} counted)"
            raise ProxyError(msg)

    def wait_for(self, condition: Callable[[], bool], timeout: float) -> None:
        """Until ``condition`` holds (e.g. on ``count``), checked as each request passes, at most
        ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._passed:
            while not condition():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    msg = f"not within {timeout:.0f} s after {len(self.seen)} requests"
                    raise ProxyError(msg)
                self._passed.wait(remaining)

    def restore(self) -> None:
        """Listen again (the API server back), with no cut armed and nothing held."""

        async def back() -> None:
            self._cut = None
            self._release.set()
            await self._listen()

        self._call(back)

    def stop(self) -> None:
        if self._thread.is_alive():
            self._call(self._shut)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(CONTROL_TIMEOUT_S)
        self._loop.close()

    def count(self, method: str, path: str, agent: str | None = None) -> int:
        """How many requests passed on so far had ``method``, a path matching ``path`` (and ``agent``),
        dry runs left out."""
        probe = Cut(method, path, agent=agent)
        return sum(1 for seen in list(self.seen) if probe.matches(seen.method, seen.target, seen.agent))

    def _call(self, action: Callable[[], object]) -> None:
        async def run() -> None:
            result = action()
            if asyncio.iscoroutine(result):
                await result

        asyncio.run_coroutine_threadsafe(run(), self._loop).result(CONTROL_TIMEOUT_S)

    # -- in the loop ----------------------------------------------------------------------------------

    async def _listen(self) -> None:
        if self._server is not None:
            return
        self._server = await asyncio.start_server(
            self._serve, LOOPBACK, self.port, ssl=self._serving, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _shut(self) -> None:
        """Stop listening and close every connection: to its clients, the API server is gone."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for connection in list(self._connections):
            connection.close()
        self._connections.clear()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                LOOPBACK, self._apiserver_port, ssl=self._upstream, server_hostname=LOOPBACK
            )
        except OSError:
            client_writer.transport.abort()
            return
        connection = _Connection(client_writer, upstream_writer)
        self._connections.add(connection)
        answers = asyncio.ensure_future(self._answers(upstream_reader, connection))
        try:
            await self._requests(client_reader, connection)
        except (OSError, asyncio.IncompleteReadError, ValueError, ssl.SSLError):
            pass
        finally:
            answers.cancel()
            connection.close()
            self._connections.discard(connection)

    async def _requests(self, reader: asyncio.StreamReader, connection: _Connection) -> None:
        """Pass requests on one at a time, each read whole; an upgraded connection becomes a pipe."""
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return
            if len(head) > HEAD_LIMIT:
                return
            method, target, headers = _parse_head(head)
            body = await _read_body(reader, headers)
            agent = headers.get("user-agent", "")
            with self._passed:
                self.seen.append(Seen(method, target, agent))
                self._passed.notify_all()
            cut = self._cut
            if cut is not None and cut.matches(method, target, agent):
                self._counted += 1
                if self._counted == cut.nth and cut.hold:
                    self._release.clear()
                    self.fired.set()
                    await self._release.wait()
                elif self._counted == cut.nth:
                    connection.drop_answer = True
            connection.upstream.write(head + body)
            await connection.upstream.drain()
            if connection.drop_answer:
                await connection.answered.wait()
                await self._shut()
                self.fired.set()
                return
            if "upgrade" in headers:
                while data := await reader.read(CHUNK):
                    connection.upstream.write(data)
                    await connection.upstream.drain()
                return

    async def _answers(self, reader: asyncio.StreamReader, connection: _Connection) -> None:
        """The API server's answers, as they come; the first byte of a dropped answer is the signal
        that the API server acted on the request."""
        while data := await reader.read(CHUNK):
            if connection.drop_answer:
                connection.answered.set()
                return
            connection.client.write(data)
            await connection.client.drain()
        connection.client.transport.abort()


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    """The method, the target and the headers (lower-cased names) of a request's head."""
    line, *fields = head.decode("latin-1").split("\r\n")
    parts = line.split(" ")
    if len(parts) != 3:
        msg = f"not an HTTP request line: {line!r}"
        raise ValueError(msg)
    headers: dict[str, str] = {}
    for header in fields:
        if header:
            name, _, value = header.partition(":")
            headers[name.strip().lower()] = value.strip()
    return parts[0], parts[1], headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    """A request's body as it came (chunked bodies with their framing)."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = b""
        while True:
            size_line = await reader.readuntil(b"\r\n")
            body += size_line
            size = int(size_line.split(b";")[0].strip(), 16)
            if size == 0:
                while (trailer := await reader.readuntil(b"\r\n")) != b"\r\n":
                    body += trailer
                return body + b"\r\n"
            body += await reader.readexactly(size + 2)
    length = int(headers.get("content-length", "0") or "0")
    return await reader.readexactly(length) if length else b""
