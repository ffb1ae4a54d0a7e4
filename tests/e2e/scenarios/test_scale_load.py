"""Scale and load (issue 40, scenario 8; `make e2e-faults`): a 200-app stack goes up in one `pulumi up`
and down in one `pulumi destroy`; while 20 bounded clients (5 requests a second each, at a lower CPU
priority) hit its warm apps through the ingress (at least 30 s, until the measures under it are done),
`flyte-apps status` and `watch` answer within twice their idle time, and `logs -f` of 10 replicas loses
no line.

The stack is made here, not in ``stacks/``: every tenth app stopped, a tenth cluster-local, the rest
cold (Knative's ``initial-scale`` 0 and ``minReplicas: 0``: no pod until a request) except 20 warm
apps with one replica each (``minReplicas: 1``). As a platform team with this many apps keeps them, the
stack file holds the first ``OWN_APPS`` and two apps files beside it (``flyte-apps:appFiles``) the rest:
the program, `status`, `watch` and `logs` read them from the project directory. Knative's
``allow-zero-initial-scale`` is the main stack's (``manageConfig``); queue-proxy's CPU request is
lowered through Knative's ``config-deployment`` for this scenario only. The kubelet runs with its
default ``maxPods`` (110)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pytest
from ruamel.yaml import YAML

from flyte_apps.core.readiness import pod_is_ready
from tests.e2e.outcome import ScenarioFailed, check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.running import condition, one_try, write_lines
from tests.e2e.scenarios.stacks import Deployed
from tests.e2e.scenarios.suite import KSERVICES, LABEL_SERVICE, Interrupted, Suite

STACK: Final = "scale"
SHOWN: Final = 5
NAMESPACE: Final = "flyte-scale"
PROJECT: Final = "scale"
DOMAIN: Final = "development"
APPS: Final = 200
WARM: Final = 20
OWN_APPS: Final = 40
APP_FILES: Final = ("apps/scale-a.yaml", "apps/scale-b.yaml")
FOLLOWED: Final = 10
CLIENTS: Final = 20
LOAD_S: Final = 30.0
"""The load runs at least this long, and on until the timings and the log batches under it are done."""
LOAD_MAX_S: Final = 300.0
"""The load's bound: its clients stop by then whatever the scenario does (a slow machine's five
`status` and `watch` timings under load took longer than ``LOAD_S``)."""
IMAGE: Final = "ghcr.io/example/app:1.0"
APP_PORT: Final = 8080
"""The test app's port without a ``ports`` entry (Knative's default ``PORT``)."""
QUEUE_CPU: Final = "5m"
QUEUE_CPU_KEY: Final = "queue-sidecar-cpu-request"
KNATIVE_NAMESPACE: Final = "knative-serving"
READY_S: Final = 900.0
"""Every KService Ready after the one `up` (Knative reconciles 200 services on 2 cores)."""
GONE_S: Final = 600.0
LISTED_S: Final = 120.0
"""How long `watch` may take to print every app (idle or under load)."""
SLOWER: Final = 2.0
"""Under load, `status` and `watch` answer within this multiple of their idle time."""
BATCHES: Final = 5
LINES: Final = 200
"""Each followed replica writes ``BATCHES`` x ``LINES`` lines during the load."""
FOLLOW_S: Final = 60.0
LINE_RE: Final = re.compile(r"load(\d+)x(\d+) (\d+)")
"""A line written by a followed replica: ``load<replica>x<batch> <n>``."""
WATCH_POLL_S: Final = 0.05
REQUEST_TIMEOUT_S: Final = 10.0
CLIENT_INTERVAL_S: Final = 0.2
"""A client sends at most one request per interval (5 a second; 100 a second from the 20): a bounded
client, like a user's. Sent back to back instead, the load generator (Python, in this process) and the
ingress take both cores and a CLI command, CPU-bound at its start, takes over three times as long."""
CLIENT_NICE: Final = 10
"""Each client thread's niceness: the clients stand for users elsewhere, not on the machine that runs
`status` and `watch`; here they share its 2 cores, and at the default priority their Python took CPU
from the commands timed under the load (a slow day's CI: `watch` 2.5x its idle time, `status` 2.0x)."""
TIMINGS: Final = 5
"""`status` and `watch` are each timed this many times, idle and under load; the medians compare."""


def app_name(index: int) -> str:
    return f"app-{index:03d}"


def kservice(name: str) -> str:
    return f"{name}-{PROJECT}-{DOMAIN}"


def is_stopped(index: int) -> bool:
    return index % 10 == 9


def is_private(index: int) -> bool:
    return index % 10 == 8


def is_warm(index: int) -> bool:
    return index % 10 == 0


def stack_files(kubeconfig: str) -> dict[str, Any]:
    """Each file of the stack by its name in the project directory: the stack file, then the apps
    files, each with its content."""
    apps = every_app()
    rest = apps[OWN_APPS:]
    half = len(rest) // 2
    return {
        f"Pulumi.{STACK}.yaml": stack_document(kubeconfig, apps[:OWN_APPS]),
        APP_FILES[0]: rest[:half],
        APP_FILES[1]: rest[half:],
    }


def every_app() -> list[dict[str, Any]]:
    apps = []
    for index in range(APPS):
        app: dict[str, Any] = {
            "name": app_name(index),
            "container": {
                "image": IMAGE,
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
            },
            "autoscaling": {"minReplicas": 1 if is_warm(index) else 0, "maxReplicas": 1},
        }
        if not is_warm(index):
            app["knative"] = {"initialScale": 0}
        if is_stopped(index):
            app["stopped"] = True
        if is_private(index):
            app["visibility"] = "cluster-local"
        apps.append(app)
    return apps


def stack_document(kubeconfig: str, own: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "config": {
            "kubernetes:kubeconfig": kubeconfig,
            "flyte-apps:platform": {
                "namespace": NAMESPACE,
                "baseDomain": "apps.example.com",
                "retainNamespace": False,
            },
            "flyte-apps:project": PROJECT,
            "flyte-apps:domain": DOMAIN,
            "flyte-apps:apps": own,
            "flyte-apps:appFiles": list(APP_FILES),
        }
    }


@contextlib.contextmanager
def lowered_queue_cpu(suite: Suite) -> Iterator[None]:
    """queue-proxy's CPU request at ``QUEUE_CPU`` while the block runs, Knative's default after."""

    def patch(value: str | None) -> None:
        data = json.dumps({"data": {QUEUE_CPU_KEY: value}})
        suite.kubectl(
            "patch", "configmap", "config-deployment", "-n", KNATIVE_NAMESPACE, "--type=merge", "-p", data
        )

    patch(QUEUE_CPU)
    try:
        yield
    finally:
        patch(None)


def kservices(suite: Suite) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = suite.get(KSERVICES, namespace=NAMESPACE)["items"]
    return items


def all_ready(suite: Suite) -> bool:
    found = kservices(suite)
    return len(found) == APPS and all(
        condition(k, "Ready").get("status") == "True"
        and k["status"].get("observedGeneration") == k["metadata"]["generation"]
        for k in found
    )


def cold_pods(suite: Suite) -> list[str]:
    """The pods of apps that start cold (initial scale 0): none may exist."""
    warm = {kservice(app_name(i)) for i in range(APPS) if is_warm(i)}
    return [
        p["metadata"]["name"]
        for p in suite.get("pods", namespace=NAMESPACE)["items"]
        if p["metadata"].get("labels", {}).get(LABEL_SERVICE) not in warm
    ]


def ready_and_cold(suite: Suite) -> bool:
    """Every KService Ready; fails at once when a cold app has a pod (its initial scale of 0 not kept),
    instead of waiting out ``READY_S`` for apps whose pods the node cannot hold."""
    cold = cold_pods(suite)
    check(not cold, f"{len(cold)} pods of cold apps, e.g. {cold[:SHOWN]}")
    return all_ready(suite)


def warm_pods(suite: Suite) -> dict[str, dict[str, Any]]:
    """Each warm app's KService -> a Ready pod of it (one listing for all)."""
    wanted = {kservice(app_name(i)) for i in range(APPS) if is_warm(i)}
    pods: dict[str, dict[str, Any]] = {}
    for pod in suite.get("pods", namespace=NAMESPACE)["items"]:
        owner = pod["metadata"].get("labels", {}).get(LABEL_SERVICE, "")
        if owner in wanted and pod_is_ready(pod) and not pod["metadata"].get("deletionTimestamp"):
            pods[owner] = pod
    return pods


def timed(action: Callable[[], object]) -> float:
    began = time.monotonic()
    action()
    return time.monotonic() - began


@dataclass
class Load:
    """``CLIENTS`` threads, each sending one request at a time (bounded) to the warm apps in turn
    through the ingress from ``run`` until ``finish`` (at least ``LOAD_S``, at most ``LOAD_MAX_S``)."""

    suite: Suite
    hosts: Sequence[str]
    ok: int = 0
    failed: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopped: threading.Event = field(default_factory=threading.Event)
    began: float = 0.0
    until: float = 0.0

    def client(self, offset: int) -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), CLIENT_NICE)  # this thread only
        turn = offset
        while not self.stopped.is_set() and (now := time.monotonic()) < self.until:
            host = self.hosts[turn % len(self.hosts)]
            turn += 1
            next_at = now + CLIENT_INTERVAL_S
            said = one_try(self.suite, host, REQUEST_TIMEOUT_S)
            with self.lock:
                if said:
                    self.failed.append(said)
                else:
                    self.ok += 1
            self.stopped.wait(max(0.0, min(next_at, self.until) - time.monotonic()))

    def running(self) -> bool:
        return not self.stopped.is_set() and time.monotonic() < self.until

    def run(self) -> list[threading.Thread]:
        self.began = time.monotonic()
        self.until = self.began + LOAD_MAX_S
        threads = [threading.Thread(target=self.client, args=(i,), daemon=True) for i in range(CLIENTS)]
        for thread in threads:
            thread.start()
        return threads

    def finish(self) -> float:
        """Stop the clients once the load has run ``LOAD_S``; the seconds it ran."""
        self.stopped.wait(max(0.0, self.began + LOAD_S - time.monotonic()))
        self.stopped.set()
        return min(time.monotonic(), self.until) - self.began


