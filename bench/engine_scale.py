"""Benchmark: the real engine. `pulumi preview`, `pulumi up`, `up` with nothing to change and `pulumi
refresh` of generated stacks of ``SIZES`` apps (every tenth stopped), against two floors in the same
engine: a bare pulumi-kubernetes program that registers the same objects, and a program that
registers the same graph as ours with no logic of ours; then the stops of ``STOP_APPS`` apps in one
`up` (their reapers' steps against the slowest of them, and against one stop alone).

Needs the real-engine tools (``make e2e-tools``); without them the rows say so and nothing runs. A
control plane with Knative and no node (``tests/e2e/cluster``: no pod ever runs, so hundreds of apps
fit) runs for each side's round. Each round runs, for each size, interleaved, ours (this repository's
program on ``bench.stacks.stack_config(size)`` with Knative's config patches), the same-graph floor
(``bench/floor_same_graph.py``: those objects, plus a component per app with the KService as its
child and the same outputs, a no-op dynamic resource per stopped app, the same export) and the bare
floor (``bench/floor_engine.py``: the Namespace, the ConfigMap patches and the KServices our plan
renders, as plain pulumi-kubernetes resources under one provider): preview, up, up again with
``--expect-no-changes`` (the engine fails it if anything would change), refresh (each timed, wall clock
of the whole `pulumi` command, and each started once the control plane is quiet: ``settle``). Each
side's round runs on a control plane started for it and stopped after (neither timed: about 20 s and
15 s), so every round starts from an empty cluster; a `destroy` between rounds took 3 minutes at 100
apps (pulumi-kubernetes waits until Knative's objects under each KService are collected), the same with
64 deletes at once.
In preview and in the first `up` the program's runs (the language host's Python child; `up` runs it
twice, a preview pass then the update) are sampled for their lifetime and, in `up`, their peak RSS
(``VmHWM``, every ``RSS_POLL_S``); after the first `up`, the size of each side's state
(``STATE_NOTE``). A size runs only when its projection (linear in the apps from the last size run)
fits ``BUDGET_S``. Where Pulumi could not hand the stack's config to the program
(``flyte_apps.core.stackfile.program_config_problem``: 500 apps), ours lists its apps in an apps file
beside the stack file (``flyte-apps:appFiles``); the floors read their objects from a file at every
size. The same-graph floor's stack file also carries our stack's config, written as ours writes it and
not read: the engine hands a dynamic provider the stack's whole config and keeps it in the state
(Pulumi 3.274.1, ``resource/deploy/target.go``, ``GetPackageConfig``). Against the same graph, what is
left is our logic (validation, planning) and what a RevisionReaper does that a no-op does
not: wait for Knative to create (an app created stopped) or make ready (a stopped app) the stop
revision, then delete the old revisions with pods.

The stop rows: ``STOP_APPS + 1`` running apps are deployed; one is stopped alone, then the other
``STOP_APPS`` in one `up`, traced (``--otel-traces``). The goal's row is the issue's measure: the
``STOP_APPS`` reapers' steps in that `up` (each the ``Create`` call the engine makes to the
dynamic-provider host, read from the trace: this CLI has no ``--event-log``), from the first one's
start to the last one's end, against the slowest of them. A second row, without a goal, sets the same
stops (from the first of their KServices' updates to the last of their reapers' creates, as the engine
records them in the stack's state) against the one stop alone: what ten stops at once cost over one,
most of it Knative's controller making the stop revisions ready one after another (bench/RESULTS.md,
"Ten stops at once: Knative's queue, not the reapers"). ``bench/engine_pods.py`` measures the same stops
of apps whose pods run, on the e2e node.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import yaml

from bench import trace
from bench.measure import REPO_ROOT, ROUNDS, Budget, progress
from bench.profile import RATE_HZ, py_spy, summary
from bench.report import Row, compared, count, mib, no_more_than, seconds, times
from bench.stacks import app_entry, stack_config
from flyte_apps.core.appfiles import APP_FILES_KEY, APPS_KEY
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.stackfile import program_config_problem
from tests.e2e import build, cluster
from tests.e2e.run import install_kubernetes_plugin, link_project, pulumi_environment

TITLE: Final = "engine"
SIZES: Final = (100, 500)
"""The goals' sizes (issue 39): 100 and 500 apps, and the growth between them. At 500 the stack's config
is over what Pulumi can hand the program on Linux, so our side keeps its apps in an apps file there
(``flyte-apps:appFiles``), as a user of that many apps would. (200 apps, run while 500 could not, has no
goal and took half an hour.)"""
APP_FILE_SUFFIX: Final = ".apps.yaml"
STOP_APPS: Final = 10
OURS: Final = "ours"
SAME_GRAPH: Final = "same-graph"
FLOOR: Final = "floor"
SIDE_NAMES: Final = (OURS, SAME_GRAPH, FLOOR)
"""Each round runs the sides in this order."""
PLANE_DIR: Final = "cluster"
QUIET_CORES: Final = 0.15
"""A control plane is quiet when its processes use less than this share of a core over ``QUIET_WINDOW_S``:
idle with a few hundred apps, this one uses 0.03-0.1 of a core; Knative reconciling the apps of an `up`,
0.6-1.5 of the machine's 2 cores for a minute after it."""
QUIET_WINDOW_S: Final = 5.0
SETTLE_S: Final = 600.0
"""How long a step waits at most for a quiet control plane (a fatal error after it)."""
NOTE: Final = (
    f"engine: the real `pulumi preview`, `up`, no-change `up` and `refresh` (Pulumi CLI, pulumi-kubernetes, "
    f"kube-apiserver and Knative built by `make e2e-tools`, no node) of {' and '.join(map(str, SIZES))} "
    "generated apps (10 % stopped; where a stack file cannot hand them to the program, 500, ours lists "
    "them in an apps file), wall clock of the whole command, against the same graph with no "
    "logic of ours (`bench/floor_same_graph.py`) and a bare pulumi-kubernetes program registering the "
    "same objects (`bench/floor_engine.py`); growth is the time at the larger size over the smaller; "
    f"peak RSS is the program's process during `up`; {STOP_APPS} stops in one `up` against the slowest of "
    "their reapers' steps (the engine's trace) and against one stop alone (times the engine records in the "
    "stack's state); a fresh control plane for every run, not timed; each step starts once the control "
    f"plane's processes use less than {QUIET_CORES} of a core (Knative reconciles an `up`'s apps for a "
    "minute after it)."
)
BUDGET_S: Final = 9000.0
"""The engine rows' cap: 2.5 hours. On a slow day (a fresh clone, 2026-12-07) 100 apps took 1,293 s and
500 apps 5,253 s (the linear projection from 100: 6,465 s); at the former cap of 1.5 hours the 500-app
rows, the goals' size, were skipped on such days."""
COMMAND_TIMEOUT_S: Final = 900.0
FLOOR_PROGRAM: Final = Path(__file__).with_name("floor_engine.py")
SAME_GRAPH_PROGRAM: Final = Path(__file__).with_name("floor_same_graph.py")
SAME_GRAPH_GOAL: Final = 1.15
BARE_GOAL: Final = 1.5
GROWTH_GOAL: Final = 1.1
RSS_GOAL: Final = 1.2
STOP_GOAL: Final = 1.2
REAPER_HOST: Final = "pulumi-python "
"""How the engine's trace names the dynamic-provider host that runs the reapers (its plugin, then its
kind: ``bench.trace.provider_calls``)."""
CREATE_CALL: Final = trace.PROVIDER_CALL_PREFIX + "Create"
RSS_POLL_S: Final = 0.05
PROGRAM_MARK: Final = "pulumi-language-python-exec"
"""A word of the command line the Python language host runs the program with."""
FLOOR_CONFIG_KEY: Final = "bench:objects"
STEPS: Final = ("preview", "up", "up, nothing to change", "refresh")
ARGV: Final[dict[str, tuple[str, ...]]] = {
    "preview": ("preview",),
    "up": ("up", "--yes"),
    "up, nothing to change": ("up", "--yes", "--expect-no-changes"),
    "refresh": ("refresh", "--yes"),
}
SAME_GRAPH_GOALS: Final = dict.fromkeys(STEPS, SAME_GRAPH_GOAL)
BARE_GOALS: Final = {"preview": BARE_GOAL, "up, nothing to change": BARE_GOAL}
GROWTH_STEPS: Final = ("preview", "up")
PROGRAM_STEPS: Final = ("preview", "up")
"""The steps whose program runs are watched (their lifetime; in `up`, their peak RSS). `up` runs the
program twice, a preview pass then the update: the probe follows both."""
MIB: Final = 1024 * 1024
STATE_NOTE: Final = "the engine writes it whole after every step"
"""Why the state's size is a row: with a file backend the engine serializes and writes the whole state
after each step, one write at a time, and each step waits for its write, so `up` from empty grows with
the square of the apps, and two graphs of the same resources differ in time as their states differ in
size (bench/RESULTS.md, "Where `pulumi up` of 500 apps goes")."""
TYPE_REAPER_SUFFIX: Final = ":RevisionReaper"
TYPE_KSERVICE: Final = "kubernetes:serving.knative.dev/v1:Service"


