"""Apps that run (issue 37): after `pulumi up` of the main stack, every app but the GPU one is Ready and
answers through the ingress from its own container, with the command, args, env and port the stack
gave it; a cluster-local app answers only on the cluster-local entrypoint; the pod template's sidecar
and volume, and shared memory, are there. Apps that can never be Ready, and the GPU app no node can
take, are reported by `flyte-apps status` in one line with Knative's or the scheduler's reason.
`watch` shows an app going from deploying to active, then to stopped."""

from __future__ import annotations

from typing import Any, Final

from tests.e2e.node.node import PUBLIC_PORT
from tests.e2e.node.traffic import get, report
from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.running import (
    condition,
    node_ip,
    public_host,
    through_ingress,
    through_ingress_at_latest,
    through_private_ingress,
    wait_failed,
    wait_ready,
)
from tests.e2e.scenarios.stacks import Deployed
from tests.e2e.scenarios.suite import KSERVICES, MAIN_STACK, NAMESPACE, STACKS, Suite

PLATFORM_ENV: Final = {
    "FLYTE_AWS_ENDPOINT": "http://rustfs-svc.flyte.svc.cluster.local:9000",
    "_U_INSECURE": "true",
}
PUBLIC_APPS: Final[dict[str, dict[str, Any]]] = {
    # KService -> what its container must have been given (stacks/e2e.yaml)
    "dashboard-flytesnacks-development": {
        "args": ["--port", "8080"],
        "env": {**PLATFORM_ENV, "LOG_LEVEL": "info", "PORT": "8080"},
    },
    "model-api-ml-serving-production": {
        "command": "python",
        "args": ["-m", "model_api"],
        "env": {**PLATFORM_ENV, "MODEL_URI": "s3://models/churn/v7", "PORT": "9000"},
    },
    "search-flytesnacks-development": {
        "args": ["--index-dir", "/index"],
        "env": {**PLATFORM_ENV, "PORT": "8080"},
    },
}
PRIVATE_APP: Final = "feature-store-ml-serving-production"
GPU_APP: Final = ("llm", "ml-serving", "production")
SIDECAR_PORT: Final = 9100
INDEX_MOUNT: Final = "/index"
NOT_FOUND: Final = 404
UNSCHEDULABLE: Final = "0/1 nodes are available"
"""The scheduler's words (Knative passes them on): no node of this cluster has the accelerator label."""
EXTRAS: Final = "extras"
EXTRAS_NAMESPACE: Final = "flyte-extras"
NEVER_READY: Final = ("missing", "unready")
SHM_APP: Final = "shm"
SHM_BYTES: Final = 64 * 1024 * 1024
STATUS_WORDS: Final = 40
"""How much of Knative's message the one-line status must show (the table cuts long messages)."""
STOPPED_S: Final = 120.0


def test_serve(suite: Suite, deployed: Deployed, record: Record) -> None:
    """Every running app of the main stack is Ready and answers from its own container."""
    for name, wanted in PUBLIC_APPS.items():
        kservice = wait_ready(suite, name)
        answer = through_ingress_at_latest(suite, kservice)  # by its latest Ready revision
        check(answer["request"]["host"] == public_host(kservice), f"{name}: answered for {answer['request']}")
        check(
            answer["args"] == wanted["args"], f"{name}: args {answer['args']} (the stack's {wanted['args']})"
        )
        if "command" in wanted:
            check(answer["command"].endswith(wanted["command"]), f"{name}: ran {answer['command']}")
        missing = {k: v for k, v in wanted["env"].items() if answer["env"].get(k) != v}
        check(not missing, f"{name}: env lacks {missing} (has {sorted(answer['env'])})")
    search = wait_ready(suite, "search-flytesnacks-development")
    answer = through_ingress(suite, search)
    check(
        any(m["mountPoint"] == INDEX_MOUNT for m in answer["mounts"]), f"no {INDEX_MOUNT}: {answer['mounts']}"
    )
    sidecar = report(
        f"http://{node_ip(suite)}:{PUBLIC_PORT}/control/fetch?port={SIDECAR_PORT}", public_host(search)
    )
    check("--target" in sidecar["args"], f"the sidecar did not answer on localhost: {sidecar}")

    private = wait_ready(suite, PRIVATE_APP)
    through_private_ingress(suite, PRIVATE_APP, NAMESPACE)
    status, _ = get(f"http://{node_ip(suite)}:{PUBLIC_PORT}/e2e", public_host(private))
    check(status == NOT_FOUND, f"the cluster-local app answered {status} on the public entrypoint")

    name, project, domain = GPU_APP
    common = ["--project-dir", str(suite.project), "--stack", MAIN_STACK]
    line = suite.flyte_apps("status", name, "-p", project, "-d", domain, *common).stdout
    check(UNSCHEDULABLE in line, f"status does not say why the GPU app cannot run:\n{line}")
    record(
        f"{len(PUBLIC_APPS)} public apps and 1 cluster-local answered; the sidecar, the volume; "
        "the GPU app unschedulable"
    )


