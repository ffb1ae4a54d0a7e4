"""``python -m tests.e2e.node try``: a node on a control plane, in a network namespace of its own,
exercised stage by stage, then stopped and checked for leftovers. For trying the node by hand until
the cluster package starts it; nothing here is used by the scenarios.

The control plane is the cluster package's, with the changes a node needs (``control_plane.py``)
applied to its command lines and certificates, and its autoscaler process stopped once Knative is
installed (the node runs the autoscaler as a pod).

Stages (each bounded; the first failure stops the run, then everything is stopped):

- ``pods``: a test-app pod Ready (a memory emptyDir at /dev/shm, an env var), its answer from its IP,
  its log through the API server and kubelet, a pod under a stack's image name, and a pod whose
  image exists nowhere failing to pull from the closed registry port.
- ``services``: a ClusterIP Service of that pod answering through kube-proxy's rules.
- ``knative``: the activator, autoscaler and Traefik; a KService Ready and answering through
  Traefik with its host; then scaled to zero and answering again (through the activator).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from tests.e2e import build
from tests.e2e.cluster import signals_deferred
from tests.e2e.node.configs import Addresses
from tests.e2e.node.node import (
    DATA_PLANE_TOOLS,
    NODE_TOOLS,
    PRIVATE_PORT,
    Node,
    NodeError,
    wait_condition,
)
from tests.e2e.node.plane import NodePlane
from tests.e2e.node.traffic import get, get_until_ok, report

NETNS_MARKER: Final = "FLYTE_APPS_E2E_NODE_TRY_NETNS"
NAMESPACE: Final = "node-try"
STAGES: Final = ("pods", "services", "knative")
POD_READY_S: Final = 120.0
KSERVICE_READY_S: Final = 240.0
SCALE_TO_ZERO_S: Final = 180.0
REQUEST_PAUSE_S: Final = 1.0
SHM_BYTES: Final = 128 * 1024 * 1024
MISSING_IMAGE: Final = "ghcr.io/flyte-apps-e2e/does-not-exist:1"
GPU: Final = "nvidia.com/gpu"
MAPPED_DOMAIN: Final = "hello.example.org"
DOMAIN_MAPPING_READY_S: Final = 60.0
TRY_DOMAIN: Final = "example.com"
"""A public domain: with the default (svc.cluster.local) every route is cluster-local (the private
entrypoint only)."""
FAST_AUTOSCALER: Final = {
    "stable-window": "6s",
    "scale-to-zero-grace-period": "6s",
    "scale-to-zero-pod-retention-period": "0s",
}
"""config-autoscaler for a scale-to-zero within a bounded wait (6 s is the smallest stable window)."""


def say(text: str) -> None:
    print(f"node-try: {text}", file=sys.stderr, flush=True)


def timed(what: str, step: Callable[[], Any]) -> Any:
    began = time.monotonic()
    result = step()
    say(f"{what}: ok ({time.monotonic() - began:.1f} s)")
    return result


def pod(name: str, image: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name}},
        "spec": {"containers": [{"name": "app", "image": image, "imagePullPolicy": "IfNotPresent", **spec}]},
    }


def stage_pods(node: Node, stack_image: str) -> str:
    """The pods stage; returns the test pod's IP."""
    kubectl = node.kubectl
    assert node.images is not None
    kubectl.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    app = pod(
        "app",
        node.images.app.name,
        args=["-port", "8080"],
        env=[{"name": "TRY_VALUE", "value": "from-the-pod-spec"}],
        ports=[{"containerPort": 8080}],
        readinessProbe={"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1},
        volumeMounts=[{"name": "shm", "mountPath": "/dev/shm"}],
    )
    app["spec"]["volumes"] = [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "128Mi"}}]
    kubectl.apply([app, pod("stack-image", stack_image), pod("missing", MISSING_IMAGE)])
    timed(
        "test-app pod Ready",
        lambda: wait_condition(kubectl, "Ready", POD_READY_S, "pod/app", "pod/stack-image", "-n", NAMESPACE),
    )
    ip = str(kubectl.get_json("pod", "app", "-n", NAMESPACE)["status"]["podIP"])
    answer = report(f"http://{ip}:8080/from-the-node")
    if answer["env"].get("TRY_VALUE") != "from-the-pod-spec":
        raise NodeError(f"the pod's env is not the spec's: {answer['env']}")
    if answer["shm"].get("sizeBytes") != SHM_BYTES:
        raise NodeError(f"/dev/shm is not the 128Mi memory emptyDir: {answer['shm']}")
    say(f"pod answered from {ip}: uid {answer['uid']}, /dev/shm {answer['shm']['sizeBytes']} bytes")
    get_until_ok(f"http://{ip}:8080/control/log?n=3&text=logged-on-demand")
    logs = kubectl("logs", "app", "-n", NAMESPACE).stdout
    if "logged-on-demand 3" not in logs:
        raise NodeError(f"kubectl logs has not the lines asked for: {logs[-500:]!r}")
    say("kubectl logs (API server -> kubelet): the lines written on demand are there")

    def pull_refused() -> bool:
        status = kubectl.get_json("pod", "missing", "-n", NAMESPACE)["status"]
        waiting = [c.get("state", {}).get("waiting", {}) for c in status.get("containerStatuses", [])]
        return any(w.get("reason") in ("ErrImagePull", "ImagePullBackOff") for w in waiting)

    node.advertise({GPU: "1"})
    gpu = pod("gpu", node.images.app.name, resources={"requests": {GPU: "1"}, "limits": {GPU: "1"}})
    kubectl.apply([gpu])
    wait_condition(kubectl, "Ready", POD_READY_S, "pod/gpu", "-n", NAMESPACE)
    say(f"a pod asking {GPU}: 1 runs once the node advertises one (no device: there is none)")
    wait(pull_refused, "the missing image's pull to fail", POD_READY_S)
    events = kubectl(
        "get", "events", "-n", NAMESPACE, "--field-selector=involvedObject.name=missing", "-o", "json"
    ).stdout
    if "127.0.0.1:1" not in events:
        raise NodeError("the failed pull does not name the closed registry port 127.0.0.1:1")
    say("a missing image's pull went to 127.0.0.1:1 and failed (connection refused)")
    return ip


