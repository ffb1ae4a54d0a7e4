"""The fake Kubernetes API server of ``tests/fakes`` as the cluster of the day-2 benchmarks.

The server runs in the benchmark process (threads); what is measured runs in child processes, so
the server's own CPU time and memory (its watch history grows with every event) are not charged to
the code under test. :class:`GatedFakeKubeApi` adds to the test fake: watch requests can be held at
the door until :meth:`GatedFakeKubeApi.release_watches` (a watcher that listed before the hold then
receives every change made meanwhile as one backlog, as fast as it can read it, so a benchmark
measures the watcher and not how fast the fake can make changes); API discovery, so that ``kubectl``
can be a floor; and RBAC refusing ``list``/``watch`` on Revisions (``forbid_revision_lists``).
"""

from __future__ import annotations

import copy
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from flyte_apps.core.plan import plan_stack
from tests.fakes.kube_api import FAKE_TOKEN, FakeKubeApi
from tests.fakes.kube_http import HttpFrontend, JsonResponse, StreamResponse
from tests.fakes.kube_semantics import KSERVICES, PODS, REVISIONS, status_body

NAMESPACE: Final = "flyte"
PROJECT: Final = "proj"
DOMAIN: Final = "dev"
USER_CONTAINER: Final = "app"
TOUCH_ANNOTATION: Final = "bench.flyte-apps/touched"
_HOLD_SLICE: Final = 0.25
_VERBS: Final = ["create", "delete", "get", "list", "patch", "update", "watch"]
_DISCOVERY: Final[dict[str, dict[str, Any]]] = {
    "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []},
    "/apis": {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": "serving.knative.dev",
                "versions": [{"groupVersion": "serving.knative.dev/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "serving.knative.dev/v1", "version": "v1"},
            }
        ],
    },
    "/api/v1": {
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {
                "name": "pods",
                "singularName": "pod",
                "namespaced": True,
                "kind": "Pod",
                "verbs": _VERBS,
                "shortNames": ["po"],
            },
            {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]},
            {
                "name": "namespaces",
                "singularName": "namespace",
                "namespaced": False,
                "kind": "Namespace",
                "verbs": _VERBS,
                "shortNames": ["ns"],
            },
        ],
    },
    "/apis/serving.knative.dev/v1": {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "serving.knative.dev/v1",
        "resources": [
            {
                "name": "services",
                "singularName": "service",
                "namespaced": True,
                "kind": "Service",
                "verbs": _VERBS,
                "shortNames": ["kservice", "ksvc"],
                "categories": ["all", "knative", "serving"],
            },
            {
                "name": "revisions",
                "singularName": "revision",
                "namespaced": True,
                "kind": "Revision",
                "verbs": _VERBS,
                "shortNames": ["rev"],
                "categories": ["all", "knative", "serving"],
            },
        ],
    },
}
"""What ``kubectl`` asks before it lists (legacy discovery: the fake serves JSON, not the aggregated
form, which makes kubectl fall back to these)."""


class _NoDelayFrontend(HttpFrontend):
    """The fake's HTTP front end with Nagle's algorithm off on every connection, as Go's net/http
    (the real API server) has it. ``http.server`` sends a response's headers and body in two writes;
    with Nagle on, the body waits for the client's delayed ACK, about 40 ms per small response, so a
    client making one GET per event would measure that delay instead of itself."""

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, address


class GatedFakeKubeApi(FakeKubeApi):
    """The test fake, whose watch requests wait while the gate is closed (it starts open), served
    without Nagle's delay (:class:`_NoDelayFrontend`)."""

    def __init__(self) -> None:
        super().__init__()
        self.forbid_revision_lists = False
        """Answer ``list`` and ``watch`` of Revisions with 403, as RBAC without those verbs would."""
        self.allow_anonymous = False
        """Serve requests without a bearer token, as an API server with anonymous access does:
        ``kubectl`` sends no token over plain HTTP, and the fake is served on plain HTTP."""
        self._gate = threading.Event()
        self._gate.set()
        self._arrived = threading.Event()
        self._halted = threading.Event()

    def start(self) -> None:
        self._httpd = _NoDelayFrontend(self)
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def hold_watches(self) -> None:
        """From now on, watch requests wait until :meth:`release_watches`."""
        self._arrived.clear()
        self._gate.clear()

    def wait_for_watch(self, timeout: float) -> bool:
        """True once a watch request is waiting at the closed gate."""
        return self._arrived.wait(timeout)

    def release_watches(self) -> None:
        self._gate.set()

    def stop(self) -> None:
        self._halted.set()
        self._gate.set()
        super().stop()

    def handle(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str], body: bytes
    ) -> JsonResponse | StreamResponse:
        if method == "GET" and path.rstrip("/") in _DISCOVERY:
            return JsonResponse(200, _DISCOVERY[path.rstrip("/")])
        if self.allow_anonymous and "authorization" not in headers:
            headers = {**headers, "authorization": f"Bearer {FAKE_TOKEN}"}
        if self.forbid_revision_lists and method == "GET" and path.rstrip("/").endswith("/revisions"):
            verb = "watch" if query.get("watch") in ("true", "1") else "list"
            message = (
                f'revisions.serving.knative.dev is forbidden: User "bench" cannot {verb} resource '
                f'"revisions" in API group "serving.knative.dev" in the namespace "{NAMESPACE}"'
            )
            return JsonResponse(403, status_body(403, message))
        if method == "GET" and query.get("watch") in ("true", "1") and not self._gate.is_set():
            self._arrived.set()
            while not self._gate.wait(_HOLD_SLICE) and not self._halted.is_set():
                pass
        return super().handle(method, path, query, headers, body)