def test_extras(suite: Suite, knative_settings: Deployed, record: Record) -> None:
    """Apps that can never be Ready say why in `status`; shared memory is mounted; `watch` shows an app
    deploying, active, then stopped."""
    suite.write_stack(EXTRAS, STACKS / "extras.yaml")
    suite.pulumi("stack", "init", stack=EXTRAS)
    common = ["--project-dir", str(suite.project), "--stack", EXTRAS]
    watched = ["watch", SHM_APP, "-p", EXTRAS, "-d", "development", *common]
    with suite.flyte_apps_running(*watched, output=suite.work / "extras-watch.out") as watch:
        suite.pulumi("up", "--yes", stack=EXTRAS)
        shm = wait_ready(suite, f"{SHM_APP}-extras-development", EXTRAS_NAMESPACE)
        answer = through_ingress(suite, shm)
        check(answer["shm"].get("sizeBytes") == SHM_BYTES, f"/dev/shm: {answer['shm']}")
        for app in NEVER_READY:
            kservice = f"{app}-extras-development"
            wait_failed(suite, kservice, EXTRAS_NAMESPACE)
            # Knative's most telling words are on the Configuration's condition (the Revision's failure);
            # the KService's own Ready only says no Revision is ready.
            failed = condition(
                suite.get(KSERVICES, kservice, namespace=EXTRAS_NAMESPACE), "ConfigurationsReady"
            )
            lines = suite.flyte_apps("status", app, "-p", EXTRAS, "-d", "development", *common).stdout
            key = f"{EXTRAS}/development/{app}"
            row = [line for line in lines.splitlines() if line.startswith(key)]  # the table's row
            check(len(row) == 1 and "FAILED" in row[0], f"{app}: status says\n{lines}")
            notes = [
                line for line in lines.splitlines() if line.strip().startswith(f"{key}: no ready replica")
            ]
            check(len(notes) <= 1, f"{app}: more than one no-ready-replica note:\n{lines}")
            said = f"{failed.get('reason')}: {failed.get('message', '')[:STATUS_WORDS]}"
            check(said in row[0], f"{app}: Knative's {said!r} is not in {row[0]!r}")
        with suite.edit_stack(EXTRAS) as document:
            suite.app_entry(document, SHM_APP)["stopped"] = True
        suite.pulumi("up", "--yes", stack=EXTRAS)
        suite.wait("watch to show the app stopped", lambda: "STOPPED" in watch.stdout, STOPPED_S)
    err = watch.stderr
    out = watch.stdout
    phases = [phase for phase in ("DEPLOYING", "ACTIVE", "STOPPED") if phase in out]
    check(phases == ["DEPLOYING", "ACTIVE", "STOPPED"], f"watch showed {phases}:\n{out}\n{err[-1000:]}")
    check(out.index("DEPLOYING") < out.index("ACTIVE") < out.rindex("STOPPED"), f"out of order:\n{out}")
    suite.pulumi("destroy", "--yes", stack=EXTRAS)
    suite.pulumi("stack", "rm", "--yes", stack=EXTRAS)
    record("never-Ready apps say why; /dev/shm 64Mi; watch: deploying, active, stopped")
