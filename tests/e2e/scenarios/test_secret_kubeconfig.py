"""A stack whose `kubernetes:kubeconfig` is set with `pulumi config set --secret`: pulumi-kubernetes and
the RevisionReaper (in the engine's dynamic-provider host, where the input arrives secret-wrapped)
reach this cluster, and the environment names none, so any fall-back would fail; no plain path is in
the state. Its stopped app needs Knative's config as the main stack patches it."""

from __future__ import annotations

import json
from typing import Final

from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.stacks import Deployed
from tests.e2e.scenarios.suite import STACKS, Suite

STACK: Final = "secret"
STOP_REVISION: Final = "paused-e2e-development-00001"


def test_secret_kubeconfig(suite: Suite, knative_settings: Deployed, record: Record) -> None:
    suite.write_stack(STACK, STACKS / "secret-kubeconfig.yaml", kubeconfig=False)
    suite.pulumi("stack", "init", stack=STACK)
    suite.pulumi(
        "config", "set", "--secret", "kubernetes:kubeconfig", str(suite.plane.kubeconfig), stack=STACK
    )
    check("secure:" in suite.stack_file(STACK).read_text(), "the kubeconfig setting is not stored encrypted")
    suite.pulumi("up", "--yes", stack=STACK)
    reapers = suite.reapers(STACK)
    check(len(reapers) == 1, f"expected one reaper, got {len(reapers)}")
    outputs = reapers[0].get("outputs", {})
    check(outputs.get("stop_revision") == STOP_REVISION, f"the reaper's outputs: {outputs}")
    check(
        str(suite.plane.kubeconfig) not in json.dumps(reapers[0].get("inputs", {})),
        "the path is in plain text",
    )
    suite.pulumi("destroy", "--yes", stack=STACK)
    record("the reaper reached the cluster through the secret input")