@dataclass(frozen=True)
class Side:
    """One program: its project directory and how to make its stack file for a round."""

    name: str
    project: Path
    write_stack: Callable[[Path, dict[str, Any]], None]


@dataclass
class Runs:
    """One side's timings at one size: each step's seconds per round, and the program's peak RSS."""

    times: dict[str, list[float]] = field(default_factory=lambda: {step: [] for step in STEPS})
    program: dict[str, list[float]] = field(default_factory=lambda: {step: [] for step in PROGRAM_STEPS})
    """Seconds the program's process lived, per step that runs it."""
    rss_mib: list[float] = field(default_factory=list)
    state_mib: list[float] = field(default_factory=list)
    """The stack's state after the first `up` (`pulumi stack export`): the engine writes all of it after
    every step (``STATE_NOTE``)."""


@dataclass(frozen=True)
class Pulumi:
    """The `pulumi` command of the built tools, in the benchmark's environment."""

    binary: Path
    env: dict[str, str]

    @classmethod
    def in_workdir(cls, workdir: Path, tools: Any) -> Pulumi:
        """The built `pulumi` with its home, plugins and file backend under ``workdir``."""
        workdir.mkdir(parents=True, exist_ok=True)
        env = pulumi_environment(workdir, tools)
        for name in ("home", "pulumi-home", "state"):
            (workdir / name).mkdir(exist_ok=True)
        return cls(tools["pulumi"].binary("pulumi"), env)

    def __call__(self, project: Path, *args: str, stack: str) -> str:
        """Run one command on ``stack``; its standard output (a failure raises, with its output's end)."""
        argv = [str(self.binary), *args, "--stack", stack, "--non-interactive"]
        done = subprocess.run(
            argv, cwd=project, env=self.env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
        )
        if done.returncode != 0:
            tail = (done.stdout + done.stderr)[-3000:]
            msg = f"{' '.join(argv[1:4])} in {project.name} exited {done.returncode}:\n{tail}"
            raise RuntimeError(msg)
        return done.stdout

    def export(self, project: Path, stack: str) -> dict[str, Any]:
        state: dict[str, Any] = json.loads(self(project, "stack", "export", stack=stack))
        return state


