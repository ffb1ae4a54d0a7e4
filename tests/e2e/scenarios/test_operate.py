"""`flyte-apps status`, `watch` and `logs` against the real API server say what is true of the main
stack: six apps, the stopped one STOPPED, every app watched, logs of pods no node runs and of a
stopped app explained."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from typing import Final

from tests.e2e import cluster
from tests.e2e.outcome import ScenarioFailed, check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.stacks import Deployed
from tests.e2e.scenarios.suite import FLYTE_APPS, LABEL_SERVICE, MAIN_STACK, Suite

APPS: Final = 6
WATCHED_S: Final = 8.0
"""How long `watch` runs before its Ctrl-C: its first list of every app is printed by then."""
WATCH_STOP_S: Final = 30.0
PODS_WAIT_S: Final = 60.0
MODEL_API: Final = "model-api-ml-serving-production"
"""minReplicas 1: its pods exist, and no node takes them."""
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
    watch = subprocess.Popen(
        [str(FLYTE_APPS), "watch", *common],
        cwd=suite.project,
        env=suite.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group: stopped with it, whatever ends this scenario
    )
    try:
        time.sleep(WATCHED_S)
        watch.send_signal(signal.SIGINT)
        try:
            out, err = watch.communicate(timeout=WATCH_STOP_S)
        except subprocess.TimeoutExpired:
            raise ScenarioFailed("watch did not stop on Ctrl-C") from None
    finally:
        if watch.poll() is None:
            cluster.stop_group(watch)
    check(watch.returncode in INTERRUPTED, f"watch exited {watch.returncode}: {err[-1000:]}")
    check(
        all(name in out for name in ("dashboard", "notebook", "llm")), f"watch did not show every app:\n{out}"
    )
    check("Traceback" not in err, f"watch printed a traceback:\n{err}")
    suite.wait(
        "model-api's pods",
        lambda: any(p.startswith(MODEL_API) for p in suite.pods_labelled(LABEL_SERVICE, MODEL_API)),
        PODS_WAIT_S,
    )
    logs = suite.flyte_apps(
        "logs", "model-api", "-p", "ml-serving", "-d", "production", *common, check_rc=False
    )
    said = logs.stdout + logs.stderr
    check(logs.returncode == 0, f"logs exited {logs.returncode}: {said}")
    check("not scheduled to a node" in said, f"logs of an app whose pods never ran say: {said!r}")
    stopped = suite.flyte_apps("logs", "notebook", "-p", "flytesnacks", "-d", "development", *common)
    check("scaled to zero" in stopped.stdout + stopped.stderr, f"logs of a stopped app: {stopped.stderr!r}")
    record("status, watch and logs tell the truth")
