"""An app's ``knative`` settings (issue "Model servers in production", item 1): each is rendered where
Knative reads it, refused at its key and line as Knative's webhook refuses it (the vectors below follow
knative.dev/serving v0.48.2's validators and their tests; ``make e2e`` sends each to the real webhook,
scenario ``knative-knobs``), kept off a stopped app where upstream's stop form decides, and read back
by ``flyte-apps import``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from flyte_apps.cli.main import app
from flyte_apps.core import constants as c
from flyte_apps.core.plan import plan_stack
from tests.support.config import minimal_config


@dataclass(frozen=True)
class Knob:
    key: str
    """The key under the app's ``knative``."""
    value: Any
    """As written in the stack file."""
    rendered: str | int
    """What the revision template carries: an annotation's text, or ``containerConcurrency``."""
    accepted: bool


ANNOTATION_OF = {
    "progressDeadline": c.ANNOTATION_PROGRESS_DEADLINE,
    "scaleDownDelay": c.ANNOTATION_SCALE_DOWN_DELAY,
    "scaleToZeroPodRetentionPeriod": c.ANNOTATION_POD_RETENTION,
    "initialScale": c.ANNOTATION_INITIAL_SCALE,
    "targetUtilizationPercentage": c.ANNOTATION_TARGET_UTILIZATION,
    "targetBurstCapacity": c.ANNOTATION_TARGET_BURST_CAPACITY,
    "activationScale": c.ANNOTATION_ACTIVATION_SCALE,
}
AUTOSCALING = {"minReplicas": 0, "maxReplicas": 4}
"""Every vector's app scales 0..4 (activation scale is judged against it)."""
KNOBS = [
    Knob("progressDeadline", "30m", "30m0s", True),
    Knob("progressDeadline", "0s", "0s", True),
    Knob("progressDeadline", "1.5s", "1.5s", False),
    Knob("progressDeadline", "-1s", "-1s", False),
    Knob("scaleDownDelay", "0s", "0s", True),
    Knob("scaleDownDelay", "1h", "1h0m0s", True),
    Knob("scaleDownDelay", "1h1s", "1h0m1s", False),
    Knob("scaleDownDelay", "1.5s", "1.5s", False),
    Knob("scaleDownDelay", "-1s", "-1s", False),
    Knob("scaleToZeroPodRetentionPeriod", "1h", "1h0m0s", True),
    Knob("scaleToZeroPodRetentionPeriod", "1.5s", "1.5s", True),  # no precision rule for this one
    Knob("scaleToZeroPodRetentionPeriod", "1h1s", "1h0m1s", False),
    Knob("scaleToZeroPodRetentionPeriod", "-1s", "-1s", False),
    Knob("initialScale", 3, "3", True),
    Knob("initialScale", -1, "-1", False),
    Knob("targetUtilizationPercentage", 1, "1", True),
    Knob("targetUtilizationPercentage", 100, "100", True),
    Knob("targetUtilizationPercentage", 70.5, "70.5", True),
    Knob("targetUtilizationPercentage", 0, "0", False),
    Knob("targetUtilizationPercentage", 101, "101", False),
    Knob("targetBurstCapacity", -1, "-1", True),
    Knob("targetBurstCapacity", 0, "0", True),
    Knob("targetBurstCapacity", 211.5, "211.5", True),
    Knob("targetBurstCapacity", -2, "-2", False),
    Knob("activationScale", 2, "2", True),
    Knob("activationScale", 4, "4", True),
    Knob("activationScale", 1, "1", False),
    Knob("activationScale", 5, "5", False),  # above maxReplicas 4
    Knob("containerConcurrency", 0, 0, True),
    Knob("containerConcurrency", 1000, 1000, True),
    Knob("containerConcurrency", 1001, 1001, False),
    Knob("containerConcurrency", -1, -1, False),
]


def knob_config(knob: Knob) -> dict[str, Any]:
    config = minimal_config(autoscaling=AUTOSCALING, knative={knob.key: knob.value})
    return config


def template_of(config: dict[str, Any]) -> dict[str, Any]:
    template: dict[str, Any] = plan_stack(config).apps[0].kservice["spec"]["template"]
    return template