def run(workdir: Path) -> list[Row]:
    try:
        tools = build.locate()
    except build.ToolError as exc:
        return [not_run(", ".join(map(str, SIZES)), str(exc))]
    pulumi = Pulumi.in_workdir(workdir, tools)
    budget = Budget(BUDGET_S)
    rows: list[Row] = []
    projects = make_projects(workdir, tools, pulumi.env)
    runs: dict[int, dict[str, Runs]] = {}
    took: dict[int, float] = {}
    for size in SIZES:
        projected = project_time(took, size)
        if projected is not None and not budget.fits(projected):
            rows.append(not_run(count(size), f"{projected:.0f} s projected, {budget.left():.0f} s left"))
            continue
        began = time.perf_counter()
        runs[size] = {name: Runs() for name in SIDE_NAMES}
        for round_ in range(ROUNDS):
            for name in SIDE_NAMES:
                progress(f"{TITLE}: {size} apps, round {round_ + 1}/{ROUNDS}, {name}")
                with fresh_plane(workdir, tools) as plane:
                    one_round(pulumi, plane, side_on(plane, projects, name), size, round_, runs[size][name])
        took[size] = time.perf_counter() - began
        progress(f"{TITLE}: {size} apps took {took[size]:.0f} s")
    for size in runs:
        rows += size_rows(size, runs[size], rss_goal=size == max(runs))
    rows += growth_rows(runs)
    rows += stop_rows(pulumi, workdir, tools, projects)
    return rows


