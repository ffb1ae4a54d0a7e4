"""Knative's webhook as the judge of what `check` and `render` say about KServices: every `knative`
setting vector, and the KServices of Flyte's placement cases, `--dry-run=server` in the main stack's
namespace, with the feature flags its Knative config patch turns on."""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.stacks import Deployed
from tests.e2e.scenarios.suite import NAMESPACE, Suite


def test_knative_knobs(suite: Suite, deployed: Deployed, record: Record) -> None:
    """Every `knative` setting vector of tests/cli/test_knative_knobs.py in a KService: Knative's
    webhook accepts exactly those `check` accepts."""
    from tests.cli.test_knative_knobs import ANNOTATION_OF, AUTOSCALING, KNOBS

    disagree: list[str] = []
    for index, knob in enumerate(KNOBS):
        annotations = {
            "autoscaling.knative.dev/min-scale": str(AUTOSCALING["minReplicas"]),
            "autoscaling.knative.dev/max-scale": str(AUTOSCALING["maxReplicas"]),
        }
        spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx:1.27"}]}
        if knob.key == "containerConcurrency":
            spec["containerConcurrency"] = knob.rendered
        else:
            annotations[ANNOTATION_OF[knob.key]] = str(knob.rendered)
        kservice = {
            "apiVersion": "serving.knative.dev/v1",
            "kind": "Service",
            "metadata": {"name": f"knob-{index}"},
            "spec": {"template": {"metadata": {"annotations": annotations}, "spec": spec}},
        }
        done = suite.kubectl(
            "create",
            "--dry-run=server",
            "-n",
            NAMESPACE,
            "-f",
            "-",
            stdin=json.dumps(kservice),
            check_rc=False,
        )
        if (done.returncode == 0) != knob.accepted:
            verdict = done.stderr.strip() or "accepted"
            disagree.append(
                f"{knob.key}={knob.value!r}: we {'accept' if knob.accepted else 'refuse'}; {verdict}"
            )
    check(not disagree, "; ".join(disagree))
    record(f"{len(KNOBS)} knob vectors, Knative's webhook agrees on each")


def test_placement(suite: Suite, deployed: Deployed, record: Record) -> None:
    """The KServices `render` gives for Flyte's placement test cases (tests/core/test_gpus.py: device
    classes, partitions, unpartitioned rules, platform tolerations): the API server and Knative's
    webhook accept every one."""
    from flyte_apps.core.plan import plan_stack
    from tests.core.test_gpus import placement_judge_configs

    refused: list[str] = []
    configs = placement_judge_configs()
    for index, (name, config) in enumerate(sorted(configs.items())):
        kservice = plan_stack(config).apps[0].kservice
        judged = {**kservice, "metadata": {"name": f"placed-{index}"}}
        done = suite.kubectl(
            "create", "--dry-run=server", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(judged), check_rc=False
        )
        if done.returncode != 0:
            refused.append(f"{name}: {done.stderr.strip()}")
    check(not refused, "; ".join(refused))
    record(f"{len(configs)} placed KServices, the cluster accepts each")