def stage_services(node: Node) -> None:
    kubectl = node.kubectl
    kubectl.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "app", "namespace": NAMESPACE},
                "spec": {"selector": {"app": "app"}, "ports": [{"port": 80, "targetPort": 8080}]},
            }
        ]
    )
    cluster_ip = kubectl.get_json("service", "app", "-n", NAMESPACE)["spec"]["clusterIP"]
    answer = report(f"http://{cluster_ip}/through-the-service")
    say(f"Service {cluster_ip}:80 answered (pod {answer['hostname']}) through kube-proxy's nftables rules")


def stage_knative(node: Node, image: str) -> None:
    kubectl = node.kubectl
    timed("activator, autoscaler and Traefik", node.start_data_plane)
    kubectl(
        "patch",
        "configmap",
        "config-autoscaler",
        "-n",
        "knative-serving",
        "--type=merge",
        "-p",
        json.dumps({"data": FAST_AUTOSCALER}),
    )
    service = {
        "apiVersion": "serving.knative.dev/v1",
        "kind": "Service",
        "metadata": {"name": "hello", "namespace": NAMESPACE},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "image": image,
                            "args": ["-fail-readiness=false"],
                            "env": [{"name": "TRY_VALUE", "value": "from-the-kservice"}],
                            "ports": [{"containerPort": 8080}],
                            "readinessProbe": {"httpGet": {"path": "/healthz"}},
                        }
                    ]
                }
            }
        },
    }
    domain = {"data": {TRY_DOMAIN: ""}}
    kubectl(
        "patch",
        "configmap",
        "config-domain",
        "-n",
        "knative-serving",
        "--type=merge",
        "-p",
        json.dumps(domain),
    )
    kubectl.apply([service])
    timed(
        "KService Ready",
        lambda: wait_condition(kubectl, "Ready", KSERVICE_READY_S, "ksvc/hello", "-n", NAMESPACE),
    )
    url = kubectl.get_json("ksvc", "hello", "-n", NAMESPACE)["status"]["url"]
    host = url.split("://", 1)[1]
    answer = report(f"http://{node.addresses.node_ip}:80/through-traefik", host)
    if answer["env"].get("TRY_VALUE") != "from-the-kservice" or answer["request"]["host"] != host:
        raise NodeError(f"Traefik's answer is not the KService's: {answer['request']} {answer['env']}")
    say(f"KService {host} answered through Traefik (K_REVISION={answer['env'].get('K_REVISION')})")
    local = f"hello.{NAMESPACE}.svc.cluster.local"
    answer = report(f"http://{node.addresses.node_ip}:{PRIVATE_PORT}/cluster-local", local)
    say(f"and as {local} on Traefik's private entrypoint (:{PRIVATE_PORT})")

    domain_mapping(node)

    def scaled_to_zero() -> bool:
        pods = kubectl.get_json("pods", "-n", NAMESPACE, "-l", "serving.knative.dev/service=hello")["items"]
        return not pods

    timed("scale to zero", lambda: wait(scaled_to_zero, "the KService's pods to go", SCALE_TO_ZERO_S))
    answer = timed(
        "scale from zero (through the activator)",
        lambda: report(f"http://{node.addresses.node_ip}:80/cold", host),
    )
    say(f"answered again after scale-to-zero: {answer['request']['uri']}")