def not_run(size: str, why: str) -> Row:
    return Row(TITLE, "pulumi preview, up, refresh", size, f"not run: {why}")


@contextmanager
def fresh_plane(workdir: Path, tools: Any) -> Iterator[cluster.ControlPlane]:
    """A control plane with an empty cluster for one run, stopped after it (a stack of hundreds of apps
    is gone in seconds, where `pulumi destroy` takes minutes)."""
    directory = workdir / PLANE_DIR
    shutil.rmtree(directory, ignore_errors=True)
    with cluster.running(directory, tools) as plane:
        yield plane


def profile(workdir: Path, size: int, side_name: str, step: str, raw: Path) -> str:
    """One ``step`` of ``side_name`` on a fresh stack of ``size`` apps, with py-spy attached to the program
    (by PID, once the language host has started it): when the program ran within the command, and
    py-spy's summary of it (``bench.hotspots engine``)."""
    tools = build.locate()
    pulumi = Pulumi.in_workdir(workdir, tools)
    projects = make_projects(workdir, tools, pulumi.env)
    with fresh_plane(workdir, tools) as plane:
        side = side_on(plane, projects, side_name)
        stack = f"profile-{side.name}"
        side.write_stack(
            side.project / f"Pulumi.{stack}.yaml", config_for(size, f"bench-profile-{side.name}")
        )
        pulumi(side.project, "stack", "init", stack=stack)
        if step != "preview":
            pulumi(side.project, "preview", stack=stack)  # the plugins installed, as in a benchmark round
        recorders: list[subprocess.Popen[bytes]] = []

        def attach(pid: int) -> None:
            argv = [py_spy(), "record", "--pid", str(pid), "--format", "raw", "--threads"]
            argv += ["--rate", str(RATE_HZ), "-o", str(raw)]
            recorders.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        began = time.monotonic()
        with ProgramProbe(side.project, on_start=attach) as probe:
            pulumi(side.project, *ARGV[step], stack=stack)
        took = time.monotonic() - began
        for recorder in recorders:
            recorder.wait(timeout=COMMAND_TIMEOUT_S)
    timeline = (
        f"pulumi {step} of {side_name}, {size} apps: {took:.2f} s; the program ran {len(probe.pids)} "
        f"time(s), first seen at +{probe.first_seen - began:.2f} s, {probe.lifetime:.2f} s in all, peak RSS "
        f"{probe.mib:.0f} MiB; py-spy followed the first run"
    )
    return f"{timeline}\n\n{summary(raw)}"


def project_time(took: Mapping[int, float], size: int) -> float | None:
    """Seconds the rounds of ``size`` would take (destroys included), linear in the apps from the
    largest size run (``took``: the seconds each size's rounds took)."""
    if not took:
        return None
    done = max(took)
    return took[done] * size / done


def one_round(
    pulumi: Pulumi, plane: cluster.ControlPlane, side: Side, size: int, round_: int, runs: Runs
) -> None:
    stack = f"{side.name}-{size}-{round_}"
    side.write_stack(
        side.project / f"Pulumi.{stack}.yaml", config_for(size, f"bench-{side.name}-{size}-{round_}")
    )
    pulumi(side.project, "stack", "init", stack=stack)
    for step in STEPS:
        waited = settle(plane)
        progress(
            f"{TITLE}: {side.name}, {size} apps, {step}: the control plane was quiet after {waited:.0f} s"
        )
        began = time.monotonic()
        if step in PROGRAM_STEPS:
            with ProgramProbe(side.project) as probe:
                pulumi(side.project, *ARGV[step], stack=stack)
            runs.program[step].append(probe.lifetime)
            if step == "up":
                runs.rss_mib.append(probe.mib)
        else:
            pulumi(side.project, *ARGV[step], stack=stack)
        runs.times[step].append(time.monotonic() - began)
        if step == "up":
            runs.state_mib.append(state_mib(pulumi.export(side.project, stack)))
    forget(pulumi, side.project, stack)


