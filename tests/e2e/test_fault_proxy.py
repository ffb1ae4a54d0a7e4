"""The fault proxy (tests/e2e/faults/proxy.py) in front of a small HTTPS server that asks for the admin's
client certificate, as the API server does: requests pass whole, a cut lets the server act and loses its
answer, then every dial is refused until ``restore``."""

from __future__ import annotations

import http.client
import http.server
import re
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
import yaml

from tests.e2e.cluster import LOOPBACK
from tests.e2e.cluster.pki import write_pki
from tests.e2e.faults.proxy import Cut, FaultProxy, ProxyError

CREATE: Final = Cut("POST", r"/apis/serving\.knative\.dev/v1/namespaces/[^/]+/services", nth=2)
TIMEOUT_S: Final = 10.0
ANSWER_LOST: Final = (ConnectionError, http.client.HTTPException, ssl.SSLError)
"""What a client sees when the proxy drops its answer and closes the connection."""
CREATES: Final = "/apis/serving.knative.dev/v1/namespaces/apps/services"


class Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every request with its method, path and body; keeps what it received."""

    protocol_version = "HTTP/1.1"
    received: list[tuple[str, str, bytes]]

    def do_GET(self) -> None:
        self.answer(b"")

    def do_DELETE(self) -> None:
        self.answer(b"")

    def do_POST(self) -> None:
        self.answer(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

    def answer(self, body: bytes) -> None:
        self.server.received.append((self.command, self.path, body))  # type: ignore[attr-defined]
        payload = f"{self.command} {self.path} ".encode() + body
        self.send_response(200)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("pki")
    write_pki(directory)
    return directory


@pytest.fixture
def upstream(pki: Path) -> Iterator[http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer((LOOPBACK, 0), Recorder)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki / "ca.crt"))
    context.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
    context.verify_mode = ssl.CERT_REQUIRED  # the admin's client certificate, as the API server asks
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(TIMEOUT_S)


@pytest.fixture
def proxy(pki: Path, upstream: http.server.ThreadingHTTPServer) -> Iterator[FaultProxy]:
    running = FaultProxy(pki, upstream.server_address[1])
    running.start()
    yield running
    running.stop()


def connect(pki: Path, proxy: FaultProxy) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    return http.client.HTTPSConnection(LOOPBACK, proxy.port, context=context, timeout=TIMEOUT_S)


def post(connection: http.client.HTTPSConnection, path: str, body: bytes) -> bytes:
    connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    return connection.getresponse().read()


def test_requests_pass_whole_and_answers_come_back_on_one_connection(
    pki: Path, proxy: FaultProxy, upstream: http.server.ThreadingHTTPServer
) -> None:
    connection = connect(pki, proxy)
    assert post(connection, "/api/v1/namespaces", b'{"a": 1}') == b'POST /api/v1/namespaces {"a": 1}'
    connection.request("GET", "/api/v1/pods?labelSelector=x")
    assert connection.getresponse().read() == b"GET /api/v1/pods?labelSelector=x "
    connection.close()
    assert upstream.received == [  # type: ignore[attr-defined]
        ("POST", "/api/v1/namespaces", b'{"a": 1}'),
        ("GET", "/api/v1/pods?labelSelector=x", b""),
    ]
    assert proxy.count("GET", "/api/v1/pods") == 1


def test_a_cut_lets_the_server_act_loses_its_answer_and_refuses_every_dial_until_restored(
    pki: Path, proxy: FaultProxy, upstream: http.server.ThreadingHTTPServer
) -> None:
    proxy.arm(CREATE)
    connection = connect(pki, proxy)
    assert post(connection, CREATES, b"first").startswith(b"POST")
    with pytest.raises(ANSWER_LOST):
        post(connection, CREATES, b"second")
    proxy.wait_fired(TIMEOUT_S)
    assert [body for _, _, body in upstream.received] == [b"first", b"second"]  # type: ignore[attr-defined]
    with pytest.raises(ConnectionRefusedError):
        post(connect(pki, proxy), CREATES, b"third")

    proxy.restore()
    assert post(connect(pki, proxy), CREATES, b"fourth").endswith(b"fourth")
    assert [body for _, _, body in upstream.received][-1] == b"fourth"  # type: ignore[attr-defined]


def test_a_cut_that_never_comes_fails_naming_it(pki: Path, proxy: FaultProxy) -> None:
    proxy.arm(CREATE)
    with pytest.raises(ProxyError, match=r"request 2 of POST .*services.* did not happen within 0 s"):
        proxy.wait_fired(0.01)


def test_the_kubeconfig_reaches_the_proxy_as_the_admin(pki: Path, proxy: FaultProxy, tmp_path: Path) -> None:
    config = yaml.safe_load(proxy.kubeconfig(tmp_path / "kubeconfig").read_text())
    assert config["clusters"][0]["cluster"]["server"] == f"https://{LOOPBACK}:{proxy.port}"
    assert config["users"][0]["user"]["client-certificate"] == str(pki / "admin.crt")


def test_a_cut_for_one_client_lets_another_clients_requests_through(
    pki: Path, proxy: FaultProxy, upstream: http.server.ThreadingHTTPServer
) -> None:
    """A cut may name the client by its User-Agent: the reaper's requests, not the provider's."""
    path = "/apis/serving.knative.dev/v1/namespaces/apps/services/app"
    proxy.arm(Cut("GET", re.escape(path), agent="OpenAPI-Generator/"))
    connection = connect(pki, proxy)
    connection.request("GET", path, headers={"User-Agent": "pulumi-resource-kubernetes/4.25.0"})
    assert connection.getresponse().read() == f"GET {path} ".encode()
    assert not proxy.fired.is_set()
    connection.request("GET", path, headers={"User-Agent": "OpenAPI-Generator/33.1.0/python"})
    with pytest.raises(ANSWER_LOST):
        connection.getresponse().read()
    proxy.wait_fired(TIMEOUT_S)
    assert proxy.count("GET", re.escape(path)) == 2
    assert proxy.count("GET", re.escape(path), agent="pulumi-resource-kubernetes/") == 1


def test_a_dry_run_does_not_count_towards_a_cut(
    pki: Path, proxy: FaultProxy, upstream: http.server.ThreadingHTTPServer
) -> None:
    """A preview's server-side dry runs reach the server, but the cut waits for the real request."""
    proxy.arm(CREATE)
    connection = connect(pki, proxy)
    for body in (b"first", b"dry one", b"dry two"):
        path = CREATES if body == b"first" else f"{CREATES}?dryRun=All&fieldManager=x"
        assert post(connection, path, body).endswith(body)
    assert not proxy.fired.is_set()
    with pytest.raises(ANSWER_LOST):
        post(connection, CREATES, b"second")
    proxy.wait_fired(TIMEOUT_S)
    assert proxy.count("POST", re.escape(CREATES)) == 2


