"""A hand edit of a deployed app (issue 36): `kubectl patch` of its image and of an env var the stack
sets. `flyte-apps status --exit-code` exits 4 naming each field; a plain `pulumi up` compares with
Pulumi's state and changes nothing; `pulumi up --refresh` puts the stack's values back (one new
Revision, as any template change) with no conflict and no traceback. An annotation the stack does not
render, set with a field manager of the editor's own, survives; one set with kubectl's default manager
name is taken over and dropped by pulumi-kubernetes' update (docs/operating.md says so)."""

from __future__ import annotations

import json
import time
from typing import Any, Final

from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.stacks import KNATIVE_REACTION_S, Deployed
from tests.e2e.scenarios.suite import KSERVICES, MAIN_STACK, NAMESPACE, Suite

KSERVICE: Final = "dashboard-flytesnacks-development"
APP: Final = "flytesnacks/development/dashboard"
HAND_IMAGE: Final = "example.com/someone/else:hand-edit"
ENV_NAME: Final = "LOG_LEVEL"
HAND_VALUE: Final = "debug"
EXIT_DRIFT: Final = 4
OWN_MANAGER: Final = "ml-team"
KEPT: Final = "team.example.com/owner"
TAKEN_OVER: Final = "team.example.com/on-call"
NEW_REVISION_S: Final = 60.0


def live_container(suite: Suite) -> dict[str, Any]:
    container: dict[str, Any] = suite.get(KSERVICES, KSERVICE)["spec"]["template"]["spec"]["containers"][0]
    return container


def test_hand_edit(suite: Suite, deployed: Deployed, record: Record) -> None:
    """A hand edit is drift, and `pulumi up --refresh` puts the stack's values back."""
    ours = live_container(suite)
    env_index = next(i for i, var in enumerate(ours["env"]) if var["name"] == ENV_NAME)
    patch = [
        {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": HAND_IMAGE},
        {
            "op": "replace",
            "path": f"/spec/template/spec/containers/0/env/{env_index}/value",
            "value": HAND_VALUE,
        },
    ]
    suite.kubectl("patch", "ksvc", KSERVICE, "-n", NAMESPACE, "--type=json", "-p", json.dumps(patch))
    suite.kubectl(
        "annotate", "ksvc", KSERVICE, "-n", NAMESPACE, f"{KEPT}=ml", f"--field-manager={OWN_MANAGER}"
    )
    suite.kubectl("annotate", "ksvc", KSERVICE, "-n", NAMESPACE, f"{TAKEN_OVER}=alice")

    common = ["--project-dir", str(suite.project), "--stack", MAIN_STACK]
    status = suite.flyte_apps("status", *common, "--exit-code", check_rc=False)
    check(status.returncode == EXIT_DRIFT, f"status exited {status.returncode}:\n{status.stdout}")
    drift = status.stdout.split("drift:\n", 1)[-1]
    for field, value in (
        ("spec.template.spec.containers[0].image", HAND_IMAGE),
        (f"spec.template.spec.containers[0].env[{env_index}].value", HAND_VALUE),
    ):
        check(f"{APP}: {field} is '{value}' live" in drift, f"status does not name {field}:\n{status.stdout}")
    check(KEPT not in drift and TAKEN_OVER not in drift, "a field the stack does not render is drift")

    before = set(suite.revisions())
    suite.pulumi("up", "--yes")
    check(live_container(suite)["image"] == HAND_IMAGE, "a plain `pulumi up` changed the live object")

    done = suite.pulumi("up", "--refresh", "--yes")
    check("Traceback" not in done.stdout + done.stderr, f"a traceback:\n{done.stdout}{done.stderr}")
    restored = live_container(suite)
    check(restored["image"] == ours["image"], f"the image is {restored['image']}")
    check(
        restored["env"][env_index] == ours["env"][env_index], f"the env var is {restored['env'][env_index]}"
    )
    suite.wait("the restoring revision", lambda: len(set(suite.revisions()) - before) >= 1, NEW_REVISION_S)
    time.sleep(KNATIVE_REACTION_S)
    new = {name: svc for name, svc in suite.revisions().items() if name not in before}
    check(list(new.values()) == [KSERVICE], f"new revisions: {new} (one of {KSERVICE} expected)")
    annotations = suite.get(KSERVICES, KSERVICE)["metadata"]["annotations"]
    check(annotations.get(KEPT) == "ml", f"{KEPT}, set by {OWN_MANAGER}, is gone: {annotations}")
    check(
        TAKEN_OVER not in annotations,
        f"pulumi-kubernetes kept {TAKEN_OVER} (docs/operating.md says it drops it)",
    )
    after = suite.flyte_apps("status", *common, "--exit-code", check_rc=False)
    check(after.returncode == 0, f"drift after the restore:\n{after.stdout}")
    suite.pulumi("preview", "--expect-no-changes")
    suite.kubectl("annotate", "ksvc", KSERVICE, "-n", NAMESPACE, f"{KEPT}-", f"--field-manager={OWN_MANAGER}")
    record(f"status named both fields; up --refresh restored them in {next(iter(new))}; {KEPT} kept")