def settle(plane: cluster.ControlPlane) -> float:
    """Wait (bounded: ``SETTLE_S``) until ``plane`` is quiet (``QUIET_CORES``); the seconds waited. Every
    step starts on a quiet control plane: after an `up`, Knative reconciles its apps for a minute on the
    machine's cores, and a step started in that storm is timed against it (a no-change `up` of 100 apps
    took 23.5 s right after the `up`, 11.9 s and 10.8 s once the plane was quiet), by how far the storm
    had gone when it started, not by the program. A user's no-change `up` (a CI job after a merge) meets
    a cluster long settled."""
    began = time.monotonic()

    def quiet() -> bool:
        assert plane.state is not None, "settle() on a control plane that is not up"
        used = cluster.cpu_seconds(plane.state.processes)
        time.sleep(QUIET_WINDOW_S)
        return (cluster.cpu_seconds(plane.state.processes) - used) / QUIET_WINDOW_S < QUIET_CORES

    cluster.wait_until("a quiet control plane", quiet, SETTLE_S, alive=plane.dead)
    return time.monotonic() - began


def state_mib(state: Mapping[str, Any]) -> float:
    """MiB of a stack's exported state, as compact JSON."""
    return len(json.dumps(state, separators=(",", ":")).encode()) / MIB


def state_size(value: float) -> str:
    return f"{value:.2f} MiB"


def forget(pulumi: Pulumi, project: Path, stack: str) -> None:
    """Remove the stack, resources and all, from the backend: its control plane goes with the run."""
    pulumi(project, "stack", "rm", "--yes", "--force", stack=stack)


def size_rows(size: int, runs: Mapping[str, Runs], *, rss_goal: bool) -> list[Row]:
    """The rows of one size; the peak RSS one with its goal at the largest size that runs."""
    rows = []
    floors = ((SAME_GRAPH, "the same graph", SAME_GRAPH_GOALS), (FLOOR, "bare program", BARE_GOALS))
    for step in STEPS:
        for floor, label, goals in floors:
            goal = goals.get(step)
            rows.append(
                compared(
                    TITLE,
                    f"pulumi {step} vs {label}",
                    f"{count(size)} apps",
                    runs[OURS].times[step],
                    runs[floor].times[step],
                    seconds,
                    goal=f"<= {goal}x" if goal else "",
                    check=no_more_than(goal) if goal else None,
                )
            )
    for step in PROGRAM_STEPS:
        rows.append(
            compared(
                TITLE,
                f"the program's runs in pulumi {step} vs the same graph's",
                f"{count(size)} apps",
                runs[OURS].program[step],
                runs[SAME_GRAPH].program[step],
                seconds,
            )
        )
    rows.append(
        compared(
            TITLE,
            f"state after up vs the same graph's ({STATE_NOTE})",
            f"{count(size)} apps",
            runs[OURS].state_mib,
            runs[SAME_GRAPH].state_mib,
            state_size,
        )
    )
    goal = RSS_GOAL if rss_goal else None
    for floor, label, _ in floors:
        rows.append(
            compared(
                TITLE,
                f"program peak RSS during up vs {label}",
                f"{count(size)} apps",
                runs[OURS].rss_mib,
                runs[floor].rss_mib,
                mib,
                goal=f"<= {goal}x" if goal and floor == SAME_GRAPH else "",
                check=no_more_than(goal) if goal and floor == SAME_GRAPH else None,
            )
        )
    return rows


def growth_rows(runs: Mapping[int, Mapping[str, Runs]]) -> list[Row]:
    """Time at the largest size over time at the smallest, per round: ours against the same graph's."""
    if len(runs) < 2:
        return []
    small, large = min(runs), max(runs)
    rows = []
    for step in GROWTH_STEPS:
        growth = {
            side: [
                b / a
                for a, b in zip(runs[small][side].times[step], runs[large][side].times[step], strict=True)
            ]
            for side in (OURS, SAME_GRAPH)
        }
        rows.append(
            compared(
                TITLE,
                f"growth of pulumi {step} vs the same graph's",
                f"{count(small)} -> {count(large)} apps",
                growth[OURS],
                growth[SAME_GRAPH],
                times,
                goal=f"<= {GROWTH_GOAL}x",
                check=no_more_than(GROWTH_GOAL),
            )
        )
    return rows


