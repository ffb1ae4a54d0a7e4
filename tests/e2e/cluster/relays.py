"""Relays between a unix socket and TCP on loopback: how processes in network namespaces of their own
reach the API server (and the API server reaches Knative's webhook) without any of them listening
outside loopback.

A unix socket in the work directory is reachable from every network namespace on this machine, a
loopback port only from its own. So the relay beside the API server listens on ``api.sock`` and
dials the API server's port; inside each Knative process's namespace, ``in_netns_main`` listens on
the API server's port on that namespace's loopback and dials ``api.sock``. The webhook goes the
other way. Both run as ``python -m tests.e2e.cluster _relay|_in-netns`` (``__main__``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Final

SELF: Final = "tests.e2e.cluster"
"""The module whose ``__main__`` runs the relays (``python -m SELF _relay ...``)."""
RELAY_COMMAND: Final = "_relay"
IN_NETNS_COMMAND: Final = "_in-netns"
CHUNK: Final = 65536
READY_S: Final = 30.0
IP_TIMEOUT_S: Final = 30.0


def parse_endpoint(text: str) -> tuple[str, str, int]:
    kind, _, rest = text.partition(":")
    if kind == "unix":
        return "unix", rest, 0
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        return "tcp", host, int(port)
    msg = f"not an endpoint: {text!r} (unix:PATH or tcp:HOST:PORT)"
    raise ValueError(msg)


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def serve_relay(listen: str, target: str) -> asyncio.AbstractServer:
    kind, where, port = parse_endpoint(target)

    async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if kind == "unix":
            return await asyncio.open_unix_connection(where)
        return await asyncio.open_connection(where, port)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await connect()
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    lkind, lwhere, lport = parse_endpoint(listen)
    if lkind == "unix":
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lwhere)
        return await asyncio.start_unix_server(handle, lwhere)
    return await asyncio.start_server(handle, lwhere, lport)


async def run_relays(pairs: Sequence[str], ready: threading.Event | None = None) -> None:
    servers = []
    for pair in pairs:
        listen, _, target = pair.partition("=")
        servers.append(await serve_relay(listen, target))
    if ready is not None:
        ready.set()
    await asyncio.gather(*(s.serve_forever() for s in servers))


def relay_argv(pairs: Sequence[str]) -> list[str]:
    """The command that runs ``pairs`` (``LISTEN=TARGET``) as a process of its own."""
    return [sys.executable, "-m", SELF, RELAY_COMMAND, *pairs]


def in_netns_argv(netns: Sequence[str], relays: Sequence[str], command: Sequence[str]) -> list[str]:
    """The command that runs ``command`` in a new network namespace (``netns``: the ``unshare``
    prefix), its loopback joined to the outside by ``relays``."""
    flags = [f"--relay={relay}" for relay in relays]
    return [*netns, sys.executable, "-m", SELF, IN_NETNS_COMMAND, *flags, "--", *command]


def relay_main(pairs: Sequence[str]) -> int:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run_relays(pairs))
    return 0


def in_netns_main(relays: Sequence[str], command: Sequence[str]) -> int:
    """Inside a new network namespace: bring ``lo`` up, start the relays, run ``command`` until it
    exits or this process is told to stop (then stop it too)."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=IP_TIMEOUT_S)
    ready = threading.Event()
    threading.Thread(target=lambda: asyncio.run(run_relays(relays, ready)), daemon=True).start()
    if not ready.wait(READY_S):
        print("relays did not start", file=sys.stderr)
        return 1
    child = subprocess.Popen(list(command))

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    try:
        return child.wait()
    finally:
        if child.poll() is None:
            child.kill()