def domain_mapping(node: Node) -> None:
    """A DomainMapping to the KService: Knative makes it Ready, but Traefik cannot route it (its
    KIngress rewrites the host to the KService's and points at the Route's ExternalName Service; the
    provider supports neither). Reported, not failed: what the node cannot show."""
    kubectl = node.kubectl
    claim = {
        "apiVersion": "networking.internal.knative.dev/v1alpha1",
        "kind": "ClusterDomainClaim",
        "metadata": {"name": MAPPED_DOMAIN},
        "spec": {"namespace": NAMESPACE},
    }
    mapping = {
        "apiVersion": "serving.knative.dev/v1beta1",
        "kind": "DomainMapping",
        "metadata": {"name": MAPPED_DOMAIN, "namespace": NAMESPACE},
        "spec": {"ref": {"apiVersion": "serving.knative.dev/v1", "kind": "Service", "name": "hello"}},
    }
    kubectl.apply([claim, mapping])
    try:
        wait_condition(
            kubectl, "Ready", DOMAIN_MAPPING_READY_S, f"domainmapping/{MAPPED_DOMAIN}", "-n", NAMESPACE
        )
        ready = "Ready"
    except NodeError:
        ready = "not Ready"
    status, body = get(f"http://{node.addresses.node_ip}:80/mapped", MAPPED_DOMAIN)
    say(f"DomainMapping {MAPPED_DOMAIN}: {ready}; through Traefik it answers {status} {body[:40]!r}")


def wait(check: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(REQUEST_PAUSE_S)
    raise NodeError(f"{what}: not after {timeout:.0f} s")


def terminated(_signum: int, _frame: object) -> None:
    """SIGTERM ends the run the way Ctrl-C does: through ``finally``, which stops everything."""
    raise KeyboardInterrupt


def hold_up(plane: NodePlane, seconds: float) -> None:
    """Keep everything up for ``seconds`` (Ctrl-C ends it sooner), saying how to reach it: the run's
    network namespace is this process's, entered with ``nsenter``."""
    say(
        f"up for {seconds:.0f} s; Ctrl-C stops it. In another shell:\n"
        f"  sudo nsenter --net=/proc/{os.getpid()}/ns/net bash    # the run's network, and only it\n"
        f"  export KUBECONFIG={plane.kubeconfig}\n"
        f"  curl -H 'Host: <ksvc>.<ns>.{TRY_DOMAIN}' http://{plane.addresses.node_ip}/   # public\n"
        f"  curl -H 'Host: <ksvc>.<ns>.svc.cluster.local' http://{plane.addresses.node_ip}:{PRIVATE_PORT}/"
    )
    with contextlib.suppress(KeyboardInterrupt):
        time.sleep(seconds)


def run_inside(
    workdir: Path, stages: int, app_images: list[str], hold: float = 0.0, serve: float = 0.0
) -> int:
    """In the namespace: a control plane, a node, the stages, then everything stopped."""
    signal.signal(signal.SIGTERM, terminated)
    addresses = Addresses()
    tools = build.locate(["etcd", *NODE_TOOLS, *DATA_PLANE_TOOLS])
    plane = NodePlane(workdir / "plane", tools, app_images=app_images, addresses=addresses, data_plane=False)
    node: Node | None = None
    failed = False
    try:
        timed("control plane and node (containerd, images, kubelet Ready, scheduler, kube-proxy)", plane.up)
        node = plane.node
        assert node is not None
        stage_pods(
            node, node.app_images[0] if node.app_images else node.images.app.name if node.images else ""
        )
        if stages > 1:
            stage_services(node)
        if stages > 2:
            stage_knative(node, node.app_images[0] if node.app_images else "")
        moved = node.check_host()
        if moved:
            raise NodeError(f"kernel settings moved while the node ran: {moved}")
        say("no kernel setting moved while the node ran")
        if serve > 0:
            hold_up(plane, serve)
    except BaseException as exc:
        failed = True
        say(f"FAILED: {exc}")
        if hold > 0:
            hold_up(plane, hold)
    finally:
        with signals_deferred():
            try:
                timed("node and control plane down (nothing left)", plane.down)
            except Exception as exc:  # reported: the control plane is stopped all the same
                failed = True
                say(f"down: {exc}")
    return 1 if failed else 0


def try_main(workdir: Path, stage: str, app_images: list[str], hold: float = 0.0, serve: float = 0.0) -> int:
    """Re-run in a new network namespace (unless already in one this command made)."""
    stages = STAGES.index(stage) + 1
    if os.environ.get(NETNS_MARKER) != "1":
        workdir.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "tests.e2e.node", "try", f"--dir={workdir}", f"--stage={stage}"]
        argv += [f"--app-image={i}" for i in app_images] + [f"--hold={hold}", f"--serve={serve}"]
        return subprocess.call(["unshare", "--net", "--", *argv], env={**os.environ, NETNS_MARKER: "1"})
    return run_inside(workdir.resolve(), stages, app_images, hold, serve)