def config_for(apps: int | list[dict[str, Any]], namespace: str) -> dict[str, Any]:
    """The generated stack of ``apps`` apps (or these app entries) in ``namespace``, with Knative's
    config managed."""
    config = stack_config(apps) if isinstance(apps, int) else {**stack_config(0), "flyte-apps:apps": apps}
    config["flyte-apps:platform"] = dict(
        config["flyte-apps:platform"], namespace=namespace, retainNamespace=False
    )
    config["flyte-apps:knative"] = {"manageConfig": True}
    return config


@dataclass(frozen=True)
class Projects:
    """The three sides' Pulumi projects, made once for the benchmark."""

    ours: Path
    same_graph: Path
    floor: Path


def make_projects(workdir: Path, tools: Any, env: dict[str, str]) -> Projects:
    install_kubernetes_plugin(tools, env)
    ours = workdir / OURS
    link_project(ours)
    return Projects(
        ours,
        floor_project(workdir / SAME_GRAPH, SAME_GRAPH_PROGRAM),
        floor_project(workdir / FLOOR, FLOOR_PROGRAM),
    )


def side_on(plane: cluster.ControlPlane, projects: Projects, name: str) -> Side:
    """The side ``name`` (one of ``SIDE_NAMES``), writing stacks that reach ``plane``."""
    kubeconfig = str(plane.kubeconfig)

    def write_config(path: Path, config: Mapping[str, Any]) -> None:
        path.write_text(
            yaml.safe_dump({"config": {**config, "kubernetes:kubeconfig": kubeconfig}}, sort_keys=False)
        )

    def write_ours(path: Path, config: Mapping[str, Any]) -> None:
        if program_config_problem(config) is None:
            write_config(path, config)
            return
        apps = path.with_name(path.name.removesuffix(".yaml") + APP_FILE_SUFFIX)
        apps.write_text(yaml.safe_dump(config[APPS_KEY], sort_keys=False))
        write_config(path, {**{k: v for k, v in config.items() if k != APPS_KEY}, APP_FILES_KEY: [apps.name]})

    def write_floor(path: Path, config: dict[str, Any]) -> None:
        plan = plan_stack(config)
        objects = [{"manifest": o.manifest, "patch": o.patch} for o in plan.objects()]
        listing = path.with_suffix(".objects.json")
        listing.write_text(json.dumps(objects))
        write_config(path, {FLOOR_CONFIG_KEY: str(listing)})

    def write_same(path: Path, config: dict[str, Any]) -> None:
        plan = plan_stack(config)
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
        # The stack's own config beside the graph's file, written as ours writes it (unread here): the
        # engine hands a dynamic provider the stack's whole config and keeps it in the state as that
        # provider's inputs and outputs, so ours' state carried its inline apps twice and the floor's
        # did not (1.05x at 100 and 200 apps).
        write_ours(path, {**config, FLOOR_CONFIG_KEY: str(listing)})

    sides = {
        OURS: Side(OURS, projects.ours, write_ours),
        SAME_GRAPH: Side(SAME_GRAPH, projects.same_graph, write_same),
        FLOOR: Side(FLOOR, projects.floor, write_floor),
    }
    return sides[name]


# --- stops in one `up` -----------------------------------------------------------------------------


def stop_rows(pulumi: Pulumi, workdir: Path, tools: Any, projects: Projects) -> list[Row]:
    """Per round, on a fresh control plane: ``STOP_APPS + 1`` running apps; one stopped alone, then the
    rest in one `up`."""
    entries = [{k: v for k, v in app_entry(i).items() if k != "stopped"} for i in range(STOP_APPS + 1)]
    rounds = []
    for round_ in range(ROUNDS):
        progress(f"{TITLE}: {STOP_APPS} stops, round {round_ + 1}/{ROUNDS}")
        with fresh_plane(workdir, tools) as plane:
            rounds.append(stop_round(pulumi, side_on(plane, projects, OURS), round_, workdir, entries))
    return stop_round_rows(TITLE, f"{STOP_APPS} stops", rounds)


