"""`pulumi preview --policy-pack policies` in the real analyzer: a stack that breaks mandatory rules
fails, naming them, and creates nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.suite import STACKS, Suite

STACK: Final = "policy"
RULES: Final = ("no-privileged-pods", "request-timeout-within-knative-max")


def test_policy(suite: Suite, policy_pack: Path, record: Record) -> None:
    suite.write_stack(STACK, STACKS / "policy-violations.yaml")
    suite.pulumi("stack", "init", stack=STACK)
    done = suite.pulumi("preview", "--policy-pack", str(policy_pack), stack=STACK, check_rc=False)
    output = done.stdout + done.stderr
    check(done.returncode != 0, f"preview with violations passed:\n{output}")
    for rule in RULES:
        check(rule in output, f"the analyzer's output does not name {rule}:\n{output}")
    check("mandatory" in output, f"the violations are not reported as mandatory:\n{output}")
    check(not suite.exists("namespaces", "flyte-policy", namespace=None), "a refused preview created objects")
    record("mandatory violations fail the preview, by rule name")