def errors(tmp_path: Path, config: dict[str, Any]) -> list[str]:
    stack = tmp_path / "Pulumi.test.yaml"
    stack.write_text(yaml.safe_dump({"config": config}, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(app, ["check", "--config", str(stack), "--project-dir", str(tmp_path)])
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


@pytest.mark.parametrize("knob", [k for k in KNOBS if k.accepted], ids=lambda k: f"{k.key}={k.value}")
def test_an_accepted_knob_is_rendered_where_knative_reads_it(knob: Knob) -> None:
    template = template_of(knob_config(knob))
    if knob.key == "containerConcurrency":
        assert template["spec"][c.FIELD_CONTAINER_CONCURRENCY] == knob.rendered
    else:
        assert template["metadata"]["annotations"][ANNOTATION_OF[knob.key]] == knob.rendered


@pytest.mark.parametrize("knob", [k for k in KNOBS if not k.accepted], ids=lambda k: f"{k.key}={k.value}")
def test_a_knob_knative_refuses_is_a_config_error_at_its_key_and_line(tmp_path: Path, knob: Knob) -> None:
    [line] = errors(tmp_path, knob_config(knob))
    assert f" flyte-apps:apps[0].knative.{knob.key}: " in line, line
    assert line.startswith(f"error: {tmp_path / 'Pulumi.test.yaml'}:")


def test_a_stopped_app_starts_at_zero_whatever_its_initial_scale() -> None:
    config = minimal_config(stopped=True, knative={"initialScale": 2, "scaleDownDelay": "5m"})
    annotations = template_of(config)["metadata"]["annotations"]
    assert annotations[c.ANNOTATION_INITIAL_SCALE] == "0"  # upstream's stop form
    assert annotations[c.ANNOTATION_MIN_SCALE] == "0"
    assert annotations[c.ANNOTATION_SCALE_DOWN_DELAY] == "5m0s"


def test_the_knobs_are_not_in_flytes_spec() -> None:
    # Flyte's app service rebuilds the KService from the spec: the knobs, outside it, are lost then.
    plain = plan_stack(minimal_config()).apps[0]
    tuned = plan_stack(minimal_config(knative={"progressDeadline": "30m", "containerConcurrency": 1})).apps[0]
    assert tuned.blob.sha == plain.blob.sha


def test_a_startup_probe_longer_than_the_progress_deadline_is_warned_of() -> None:
    probe = {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10, "failureThreshold": 90}
    config = minimal_config()
    config["flyte-apps:apps"][0]["pod"] = {"spec": {"containers": [{"name": "app", "startupProbe": probe}]}}
    warnings = plan_stack(config).warnings
    assert any("startup probe allows 900s to start" in w and "Knative's default" in w for w in warnings), (
        warnings
    )
    config["flyte-apps:apps"][0]["knative"] = {"progressDeadline": "20m"}
    assert not any("startup probe" in warning for warning in plan_stack(config).warnings)
    config["flyte-apps:apps"][0]["knative"] = {"progressDeadline": "5m"}
    assert any(
        "more than the progress deadline 300s (knative.progressDeadline)" in w
        for w in plan_stack(config).warnings
    )


def test_the_model_server_in_the_docs_renders_and_checks_clean(tmp_path: Path) -> None:
    docs = (Path(__file__).parents[2] / "docs" / "config.md").read_text(encoding="utf-8")
    block = docs.split("## A model server, end to end", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    stack = tmp_path / "Pulumi.production.yaml"
    stack.write_text(block, encoding="utf-8")
    for command in ("render", "check"):
        result = CliRunner().invoke(app, [command, "--config", str(stack), "--project-dir", str(tmp_path)])
        assert result.exit_code == 0, result.stderr
        assert "warning" not in result.stderr.lower(), result.stderr
        assert "error" not in result.stderr.lower(), result.stderr
    [plan] = plan_stack(yaml.safe_load(block)["config"]).apps
    template = plan.kservice["spec"]["template"]
    assert template["metadata"]["annotations"][c.ANNOTATION_PROGRESS_DEADLINE] == "30m0s"
    assert template["spec"][c.FIELD_CONTAINER_CONCURRENCY] == 1
    [container] = template["spec"]["containers"]
    assert container["startupProbe"]["failureThreshold"] == 150
    assert (
        container["resources"]["limits"]["nvidia.com/gpu"] == "1"
        or container["resources"]["limits"]["nvidia.com/gpu"] == 1
    )


def test_a_request_timeout_above_the_activators_drain_time_is_warned_of_until_declared() -> None:
    config = minimal_config(timeouts={"request": "20m"})
    config["flyte-apps:platform"] = {"maxRequestTimeout": "1h"}
    [warning] = [w for w in plan_stack(config).warnings if "activator" in w]
    assert warning.startswith(
        "flyte-apps:apps[0].timeouts.request: requests may run 1200s, longer than the 600s"
    )
    config["flyte-apps:platform"]["activatorTerminationGracePeriod"] = "25m"
    assert not [w for w in plan_stack(config).warnings if "activator" in w]
    config["flyte-apps:platform"]["activatorTerminationGracePeriod"] = "15m"
    [warning] = [w for w in plan_stack(config).warnings if "activator" in w]
    assert "longer than the 900s Knative's activator pods get to drain (the declared" in warning


def test_a_gpu_app_without_a_probe_of_its_own_is_warned_of() -> None:
    config = minimal_config(
        container={"image": "vllm/vllm-openai:v0.6.3", "resources": {"limits": {"gpu": 1}}}
    )
    assert any("a GPU app without a startup or readiness probe" in w for w in plan_stack(config).warnings)
    config["flyte-apps:apps"][0]["pod"] = {
        "spec": {
            "containers": [{"name": "app", "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}}}]
        }
    }
    assert not any("GPU app" in w for w in plan_stack(config).warnings)
