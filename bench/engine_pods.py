"""Benchmark: the engine's stop rows again, with apps whose pods run (issue 39, "Stops in parallel").

``bench/engine_scale.py`` stops apps on a control plane without a node, where no pod ever runs. Here
each round runs on a control plane with the e2e node (``tests/e2e/node``: containerd, kubelet, Knative's
data plane and an ingress), in a network namespace this benchmark makes (nothing leaves it): the
``STOP_APPS + 1`` apps (the test app, one warm replica each: ``minReplicas: 1``) are deployed and waited
for until each has a Ready pod; one is stopped alone, then the other ``STOP_APPS`` in one traced `up`,
measured as the engine benchmark's stop rows are (``engine_scale.stop_round``); after it every pod of
the apps must be gone within ``FREED_S`` (the reapers delete the revisions with pods; queue-proxy
drains for 30 s first), or the round fails. A fresh control plane and node per round, not timed.

The measuring runs in a child (``python -m bench.engine_pods WORKDIR RESULT``) inside the network
namespace; it writes its rounds to ``RESULT`` as JSON and this module makes the rows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from bench.engine_scale import (
    OURS,
    STOP_APPS,
    Pulumi,
    ReaperSteps,
    StopRound,
    make_projects,
    side_on,
    stop_round,
    stop_round_rows,
)
from bench.measure import REPO_ROOT, ROUNDS, progress
from bench.report import Row
from flyte_apps.core.constants import LABEL_KNATIVE_SERVICE
from flyte_apps.core.readiness import pod_is_ready
from tests.e2e import build, cluster
from tests.e2e.node.plane import NodePlane
from tests.e2e.scenarios.reporting import raise_interrupt

TITLE: Final = "engine with pods"
NOTE: Final = (
    f"engine with pods: {STOP_APPS} stops in one `up` of apps with a running pod each, on a control plane "
    "with the e2e node (in a network namespace of the benchmark's own), measured as the engine's stop "
    "rows; every pod must be gone after it; a fresh control plane and node per round, not timed."
)
STOPS: Final = f"{STOP_APPS} stops of apps with running pods"
BUDGET_S: Final = 1800.0
RUN_TIMEOUT_S: Final = 1800.0
"""The child that measures, in its network namespace: every round, its node's start and stop included."""
IMAGE: Final = "ghcr.io/example/app:1.0"
"""The test app, imported by the node under this name (no registry is reached)."""
RUNNING_S: Final = 300.0
"""How long the apps' pods may take to be Ready after their `up`."""
FREED_S: Final = 180.0
"""How long the stopped apps' pods may take to be gone after the stops' `up` (queue-proxy drains 30 s)."""
DOWN_S: Final = 120.0
"""How long the child gets, told to stop, to take its node and control plane down."""
PLANE_DIR: Final = "cluster"
NETNS_SHELL: Final = 'ip link set lo up && exec "$0" -m bench.engine_pods "$@"'


def run(workdir: Path) -> list[Row]:
    try:
        build.locate()
        prefix = cluster.network_namespace_prefix()
    except (build.ToolError, cluster.ClusterError) as exc:
        return [Row(TITLE, STOPS, f"{STOP_APPS} apps", f"not run: {exc}")]
    workdir.mkdir(parents=True, exist_ok=True)
    result = workdir / "rounds.json"
    result.unlink(missing_ok=True)
    argv = [*prefix, "sh", "-c", NETNS_SHELL, sys.executable, str(workdir), str(result)]
    child = subprocess.Popen(argv, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        returncode = child.wait(timeout=RUN_TIMEOUT_S)
    except BaseException:
        child.send_signal(signal.SIGTERM)  # its node goes down, by its PIDs, before the session is killed
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=DOWN_S)
        cluster.stop_group(child)
        raise
    if returncode != 0 or not result.is_file():
        msg = f"{TITLE}: the measuring child exited {returncode} (its output is above)"
        raise RuntimeError(msg)
    rounds = [round_from(data) for data in json.loads(result.read_text())]
    return stop_round_rows(TITLE, STOPS, rounds)


def round_from(data: dict[str, Any]) -> StopRound:
    return StopRound(alone=data["alone"], together=data["together"], steps=ReaperSteps(**data["steps"]))


def app_entries() -> list[dict[str, Any]]:
    """``STOP_APPS + 1`` running apps: the test app, one warm replica each, small requests (queue-proxy
    requests Knative's 25m CPU beside each)."""
    return [
        {
            "name": f"pods-{index:02d}",
            "container": {
                "image": IMAGE,
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
            },
            "autoscaling": {"minReplicas": 1, "maxReplicas": 1},
        }
        for index in range(STOP_APPS + 1)
    ]


@contextmanager
def node_plane(workdir: Path, tools: Any) -> Iterator[NodePlane]:
    """A control plane and its node for one round, stopped after it however it ends."""
    directory = workdir / PLANE_DIR
    shutil.rmtree(directory, ignore_errors=True)
    with cluster.operating(NodePlane(directory, tools, app_images=[IMAGE])) as plane:
        yield plane


def app_pods(plane: NodePlane, namespace: str) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = plane.get_json("pods", "-n", namespace, "-l", LABEL_KNATIVE_SERVICE)["items"]
    return pods


def measure(workdir: Path, result: Path) -> None:
    """Every round on its own control plane and node; the rounds to ``result``."""
    tools = build.locate()
    pulumi = Pulumi.in_workdir(workdir, tools)
    projects = make_projects(workdir, tools, pulumi.env)
    entries = app_entries()
    rounds = []
    for round_ in range(ROUNDS):
        progress(f"{TITLE}: {STOP_APPS} stops, round {round_ + 1}/{ROUNDS}")
        with node_plane(workdir, tools) as plane:

            def running(namespace: str, plane: NodePlane = plane) -> None:
                def each_ready() -> bool:
                    ready = {
                        pod["metadata"]["labels"][LABEL_KNATIVE_SERVICE]
                        for pod in app_pods(plane, namespace)
                        if pod_is_ready(pod)
                    }
                    return len(ready) == len(entries)

                what = f"a Ready pod for each of the {len(entries)} apps"
                cluster.wait_until(what, each_ready, RUNNING_S, alive=plane.dead)

            def freed(namespace: str, plane: NodePlane = plane) -> None:
                def gone() -> bool:
                    return not app_pods(plane, namespace)

                cluster.wait_until("the stopped apps' pods gone", gone, FREED_S, alive=plane.dead)

            side = side_on(plane, projects, OURS)
            rounds.append(stop_round(pulumi, side, round_, workdir, entries, running=running, stopped=freed))
    result.write_text(json.dumps([asdict(r) for r in rounds]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.engine_pods",
        description="Measure the stops of apps with running pods (run by `python -m bench.run`, in a "
        "network namespace it makes).",
    )
    parser.add_argument("workdir", type=Path)
    parser.add_argument("result", type=Path)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, raise_interrupt)  # a stopped parent's SIGTERM stops the node, by its PIDs
    measure(args.workdir, args.result)


if __name__ == "__main__":
    main()
