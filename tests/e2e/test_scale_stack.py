"""The scale-and-load scenario's generated stack (tests/e2e/scenarios/test_scale_load.py) is one our
program accepts, as it reads it from disk (the stack file and its apps files), with the shape issue 40
asks for: checked without the built tools."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml

from flyte_apps.cli.stackfile import plan_stack_files
from flyte_apps.core import constants as c
from tests.e2e.scenarios import test_scale_load as scale


def test_the_scale_stack_has_200_apps_a_tenth_stopped_a_tenth_private_and_20_warm(tmp_path: Path) -> None:
    for name, content in scale.stack_files("/nonexistent/kubeconfig").items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(yaml.safe_dump(content), encoding="utf-8")
    plan, _ = plan_stack_files(project_dir=tmp_path, stack=scale.STACK, as_pulumi_runs_it=True)
    assert len(plan.apps) == scale.APPS
    assert (
        sum(app.config.path.startswith("flyte-apps:appFiles[") for app in plan.apps)
        == scale.APPS - scale.OWN_APPS
    )
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
