"""Benchmark: the real engine. `pulumi preview` and `pulumi up` of a generated stack of ``APPS`` apps,
against two floors in the same engine: a bare pulumi-kubernetes program that registers the same
objects, and a program that registers the same graph as ours with no logic of ours.

Needs the real-engine tools (``make e2e-tools``); without them the row says so and nothing runs. A
control plane with Knative (``tests/e2e/cluster``) runs for the benchmark's length. Each round runs,
interleaved, ours (this repository's program on ``bench.stacks.stack_config(APPS)`` with Knative's
config patches) and the floor (``bench/floor_engine.py``: the Namespace, the ConfigMap patches and the
KServices our plan renders, as plain pulumi-kubernetes resources under one provider, in a namespace of
its own) and the same-graph floor (``bench/floor_same_graph.py``: those objects, plus a component per
app with the KService as its child and the same outputs, a no-op dynamic resource per stopped app, the
same export): preview, then up (each timed, wall clock, the whole `pulumi` command), then destroy (not
timed), so every round starts from an empty cluster. Against the same graph, what is left is our logic
(validation, planning) and what a RevisionReaper does that a no-op does not: wait for Knative to make
the stop revision ready, then delete the old revisions.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from bench.measure import REPO_ROOT, ROUNDS, progress
from bench.report import Row, compared, count, no_more_than, seconds
from bench.stacks import stack_config
from flyte_apps.core.plan import plan_stack
from tests.e2e import build, cluster
from tests.e2e.run import install_kubernetes_plugin, link_project, pulumi_environment

TITLE: Final = "engine"
APPS: Final = 100
NOTE: Final = (
    f"engine: the real `pulumi preview` and `pulumi up` (Pulumi CLI, pulumi-kubernetes, kube-apiserver and "
    f"Knative built by `make e2e-tools`) of {APPS} generated apps, wall clock of the whole command, "
    "against a bare pulumi-kubernetes program registering the same Namespace, ConfigMap patches and "
    "KServices (`bench/floor_engine.py`), and against the same graph with no logic of ours "
    "(`bench/floor_same_graph.py`); destroy between runs, not timed."
)
BUDGET_S: Final = 1200.0
COMMAND_TIMEOUT_S: Final = 900.0
FLOOR_PROGRAM: Final = Path(__file__).with_name("floor_engine.py")
SAME_GRAPH_PROGRAM: Final = Path(__file__).with_name("floor_same_graph.py")
SAME_GRAPH_GOAL: Final = 1.15
BARE_GOAL: Final = 1.5
COMMANDS: Final = ("preview", "up")
FLOOR_CONFIG_KEY: Final = "bench:objects"


@dataclass(frozen=True)
class Side:
    """One program: its project directory and how to make its stack file for a round."""

    name: str
    project: Path
    write_stack: Callable[[Path, int], None]


def run(workdir: Path) -> list[Row]:
    try:
        tools = build.locate()
    except build.ToolError as exc:
        return [Row(TITLE, "pulumi preview, pulumi up", f"{count(APPS)} apps", f"not run: {exc}")]
    workdir.mkdir(parents=True, exist_ok=True)
    env = pulumi_environment(workdir, tools)
    for name in ("home", "pulumi-home", "state"):
        (workdir / name).mkdir(exist_ok=True)
    with cluster.running(workdir / "cluster", tools) as plane:
        sides = prepare(workdir, plane, tools, env)
        timings: dict[str, dict[str, list[float]]] = {s.name: {c: [] for c in COMMANDS} for s in sides}
        for round_ in range(ROUNDS):
            for side in sides:
                progress(f"{TITLE}: round {round_ + 1}/{ROUNDS}, {side.name}")
                stack = f"{side.name}-{round_}"
                side.write_stack(side.project / f"Pulumi.{stack}.yaml", round_)
                pulumi(tools, env, side.project, "stack", "init", stack=stack)
                for command in COMMANDS:
                    began = time.monotonic()
                    pulumi(
                        tools,
                        env,
                        side.project,
                        command,
                        *(["--yes"] if command == "up" else []),
                        stack=stack,
                    )
                    timings[side.name][command].append(time.monotonic() - began)
                pulumi(tools, env, side.project, "destroy", "--yes", stack=stack)
    size = f"{count(APPS)} apps"
    # (floor, its label, the goal per command: against the same graph both, against the bare one preview)
    floors = (
        ("same-graph", "the same graph", {"preview": SAME_GRAPH_GOAL, "up": SAME_GRAPH_GOAL}),
        ("floor", "bare program", {"preview": BARE_GOAL}),
    )
    rows = []
    for command in COMMANDS:
        for floor, label, goals in floors:
            goal = goals.get(command)
            rows.append(
                compared(
                    TITLE,
                    f"pulumi {command} vs {label}",
                    size,
                    timings["ours"][command],
                    timings[floor][command],
                    seconds,
                    goal=f"<= {goal}x" if goal else "",
                    check=no_more_than(goal) if goal else None,
                )
            )
    return rows


def pulumi(tools: Any, env: dict[str, str], project: Path, *args: str, stack: str) -> None:
    argv = [str(tools["pulumi"].binary("pulumi")), *args, "--stack", stack, "--non-interactive"]
    done = subprocess.run(
        argv, cwd=project, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
    )
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        msg = f"{' '.join(argv[:2])} in {project.name} exited {done.returncode}:\n{tail}"
        raise RuntimeError(msg)


def config_for(round_: int, namespace_prefix: str) -> dict[str, Any]:
    config = stack_config(APPS)
    platform = dict(
        config["flyte-apps:platform"], namespace=f"{namespace_prefix}-{round_}", retainNamespace=False
    )
    config["flyte-apps:platform"] = platform
    config["flyte-apps:knative"] = {"manageConfig": True}
    return config


def prepare(
    workdir: Path, plane: cluster.ControlPlane, tools: Any, env: dict[str, str]
) -> tuple[Side, Side, Side]:
    install_kubernetes_plugin(tools, env)
    ours_dir = workdir / "ours"
    link_project(ours_dir)
    floor_dir = floor_project(workdir / "floor", FLOOR_PROGRAM)
    same_dir = floor_project(workdir / "same-graph", SAME_GRAPH_PROGRAM)
    kubeconfig = str(plane.kubeconfig)

    def write_ours(path: Path, round_: int) -> None:
        config = {**config_for(round_, "bench-ours"), "kubernetes:kubeconfig": kubeconfig}
        path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))

    def write_floor(path: Path, round_: int) -> None:
        plan = plan_stack(config_for(round_, "bench-floor"))
        objects = [{"manifest": o.manifest, "patch": o.patch} for o in plan.objects()]
        listing = path.with_suffix(".objects.json")
        listing.write_text(json.dumps(objects))
        config = {FLOOR_CONFIG_KEY: str(listing), "kubernetes:kubeconfig": kubeconfig}
        path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))

    def write_same(path: Path, round_: int) -> None:
        plan = plan_stack(config_for(round_, "bench-same"))
        graph = {
            "objects": [{"manifest": o.manifest, "patch": o.patch} for o in plan.objects()],
            "apps": [
                {
                    "name": app.kservice_name,
                    "key": app.key,
                    "stopped": app.config.input.stopped,
                    "outputs": app.exports(),
                }
                for app in plan.apps
            ],
        }
        listing = path.with_suffix(".graph.json")
        listing.write_text(json.dumps(graph))
        config = {FLOOR_CONFIG_KEY: str(listing), "kubernetes:kubeconfig": kubeconfig}
        path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))

    return (
        Side("ours", ours_dir, write_ours),
        Side("same-graph", same_dir, write_same),
        Side("floor", floor_dir, write_floor),
    )


def floor_project(directory: Path, program: Path) -> Path:
    """A Pulumi project of one floor program, run by this repository's virtualenv."""
    directory.mkdir()
    runtime = {"name": "python", "options": {"toolchain": "pip", "virtualenv": str(REPO_ROOT / ".venv")}}
    project = {"name": f"bench-{directory.name}", "runtime": runtime}
    (directory / "Pulumi.yaml").write_text(yaml.safe_dump(project))
    shutil.copyfile(program, directory / "__main__.py")
    return directory