def stop_round_rows(benchmark: str, stops: str, rounds: list[StopRound]) -> list[Row]:
    """The goal's row (the reapers' steps against the slowest) and the row against one stop alone, of
    ``stops`` (what was stopped, in words) over ``rounds``."""
    return [
        compared(
            benchmark,
            f"{stops} in one up (its reapers' steps, first start to last end) vs its slowest step",
            f"{STOP_APPS} apps",
            [r.steps.span for r in rounds],
            [r.steps.slowest for r in rounds],
            seconds,
            goal=f"<= {STOP_GOAL}x",
            check=no_more_than(STOP_GOAL),
        ),
        compared(
            benchmark,
            f"{stops} in one up vs one stop alone (each from its KServices' update)",
            f"{STOP_APPS} apps",
            [r.together for r in rounds],
            [r.alone for r in rounds],
            seconds,
        ),
    ]


@dataclass(frozen=True)
class ReaperSteps:
    """The reapers' steps of one `up`: from the first one's start to the last one's end, and the
    slowest one, in seconds."""

    span: float
    slowest: float


@dataclass(frozen=True)
class StopRound:
    alone: float
    """One stop alone, from its KService's update to its reaper's create (the stack's state)."""
    together: float
    """``STOP_APPS`` stops in one `up`, from the first KService's update to the last reaper's create."""
    steps: ReaperSteps
    """The reapers' steps of those ``STOP_APPS`` stops (the engine's trace)."""


def no_wait(namespace: str) -> None:
    """Nothing to wait for (the control plane without a node: no pod ever runs)."""


def stop_round(
    pulumi: Pulumi,
    ours: Side,
    round_: int,
    workdir: Path,
    entries: list[dict[str, Any]],
    *,
    running: Callable[[str], None] = no_wait,
    stopped: Callable[[str], None] = no_wait,
) -> StopRound:
    """``entries`` (``STOP_APPS + 1`` running apps) deployed, then ``running`` called with their
    namespace; the first stopped alone; the rest stopped in one traced `up`, then ``stopped`` called."""
    stack = f"stops-{round_}"
    namespace = f"bench-stops-{round_}"
    path = ours.project / f"Pulumi.{stack}.yaml"
    traced = workdir / f"{stack}.trace.jsonl"
    traced.unlink(missing_ok=True)

    def deploy(stopped: int, *options: str) -> dict[str, Any]:
        apps = [dict(e, stopped=True) if i < stopped else e for i, e in enumerate(entries)]
        ours.write_stack(path, config_for(apps, namespace))
        pulumi(ours.project, "up", "--yes", *options, stack=stack)
        return pulumi.export(ours.project, stack)

    pulumi(ours.project, "stack", "init", stack=stack)
    before = deploy(0)
    running(namespace)
    first = deploy(1)
    last = deploy(STOP_APPS + 1, "--otel-traces", f"file://{traced}")
    stopped(namespace)
    forget(pulumi, ours.project, stack)
    return StopRound(
        alone=stop_span(first, before, entries[:1]),
        together=stop_span(last, first, entries[1:]),
        steps=reaper_steps(trace.load(traced), STOP_APPS),
    )


def reaper_steps(spans: list[trace.Span], expected: int) -> ReaperSteps:
    """The reapers' steps in a traced `up` that creates ``expected`` reapers and nothing else on the
    dynamic-provider host: its ``Create`` calls."""
    creates = [
        call
        for provider in trace.provider_calls(spans)
        if provider.plugin.startswith(REAPER_HOST)
        for call in provider.calls
        if call.name == CREATE_CALL
    ]
    if len(creates) != expected:
        msg = f"expected {expected} reaper creates in the trace, found {len(creates)}"
        raise RuntimeError(msg)
    return ReaperSteps(
        span=max(call.end for call in creates) - min(call.start for call in creates),
        slowest=max(call.seconds for call in creates),
    )


