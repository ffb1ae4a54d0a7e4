"""What `check` refuses in a pod (tolerations, node selectors) the real API server refuses too, and what
it accepts the API server accepts: each case of tests/cli/test_cluster_refusals.py in a Pod,
`--dry-run=server`; Knative's reserved env names in a KService, which its webhook must refuse. NUL
bytes, which only the container runtime refuses, the API server must accept (so `check` is the only
guard). In the main stack's namespace (its default service account admits the Pods)."""

from __future__ import annotations

import json
from typing import Any, Final

from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.stacks import Deployed
from tests.e2e.scenarios.suite import NAMESPACE, Suite

NAME_LENGTH: Final = 40
"""Of a judged object's name (``judge-<case>``): within Kubernetes' limits for a KService's Revision."""


def test_cluster_refusals(suite: Suite, deployed: Deployed, record: Record) -> None:
    from tests.cli.test_cluster_refusals import api_server_cases

    disagree: list[str] = []
    cases = api_server_cases()
    for name, case in sorted(cases.items()):
        container: dict[str, Any] = {"name": "app", "image": "nginx:1.27"}
        container.update({key: case.fragment[key] for key in ("args", "env") if key in case.fragment})
        spec: dict[str, Any] = {"containers": [container]}
        spec.update(
            {key: case.fragment[key] for key in ("tolerations", "nodeSelector") if key in case.fragment}
        )
        metadata = {"name": f"judge-{name}"[:NAME_LENGTH]}
        judged: dict[str, Any] = (
            {
                "apiVersion": "serving.knative.dev/v1",
                "kind": "Service",
                "metadata": metadata,
                "spec": {"template": {"spec": spec}},
            }
            if case.kservice
            else {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
        )
        done = suite.kubectl(
            "create", "--dry-run=server", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(judged), check_rc=False
        )
        if (done.returncode != 0) != case.refused:
            expected = "refusal" if case.refused else "acceptance"
            disagree.append(f"{name}: expected {expected}, the cluster: {done.stderr.strip() or 'accepted'}")
    check(not disagree, "; ".join(disagree))
    knative = sum(case.kservice for case in cases.values())
    record(f"{len(cases) - knative} Pods and {knative} KServices, the cluster agrees on each")
