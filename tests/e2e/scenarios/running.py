"""What the scenarios with a node share: reaching an app through the ingress, waiting for Knative's
conditions, the app's pods (issue 37). Every wait is bounded, every request loop counted."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from flyte_apps.core.readiness import ready_condition
from tests.e2e.node.node import PRIVATE_PORT, PUBLIC_PORT
from tests.e2e.node.plane import NodePlane
from tests.e2e.node.traffic import HTTP_TIMEOUT_S, get, get_until_ok, report
from tests.e2e.outcome import ScenarioFailed
from tests.e2e.scenarios.suite import KSERVICES, LABEL_SERVICE, NAMESPACE, Suite

READY_S: Final = 240.0
"""A KService of the test app Ready: its pods start in seconds; the node is shared with the suite."""
POLL_S: Final = 1.0
CLUSTER_DOMAIN: Final = "svc.cluster.local"
HTTP_OK: Final = 200
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})
"""A pod in one of these phases is finished: the kubelet then removes its object with a grace period of 0
(k8s.io/kubernetes pkg/kubelet/status: canBeDeleted asks for a terminal phase), and the API server stores
that 0 for a moment before the object goes. That 0 is not a deletion without a grace period."""
ROUTE_S: Final = 30.0
"""How long after a KService is Ready its latest revision may take to answer through the ingress.
Traefik's Knative provider marks the KIngress Ready as it hands its routes on, and Traefik applies new
routes at most every 2 s (``providersThrottleDuration``'s default: traefik v3.6.12,
pkg/provider/kubernetes/knative/kubernetes.go and cmd/configuration.go), so for a moment the ingress
still routes to the revision before."""


def node_ip(suite: Suite) -> str:
    plane = suite.plane
    if not isinstance(plane, NodePlane):
        raise ScenarioFailed("the scenario needs the control plane's node (tests/e2e/node)")
    return plane.addresses.node_ip


def condition(kservice: dict[str, Any], kind: str) -> dict[str, Any]:
    for found in kservice.get("status", {}).get("conditions", []):
        if found.get("type") == kind:
            return dict(found)
    return {}


def wait_ready(
    suite: Suite, name: str, namespace: str = NAMESPACE, timeout: float = READY_S
) -> dict[str, Any]:
    """The KService once Knative says it is Ready (its latest Revision serving); fails naming Knative's
    reason when it says it never will be, or when the time is up."""
    deadline = time.monotonic() + timeout
    last: dict[str, Any] = {}
    while time.monotonic() < deadline:
        kservice: dict[str, Any] = suite.get(KSERVICES, name, namespace=namespace)
        last = condition(kservice, "Ready")
        if (
            last.get("status") == "True"
            and kservice["status"].get("observedGeneration") == kservice["metadata"]["generation"]
        ):
            return kservice
        time.sleep(POLL_S)
    raise ScenarioFailed(f"{namespace}/{name} not Ready after {timeout:.0f} s: {last}")


def wait_failed(suite: Suite, name: str, namespace: str, timeout: float = READY_S) -> dict[str, Any]:
    """Knative's Ready condition once it is False (a KService that can never be Ready)."""
    deadline = time.monotonic() + timeout
    last: dict[str, Any] = {}
    while time.monotonic() < deadline:
        last = condition(suite.get(KSERVICES, name, namespace=namespace), "Ready")
        if last.get("status") == "False":
            return last
        time.sleep(POLL_S)
    raise ScenarioFailed(f"{namespace}/{name}: Knative did not give up after {timeout:.0f} s: {last}")


def public_host(kservice: dict[str, Any]) -> str:
    return str(kservice["status"]["url"]).split("://", 1)[1]


def ready_status(obj: dict[str, Any]) -> str:
    """The status of a node's or pod's Ready condition (True, False, Unknown; empty without one)."""
    return str((ready_condition(obj) or {}).get("status", ""))


def one_try(suite: Suite, host: str, timeout: float = HTTP_TIMEOUT_S, path: str = "/e2e") -> str:
    """One request through Traefik's public entrypoint with ``host``, one try: "" if it answered 200,
    else what went wrong (for counting failed requests under a fault or a load)."""
    try:
        status, body = get(f"http://{node_ip(suite)}:{PUBLIC_PORT}{path}", host, timeout)
    except OSError as exc:
        return f"{host}: {exc}"
    return "" if status == HTTP_OK else f"{host}: {status} {body[:80]!r}"


def log_path(text: str, count: int = 1) -> str:
    """The test app's path that makes the replica answering it write ``count`` lines ``<text> <n>``."""
    return f"/control/log?n={count}&text={text}"


def write_lines(pod: Mapping[str, Any], port: int, text: str, count: int) -> None:
    """Have the test app in ``pod`` (listening on ``port``) write ``count`` lines, straight to the pod."""
    get_until_ok(f"http://{pod['status']['podIP']}:{port}{log_path(text, count)}")


def through_ingress(suite: Suite, kservice: dict[str, Any], path: str = "/e2e") -> dict[str, Any]:
    """The app's answer through Traefik's public entrypoint, with its public host."""
    return report(f"http://{node_ip(suite)}:{PUBLIC_PORT}{path}", public_host(kservice))


def through_ingress_at_latest(suite: Suite, kservice: dict[str, Any], path: str = "/e2e") -> dict[str, Any]:
    """The app's answer through the public entrypoint once its latest Ready revision gives it (within
    ``ROUTE_S``); fails naming the revision that still answers."""
    revision = kservice["status"]["latestReadyRevisionName"]
    deadline = time.monotonic() + ROUTE_S
    while True:
        answer = through_ingress(suite, kservice, path)
        served = answer["env"].get("K_REVISION")
        if served == revision:
            return answer
        if time.monotonic() > deadline:
            name = kservice["metadata"]["name"]
            msg = f"{name}: answered by {served}, not {revision}, {ROUTE_S:.0f} s after it was Ready"
            raise ScenarioFailed(msg)
        time.sleep(POLL_S)


def private_host(name: str, namespace: str) -> str:
    return f"{name}.{namespace}.{CLUSTER_DOMAIN}"


def through_private_ingress(suite: Suite, name: str, namespace: str, path: str = "/e2e") -> dict[str, Any]:
    """The app's answer through Traefik's cluster-local entrypoint, with its private host."""
    return report(f"http://{node_ip(suite)}:{PRIVATE_PORT}{path}", private_host(name, namespace))


def app_pods(suite: Suite, kservice: str, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The KService's pods (every revision's), as the API server lists them."""
    items = suite.get("pods", namespace=namespace)["items"]
    return [p for p in items if p["metadata"].get("labels", {}).get(LABEL_SERVICE) == kservice]


def running_pods(suite: Suite, kservice: str, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    return [
        p
        for p in app_pods(suite, kservice, namespace)
        if p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]
