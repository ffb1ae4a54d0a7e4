"""Reading `pulumi up`'s Diagnostics section (tests/e2e/faults/diagnostics.py), on the shape Pulumi 3.274.1
printed in the fault scenarios."""

from __future__ import annotations

from typing import Final

from tests.e2e.faults.diagnostics import failures

OUTPUT: Final = """Updating (faults):
 ~  kubernetes:serving.knative.dev/v1:Service alpha-kservice updating (10s); error: 1 error occurred:
    pulumi:pulumi:Stack flyte-apps-faults running error: update failed

Diagnostics:
  pulumi:pulumi:Stack (flyte-apps-faults):
    error: update failed

  kubernetes:serving.knative.dev/v1:Service (alpha-kservice):
    error: 1 error occurred:
    \t* Internal error occurred: failed calling webhook "webhook.serving.knative.dev": deadline exceeded

  pulumi-python:dynamic/flyte:RevisionReaper (alpha-reaper):
    error: stopping flyte-faults/alpha: cannot reach the Kubernetes API at https://127.0.0.1:4443

Outputs:
  - apps: {}

Resources:
    4 unchanged
"""


def test_each_failing_resource_has_its_lines_and_the_stacks_summary_is_left_out() -> None:
    assert failures(OUTPUT) == {
        "kubernetes:serving.knative.dev/v1:Service (alpha-kservice)": [
            "error: 1 error occurred:",
            '* Internal error occurred: failed calling webhook "webhook.serving.knative.dev": '
            "deadline exceeded",
        ],
        "pulumi-python:dynamic/flyte:RevisionReaper (alpha-reaper)": [
            "error: stopping flyte-faults/alpha: cannot reach the Kubernetes API at https://127.0.0.1:4443"
        ],
    }


def test_output_without_diagnostics_has_no_failures() -> None:
    assert failures("Updating (faults):\n\nResources:\n    4 unchanged\n") == {}
