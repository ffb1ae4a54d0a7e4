"""The scale-and-load scenario's generated stack (tests/e2e/scenarios/test_scale_load.py) is one our
program accepts, with the shape issue 40 asks for: checked without the built tools."""

from __future__ import annotations

from collections import Counter

from flyte_apps.core import constants as c
from flyte_apps.core.plan import plan_stack
from tests.e2e.scenarios import test_scale_load as scale


def test_the_scale_stack_has_200_apps_a_tenth_stopped_a_tenth_private_and_20_warm() -> None:
    plan = plan_stack(scale.stack_document("/nonexistent/kubeconfig")["config"])
    assert len(plan.apps) == scale.APPS
    kinds: Counter[str] = Counter()
    for app in plan.apps:
        annotations = app.kservice["spec"]["template"]["metadata"].get("annotations", {})
        labels = app.kservice["metadata"]["labels"]
        if app.config.input.stopped:  # a stopped app is cluster-local too (its stop form)
            kinds["stopped"] += 1
            continue
        if annotations.get(c.ANNOTATION_INITIAL_SCALE) == "0":
            kinds["cold"] += 1
            assert annotations.get(c.ANNOTATION_MIN_SCALE, "0") == "0"
        else:
            kinds["warm"] += 1
            assert annotations[c.ANNOTATION_MIN_SCALE] == "1"
        kinds["private"] += labels.get(c.LABEL_VISIBILITY) == c.VISIBILITY_CLUSTER_LOCAL
    assert kinds == Counter(stopped=20, cold=160, warm=scale.WARM, private=20)