def expected_lines(index: int) -> set[str]:
    return {f"load{index}x{batch} {line}" for batch in range(BATCHES) for line in range(1, LINES + 1)}


def seen_lines(output: str, index: int) -> set[str]:
    return {m.group(0) for m in LINE_RE.finditer(output) if int(m.group(1)) == index}


@pytest.fixture
def scale_stack(suite: Suite, knative_settings: Deployed) -> Iterator[Suite]:
    """The stack file written and initialized; after the scenario, destroyed if it still exists."""
    yaml = YAML()
    for name, content in stack_files(str(suite.plane.kubeconfig)).items():
        path = suite.project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as out:
            yaml.dump(content, out)
    suite.pulumi("stack", "init", stack=STACK)
    try:
        yield suite
    finally:
        if suite.pulumi("destroy", "--yes", stack=STACK, check_rc=False).returncode == 0:
            suite.pulumi("stack", "rm", "--yes", stack=STACK, check_rc=False)


def test_scale_and_load(scale_stack: Suite, record: Record) -> None:
    suite = scale_stack
    common = ["--project-dir", str(suite.project), "--stack", STACK]
    with lowered_queue_cpu(suite):
        up_s = timed(lambda: suite.pulumi("up", "--yes", stack=STACK))
        began = time.monotonic()
        suite.wait(
            f"all {APPS} KServices Ready, no cold app with a pod", lambda: ready_and_cold(suite), READY_S
        )
        ready_s = time.monotonic() - began
        suite.wait(f"a Ready pod of each of the {WARM} warm apps", lambda: len(warm_pods(suite)) == WARM)
        pods = warm_pods(suite)
        suite.pulumi("up", "--yes", "--expect-no-changes", stack=STACK)
        cold = cold_pods(suite)
        check(not cold, f"{len(cold)} pods of cold apps, e.g. {cold[:SHOWN]}")

        def status() -> None:
            listed = suite.flyte_apps("status", *common, "-o", "json").stdout
            check(listed.count('"app"') == APPS, "status did not list every app")

        def watch() -> float:
            """Seconds from `watch`'s start until it has printed every app (read every 50 ms)."""
            began = time.monotonic()
            with suite.flyte_apps_running(
                "watch", *common, output=suite.work / f"scale-watch-{time.monotonic_ns()}.out"
            ) as watching:
                while watching.stdout.count(" CREATED ") < APPS:
                    if time.monotonic() - began > LISTED_S:
                        raise ScenarioFailed(f"`watch` did not print all {APPS} apps in {LISTED_S:.0f} s")
                    time.sleep(WATCH_POLL_S)
                return time.monotonic() - began

        idle_status = statistics.median(timed(status) for _ in range(TIMINGS))
        idle_watch = statistics.median(watch() for _ in range(TIMINGS))
        followed = sorted(pods)[:FOLLOWED]
        index = {name: i for i, name in enumerate(followed)}
        with contextlib.ExitStack() as stack:
            logs: dict[str, Interrupted] = {}
            for name in followed:
                app = name.removesuffix(f"-{PROJECT}-{DOMAIN}")
                logs[name] = stack.enter_context(
                    suite.flyte_apps_running(
                        "logs", app, "-f", "--tail", "0", *common, output=suite.work / f"scale-logs-{app}.out"
                    )
                )

            def attached() -> bool:  # written again until seen: `-f` may not have attached at the first
                for name in followed:
                    write_lines(pods[name], APP_PORT, f"attached{index[name]}", 1)
                return all(f"attached{index[name]} 1" in logs[name].stdout for name in followed)

            suite.wait(f"`logs -f` of {FOLLOWED} replicas attached", attached, FOLLOW_S)
            urls = {k["metadata"]["name"]: str(k["status"]["url"]) for k in kservices(suite)}
            hosts = [urls[name].split("://", 1)[1] for name in sorted(pods)]
            load = Load(suite, hosts)
            stack.callback(load.stopped.set)  # a failed check stops the clients too
            threads = load.run()
            loaded = [(timed(status), watch()) for _ in range(TIMINGS)]
            check(load.running(), f"the load ended before `status` and `watch` were timed {TIMINGS} times")
            loaded_status = statistics.median(s for s, _ in loaded)
            loaded_watch = statistics.median(w for _, w in loaded)
            node_pods = len(json.loads(suite.kubectl("get", "pods", "-A", "-o", "json").stdout)["items"])
            for batch in range(BATCHES):
                for name in followed:
                    write_lines(pods[name], APP_PORT, f"load{index[name]}x{batch}", LINES)
            check(load.running(), f"the load ended ({LOAD_MAX_S:.0f} s) before the log batches were written")
            load_s = load.finish()
            for thread in threads:
                thread.join(REQUEST_TIMEOUT_S * 2)
            check(not any(t.is_alive() for t in threads), "a load client did not end")

            def all_followed() -> bool:
                return all(seen_lines(logs[n].stdout, index[n]) >= expected_lines(index[n]) for n in followed)

            with contextlib.suppress(ScenarioFailed):
                suite.wait("every written line in `logs -f`", all_followed, FOLLOW_S)
        lost = {n: len(expected_lines(index[n]) - seen_lines(logs[n].stdout, index[n])) for n in followed}
        check(not any(lost.values()), f"`logs -f` lost lines: {lost}")
        check(
            not load.failed,
            f"{len(load.failed)} of {load.ok + len(load.failed)} requests failed: {load.failed[:5]}",
        )
        check(
            loaded_status <= SLOWER * idle_status and loaded_watch <= SLOWER * idle_watch,
            f"under load status took {loaded_status:.1f} s (idle {idle_status:.1f} s), watch "
            f"{loaded_watch:.1f} s (idle {idle_watch:.1f} s)",
        )
    destroy_s = timed(lambda: suite.pulumi("destroy", "--yes", stack=STACK))
    suite.wait(
        f"namespace {NAMESPACE} gone",
        lambda: not suite.exists("namespaces", NAMESPACE, namespace=None),
        GONE_S,
    )
    record(
        f"{APPS} apps: up {up_s:.0f} s, all Ready {ready_s:.0f} s later, {WARM} warm pods; {CLIENTS} clients "
        f"{load_s:.0f} s: {load.ok} requests, 0 failed; status {loaded_status:.1f} s "
        f"(idle {idle_status:.1f}), "
        f"watch {loaded_watch:.1f} s (idle {idle_watch:.1f}); logs -f of {FOLLOWED} replicas: "
        f"{FOLLOWED * BATCHES * LINES} lines, 0 lost; {node_pods} pods on the node (maxPods 110); destroy "
        f"{destroy_s:.0f} s"
    )
