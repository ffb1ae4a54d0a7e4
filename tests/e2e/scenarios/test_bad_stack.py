"""A stack file with mistakes: `pulumi preview` and `up` fail with our one-line errors, and nothing is
registered, in the state or in the cluster."""

from __future__ import annotations

from typing import Final

from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.suite import STACKS, Suite, diagnostics_of

STACK: Final = "bad"
EXPECTED: Final = (
    "flyte-apps:apps[0].name",
    "flyte-apps:apps[1].container.resources.requests.memory",
    "flyte-apps:domain: encrypted (secure:) values are not supported",
)
"""One diagnostic each: the file's mistakes, and a secret where the program reads plain config."""


def test_bad_stack(suite: Suite, record: Record) -> None:
    suite.write_stack(STACK, STACKS / "bad-config.yaml")
    suite.pulumi("stack", "init", stack=STACK)
    # A secret where the program reads plain config: refused at its key, like the file's mistakes.
    suite.pulumi("config", "set", "--secret", "flyte-apps:domain", "development", stack=STACK)
    for command in (("preview",), ("up", "--yes")):
        done = suite.pulumi(*command, stack=STACK, check_rc=False)
        output = done.stdout + done.stderr
        check(done.returncode != 0, f"`pulumi {command[0]}` of a bad stack succeeded")
        diagnostics = diagnostics_of(output)
        for key in EXPECTED:
            lines = [line for line in diagnostics if key in line]
            check(
                len(lines) == 1,
                f"`pulumi {command[0]}`: expected one diagnostic naming {key}, got {lines}\n{output}",
            )
        check(
            "nothing was registered" in output, f"`pulumi {command[0]}` does not say nothing was registered"
        )
        check("Traceback" not in output, f"`pulumi {command[0]}` printed a traceback:\n{output}")
    registered = [r["type"] for r in suite.state_resources(STACK) if r["type"] != "pulumi:pulumi:Stack"]
    check(not registered, f"resources registered from a bad stack: {registered}")
    check(not suite.exists("namespaces", "flyte-bad", namespace=None), "namespace flyte-bad exists")
    record("preview and up refused, one line per problem, nothing registered")