def stop_span(state: Mapping[str, Any], before: Mapping[str, Any], entries: list[dict[str, Any]]) -> float:
    """Seconds from the first update of these apps' KServices to the last create of their reapers, as
    the engine recorded them in ``state`` (the KServices' updates are the ones ``before`` lacks)."""
    names = {entry["name"] for entry in entries}
    previous = {r["urn"]: r.get("modified") for r in before["deployment"]["resources"]}
    updated, reaped = [], []
    for resource in state["deployment"]["resources"]:
        app = next((n for n in names if f"{n}-" in resource["urn"].rsplit("::", 1)[-1]), None)
        if app is None:
            continue
        if resource["type"] == TYPE_KSERVICE:
            if resource.get("modified") == previous.get(resource["urn"]):
                msg = f"the KService of {app} was not updated by the stop: {resource['urn']}"
                raise RuntimeError(msg)
            updated.append(instant(resource["modified"]))
        elif resource["type"].endswith(TYPE_REAPER_SUFFIX):
            reaped.append(instant(resource["created"]))
    if len(updated) != len(names) or len(reaped) != len(names):
        msg = f"expected {len(names)} updated KServices and reapers, found {len(updated)} and {len(reaped)}"
        raise RuntimeError(msg)
    return max(reaped) - min(updated)


def instant(text: str) -> float:
    """Seconds since the epoch of a state timestamp (RFC 3339, nanoseconds allowed)."""
    return datetime.fromisoformat(re.sub(r"(\.\d{6})\d+", r"\1", text.replace("Z", "+00:00"))).timestamp()


class ProgramProbe:
    """The program a `pulumi` command runs in ``project`` (the language host's Python child; `up` runs
    it twice, a preview pass then the update), watched from ``/proc`` every ``RSS_POLL_S`` while the
    block runs: each run's PID (``pids``), when the first was first seen (``time.monotonic``), how long
    the runs lived together (``lifetime``), and the peak RSS of any (the kernel's ``VmHWM``, so a
    sample sees the peak so far). ``on_start`` is called with the first run's PID once it is seen (e.g.
    to attach a profiler)."""

    def __init__(self, project: Path, on_start: Callable[[int], None] | None = None) -> None:
        self.project = project.resolve()
        self.on_start = on_start
        self.pids: list[int] = []
        self.first_seen = 0.0
        self.lifetime = 0.0
        self.mib = 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    @property
    def pid(self) -> int | None:
        """The first run's PID."""
        return self.pids[0] if self.pids else None

    def __enter__(self) -> ProgramProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        if not self.pids and exc[0] is None:
            msg = f"no program process of {self.project} was seen"
            raise RuntimeError(msg)

    def _poll(self) -> None:
        current: int | None = None
        seen = 0.0
        while not self._done.wait(RSS_POLL_S):
            if current is None:
                current = self._find(exclude=self.pids)
                if current is None:
                    continue
                seen = time.monotonic()
                self.pids.append(current)
                if len(self.pids) == 1:
                    self.first_seen = seen
                    if self.on_start is not None:
                        self.on_start(current)
            peak = self._peak(current)
            now = time.monotonic()
            if peak is None:
                current = None  # this run ended: the next one may start
                continue
            self.lifetime += now - seen
            seen, self.mib = now, max(self.mib, peak)

    def _find(self, exclude: list[int]) -> int | None:
        for proc in Path("/proc").iterdir():
            try:
                if (
                    proc.name.isdigit()
                    and int(proc.name) not in exclude
                    and PROGRAM_MARK in (proc / "cmdline").read_bytes().decode(errors="replace")
                    and Path(os.readlink(proc / "cwd")) == self.project
                ):
                    return int(proc.name)
            except OSError:
                continue  # gone, or not ours to read
        return None

    @staticmethod
    def _peak(pid: int) -> float | None:
        """MiB, or None once the process is gone."""
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return None
        match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
        return int(match.group(1)) / 1024 if match else None


def floor_project(directory: Path, program: Path) -> Path:
    """A Pulumi project of one floor program, run by this repository's virtualenv."""
    directory.mkdir()
    runtime = {"name": "python", "options": {"toolchain": "pip", "virtualenv": str(REPO_ROOT / ".venv")}}
    project = {"name": f"bench-{directory.name}", "runtime": runtime}
    (directory / "Pulumi.yaml").write_text(yaml.safe_dump(project))
    shutil.copyfile(program, directory / "__main__.py")
    return directory