@contextmanager
def running_fake(workdir: Path) -> Iterator[GatedFakeKubeApi]:
    """A started server with its kubeconfig at ``workdir/kubeconfig``; stopped on exit."""
    workdir.mkdir(parents=True, exist_ok=True)
    server = GatedFakeKubeApi()
    server.start()
    try:
        server.write_kubeconfig(workdir / "kubeconfig")
        server.ensure_namespace(NAMESPACE)
        yield server
    finally:
        server.stop()


def kubeconfig_of(server: FakeKubeApi) -> Path:
    if server.kubeconfig_path is None:
        msg = "the fake server has no kubeconfig yet"
        raise RuntimeError(msg)
    return server.kubeconfig_path


# --- apps for the watch benchmark ------------------------------------------------------------------


def deploy_apps(server: FakeKubeApi, count: int, *, replicas: int = 1, pods: bool = False) -> list[str]:
    """``count`` KServices exactly as the stack renders them (names ``app{i}``), each reconciled with a
    ready Revision reporting ``replicas`` actual replicas (and with ``pods``, that many running
    replica pods); their KService names."""
    config = {
        "flyte-apps:project": PROJECT,
        "flyte-apps:domain": DOMAIN,
        "flyte-apps:apps": [{"name": f"app{i}", "container": {"image": "nginx:1.27"}} for i in range(count)],
    }
    names: list[str] = []
    for app in plan_stack(config).apps:
        manifest: dict[str, Any] = copy.deepcopy(app.kservice)
        name = str(manifest["metadata"]["name"])
        server.create(KSERVICES, manifest, NAMESPACE)
        revision = server.reconcile_kservice(NAMESPACE, name)
        server.patch(REVISIONS, NAMESPACE, revision, {"status": {"actualReplicas": replicas}}, status=True)
        if pods:
            server.add_revision_pods(NAMESPACE, name, revision, count=replicas)
        names.append(name)
    return names


def count_requests(server: FakeKubeApi) -> dict[str, int]:
    """Requests so far by kind: ``list``/``watch``/``get`` of ``services``, ``revisions`` and ``pods``."""
    counts: dict[str, int] = {}
    for request in server.requests:
        if request.method != "GET":
            continue
        for resource in (KSERVICES, REVISIONS, PODS):
            marker = f"/{resource.plural}"
            if marker not in request.path:
                continue
            tail = request.path.rsplit(marker, 1)[1]
            verb = ("watch" if request.query.get("watch") in ("true", "1") else "list") if not tail else "get"
            key = f"{verb} {resource.plural}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def touch_apps(server: FakeKubeApi, names: Sequence[str], events: int, *, start: int = 0) -> float:
    """Make ``events`` modifications (one annotation each, round-robin over ``names``) through the
    fake's own write path; the seconds it took."""
    began = time.perf_counter()
    for i in range(start, start + events):
        patch = {"metadata": {"annotations": {TOUCH_ANNOTATION: str(i)}}}
        server.patch(KSERVICES, NAMESPACE, names[i % len(names)], patch)
    return time.perf_counter() - began


# --- an app with replicas for the logs benchmark ----------------------------------------------------


LOG_EPOCH: Final = datetime(2024, 1, 1, tzinfo=UTC)
_LINES_PER_STAMP: Final = 1_000


def log_message(replica: int, index: int) -> str:
    """A plausible access-log line (about 100 characters)."""
    return (
        f'10.0.{replica}.{index % 250} - - "GET /api/v1/items/{index}?view=full HTTP/1.1" 200 '
        f"{512 + index % 4096} {index % 997 / 10:.1f}ms req={replica:02d}-{index:08d}"
    )


def serve_app_with_logs(
    server: FakeKubeApi, app: str, *, replicas: int, lines: int, finish: bool = True
) -> list[str]:
    """The KService of ``app`` (project/domain :data:`PROJECT`/:data:`DOMAIN`), reconciled, with
    ``replicas`` pods whose ``app`` container logged ``lines`` lines each and then, with ``finish``,
    ended (phase ``Succeeded``), so a follower ends by itself; the pod names."""
    kservice = f"{app}-{PROJECT}-{DOMAIN}"
    server.add_kservice(NAMESPACE, kservice)
    revision = server.reconcile_kservice(NAMESPACE, kservice)
    pods = server.add_revision_pods(NAMESPACE, kservice, revision, count=replicas)
    for replica, pod in enumerate(pods):
        for first in range(0, lines, _LINES_PER_STAMP):
            batch = [log_message(replica, i) for i in range(first, min(lines, first + _LINES_PER_STAMP))]
            at = LOG_EPOCH + timedelta(milliseconds=first // _LINES_PER_STAMP)
            server.append_log(NAMESPACE, pod, USER_CONTAINER, *batch, at=at)
        if finish:
            server.finish_pod(NAMESPACE, pod)
    return pods