def test_a_held_request_reaches_the_server_only_once_released(
    pki: Path, proxy: FaultProxy, upstream: http.server.ThreadingHTTPServer
) -> None:
    path = "/apis/serving.knative.dev/v1/namespaces/apps/revisions/app-00001"
    proxy.arm(Cut("DELETE", re.escape(path), hold=True))
    answers: list[bytes] = []

    def delete() -> None:
        connection = connect(pki, proxy)
        connection.request("DELETE", path)
        answers.append(connection.getresponse().read())

    deleting = threading.Thread(target=delete)
    deleting.start()
    proxy.wait_fired(TIMEOUT_S)
    assert upstream.received == []  # type: ignore[attr-defined]
    proxy.release()
    deleting.join(TIMEOUT_S)
    assert answers == [f"DELETE {path} ".encode()]
    assert upstream.received == [("DELETE", path, b"")]  # type: ignore[attr-defined]


def test_a_disarmed_hold_that_never_came_lets_the_next_request_through(
    pki: Path, proxy: FaultProxy, upstream: http.server.ThreadingHTTPServer
) -> None:
    path = "/apis/serving.knative.dev/v1/namespaces/apps/revisions/app-00001"
    proxy.arm(Cut("DELETE", re.escape(path), hold=True))
    proxy.disarm()
    connection = connect(pki, proxy)
    connection.request("DELETE", path)
    assert connection.getresponse().read() == f"DELETE {path} ".encode()
    assert not proxy.fired.is_set()
    assert upstream.received == [("DELETE", path, b"")]  # type: ignore[attr-defined]
