"""`flyte-apps status`, `watch` and `logs` against the real API server and a node say what is true of
the main stack: six apps, the stopped one STOPPED, model-api ACTIVE with its two replicas, every app
watched; the lines the app's replicas wrote, read through the kubelet, with `--tail` and `-f` (a line
written after it started, from each replica); logs of pods no node takes (the GPU app) and of a
stopped app explained."""

from __future__ import annotations

import json
import time
from typing import Any, Final

from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.running import running_pods, write_lines
from tests.e2e.scenarios.stacks import Deployed
from tests.e2e.scenarios.suite import MAIN_STACK, Suite

APPS: Final = 6
WATCHED_S: Final = 8.0
"""How long `watch` runs before its Ctrl-C: its first list of every app is printed by then."""
PODS_WAIT_S: Final = 60.0
MODEL_API: Final = "model-api-ml-serving-production"
"""minReplicas 2: two replicas, whose logs `logs -f` follows together."""
REPLICAS: Final = 2
APP_PORT: Final = 9000
FOLLOW_S: Final = 60.0
INTERRUPTED: Final = (0, 130)
"""How `watch` may exit on Ctrl-C."""


def test_operate(suite: Suite, deployed: Deployed, record: Record) -> None:
    common = ["--project-dir", str(suite.project), "--stack", MAIN_STACK]
    status = json.loads(suite.flyte_apps("status", *common, "-o", "json").stdout)
    apps = (
        {entry["app"]["metadata"]["id"]["name"]: entry for entry in status}
        if isinstance(status, list)
        else {}
    )
    check(len(apps) == APPS, f"status lists {sorted(apps)} (expected the stack's {APPS} apps)")
    table = suite.flyte_apps("status", *common, "--exit-code").stdout
    check("STOPPED" in table and "notebook" in table, f"the stopped app is not STOPPED:\n{table}")
    with suite.flyte_apps_running("watch", *common, output=suite.work / "operate-watch.out") as watch:
        time.sleep(WATCHED_S)
    out, err = watch.stdout, watch.stderr
    check(watch.returncode in INTERRUPTED, f"watch exited {watch.returncode}: {err[-1000:]}")
    check(
        all(name in out for name in ("dashboard", "notebook", "llm")), f"watch did not show every app:\n{out}"
    )
    check("Traceback" not in err, f"watch printed a traceback:\n{err}")
    pods = wait_replicas(suite, MODEL_API, REPLICAS)
    row = next(
        line.split() for line in table.splitlines() if line.startswith("ml-serving/production/model-api")
    )
    check(row[1:3] == ["ACTIVE", str(REPLICAS)], f"status shows model-api as {row[1:3]}:\n{table}")
    app_logs = ["logs", "model-api", "-p", "ml-serving", "-d", "production", *common]
    for pod in pods:
        write_lines(pod, APP_PORT, f"e2e-{pod['metadata']['name']}", 3)
    said = suite.flyte_apps(*app_logs).stdout
    for pod in pods:
        check(
            f"e2e-{pod['metadata']['name']} 3" in said,
            f"logs lack {pod['metadata']['name']}'s lines:\n{said}",
        )
    tail = suite.flyte_apps(*app_logs, "--tail", "1").stdout
    for pod in pods:
        name = pod["metadata"]["name"]
        check(f"e2e-{name} 3" in tail and f"e2e-{name} 2" not in tail, f"--tail 1 printed:\n{tail}")
    followed = follow(suite, app_logs, pods)
    unscheduled = suite.flyte_apps(
        "logs", "llm", "-p", "ml-serving", "-d", "production", *common, check_rc=False
    )
    said = unscheduled.stdout + unscheduled.stderr
    check(unscheduled.returncode == 0, f"logs exited {unscheduled.returncode}: {said}")
    check("not scheduled to a node" in said, f"logs of an app whose pods no node takes say: {said!r}")
    stopped = suite.flyte_apps("logs", "notebook", "-p", "flytesnacks", "-d", "development", *common)
    check("scaled to zero" in stopped.stdout + stopped.stderr, f"logs of a stopped app: {stopped.stderr!r}")
    record(f"status, watch and logs tell the truth; -f followed {followed} replicas")


def wait_replicas(suite: Suite, kservice: str, count: int) -> list[dict[str, Any]]:
    """The KService's ``count`` Running, ready pods of its latest revision (bounded)."""
    found: list[dict[str, Any]] = []

    def ready() -> bool:
        nonlocal found
        found = [
            p
            for p in running_pods(suite, kservice)
            if all(c.get("ready") for c in p["status"].get("containerStatuses", []))
        ]
        return len(found) == count

    suite.wait(f"{count} ready replicas of {kservice}", ready, PODS_WAIT_S)
    return found


def follow(suite: Suite, app_logs: list[str], pods: list[dict[str, Any]]) -> int:
    """`logs -f --tail 0`: a line each replica writes after it started shows; how many replicas."""
    wanted = [f"followed-{p['metadata']['name']} 1" for p in pods]
    with suite.flyte_apps_running(
        *app_logs, "-f", "--tail", "0", output=suite.work / "logs-follow.out"
    ) as logs:

        def all_seen() -> bool:
            for pod in pods:  # written again until seen: `-f` may not have attached at the first write
                write_lines(pod, APP_PORT, f"followed-{pod['metadata']['name']}", 1)
            return all(line in logs.stdout for line in wanted)

        suite.wait("`logs -f` to show each replica's new line", all_seen, FOLLOW_S)
    err = logs.stderr
    check("Traceback" not in err, f"logs -f printed a traceback:\n{err}")
    return len(pods)
