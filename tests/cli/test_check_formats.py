"""`flyte-apps check -o sarif` (code scanning) and `-o github` (pull-request annotations without a
token): every violation located at the stack file's line of the key to fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from typer.testing import CliRunner

from flyte_apps.cli.main import app
from flyte_apps.policy.registry import RULES, Level
from flyte_apps.policy.report import CONFIG_ERROR_RULE, Finding, warning_github, warning_key
from flyte_apps.policy.runner import Violation
from tests.cli.test_check import mixed_config, nginx_config
from tests.support.config import REPO_ROOT, write_stack

SARIF_SCHEMA = REPO_ROOT / "tests" / "fixtures" / "sarif-2.1.0.json"


def check(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["check", *args])
    return result.exit_code, result.stdout


def test_sarif_output_validates_against_the_sarif_2_1_0_schema(tmp_path: Path) -> None:
    code, out = check("--config", str(write_stack(tmp_path, mixed_config())), "-o", "sarif")
    assert code == 1
    log: dict[str, Any] = json.loads(out)
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    (run,) = log["runs"]
    assert run["tool"]["driver"]["name"] == "flyte-apps"
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == [rule.name for rule in RULES] + [
        CONFIG_ERROR_RULE
    ]
    assert {result["level"] for result in run["results"]} == {"error", "warning"}


def test_sarif_results_point_at_the_key_line_in_the_stack_file(tmp_path: Path) -> None:
    stack = write_stack(tmp_path, nginx_config())
    _, out = check("--config", str(stack), "-o", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    image = next(result for result in results if result["ruleId"] == "image-pinned")
    (location,) = image["locations"]
    assert location["physicalLocation"] == {
        "artifactLocation": {"uri": str(stack)},
        "region": {"startLine": 7},
    }
    assert location["logicalLocations"] == [{"fullyQualifiedName": "flyte-apps:apps[0].container.image"}]
    rules = json.loads(out)["runs"][0]["tool"]["driver"]["rules"]
    assert rules[image["ruleIndex"]]["id"] == "image-pinned"


def test_sarif_of_a_clean_stack_has_no_results() -> None:
    code, out = check("--stack", "dev", "--project-dir", str(REPO_ROOT), "-o", "sarif")
    assert code == 0
    assert json.loads(out)["runs"][0]["results"] == []


def test_github_output_is_one_workflow_command_per_violation(tmp_path: Path) -> None:
    stack = write_stack(tmp_path, mixed_config())
    code, out = check("--config", str(stack), "-o", "github")
    assert code == 1
    lines = out.splitlines()
    assert all(line.startswith(("::error ", "::warning ")) for line in lines)
    timeout = next(line for line in lines if "request-timeout-within-knative-max" in line)
    assert timeout.startswith(
        f"::error file={stack},line=9,title=request-timeout-within-knative-max::"
        "flyte-apps:apps[0].timeouts.request: spec.template.spec.timeoutSeconds 900 exceeds"
    )
    credential = next(line for line in lines if "no-plaintext-credentials" in line)
    assert credential.startswith(f"::warning file={stack},line=22,title=no-plaintext-credentials::")


def test_github_output_escapes_what_would_end_a_command(tmp_path: Path) -> None:

    violation = Violation("rule", Level.ADVISORY, "t", "n", "50% of it\nbroke")
    finding = Finding(violation, "flyte-apps:apps[0]", file="a,b:c.yaml", line=3)
    assert (
        finding.github()
        == "::warning file=a%2Cb%3Ac.yaml,line=3,title=rule::flyte-apps:apps[0]: 50%25 of it%0Abroke"
    )


def test_a_planner_warning_annotates_the_line_of_its_key(tmp_path: Path) -> None:
    config = nginx_config()
    config["flyte-apps:apps"][0]["container"]["resources"] = {"limits": {"gpu": 1}}
    config["flyte-apps:apps"][0]["accelerator"] = {"device": "nvidia-a100-80g"}
    stack = write_stack(tmp_path, config)
    _, out = check("--config", str(stack), "-o", "github")
    [device] = [line for line in out.splitlines() if "accelerator.device:" in line]
    line = next(
        number
        for number, text in enumerate(stack.read_text(encoding="utf-8").splitlines(), start=1)
        if text.strip().startswith("device:")
    )
    assert device.startswith(
        f"::warning file={stack},line={line},title=flyte-apps::flyte-apps:apps[0].accelerator.device: "
        "'nvidia-a100-80g' is neither"
    )
    result = CliRunner().invoke(app, ["render", "--config", str(stack)])
    assert f"warning: {stack}:{line} flyte-apps:apps[0].accelerator.device: " in result.stderr


def test_a_warning_about_the_whole_stack_has_no_line() -> None:
    assert warning_github("the stack declares no apps: 50%\n", None) == (
        "::warning title=flyte-apps::the stack declares no apps: 50%25%0A"
    )
    assert warning_key("the stack declares no apps (flyte-apps:apps is missing): it renders") is None
    assert warning_key("flyte-apps:apps[0].accelerator: its GPUs") == "flyte-apps:apps[0].accelerator"


def broken_stack(tmp_path: Path, name: str = "Pulumi.prod.yaml") -> Path:
    """A stack file with two config errors, images the kubelet cannot pull, at lines 7 and 10."""
    stack = tmp_path / name
    stack.write_text(
        "config:\n"
        "  flyte-apps:project: proj\n"
        "  flyte-apps:domain: dev\n"
        "  flyte-apps:apps:\n"
        "    - name: myapp\n"
        "      container:\n"
        "        image: Nginx\n"
        "    - name: other\n"
        "      container:\n"
        '        image: "nginx:1.27\\u200b"\n',
        encoding="utf-8",
    )
    return stack


def test_config_errors_are_sarif_results_in_a_valid_log(tmp_path: Path) -> None:
    stack = broken_stack(tmp_path)
    code, out = check("--config", str(stack), "-o", "sarif")
    assert code == 2
    log: dict[str, Any] = json.loads(out)
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))
    (run,) = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    results = run["results"]
    assert [result["ruleId"] for result in results] == [CONFIG_ERROR_RULE, CONFIG_ERROR_RULE]
    assert {result["level"] for result in results} == {"error"}
    assert {rules[result["ruleIndex"]]["id"] for result in results} == {CONFIG_ERROR_RULE}
    lines = [result["locations"][0]["physicalLocation"]["region"]["startLine"] for result in results]
    assert lines == [7, 10]
    assert all(
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == str(stack) for r in results
    )


def test_each_stack_files_sarif_run_has_a_category_of_its_own(tmp_path: Path) -> None:
    # Code scanning refuses several runs of one tool and category in one upload (22 July 2025).
    ids = []
    for name in ("Pulumi.prod.yaml", "Pulumi.staging.yaml"):
        _, out = check("--config", str(broken_stack(tmp_path, name)), "-o", "sarif")
        ids.append(json.loads(out)["runs"][0]["automationDetails"]["id"])
    assert ids == ["flyte-apps/prod/", "flyte-apps/staging/"]


def test_config_errors_are_annotations_under_github_output(tmp_path: Path) -> None:
    stack = broken_stack(tmp_path)
    code, out = check("--config", str(stack), "-o", "github")
    assert code == 2
    assert out.splitlines() == [
        f"::error file={stack},line=7,title=config-error::flyte-apps:apps[0].container.image: not an "
        "image the kubelet can pull: 'Nginx': the repository name must be lower case",
        f"::error file={stack},line=10,title=config-error::flyte-apps:apps[1].container.image: not an "
        "image the kubelet can pull: 'nginx:1.27\\u200b' has U+200B (ZERO WIDTH SPACE) at position 11: an "
        "image reference is printable ASCII without spaces",
    ]


def test_config_errors_are_a_json_array_under_json_output(tmp_path: Path) -> None:
    stack = broken_stack(tmp_path)
    code, out = check("--config", str(stack), "-o", "json")
    assert code == 2
    items = json.loads(out)
    assert [(item["policyName"], item["stackKey"], item["line"]) for item in items] == [
        (CONFIG_ERROR_RULE, "flyte-apps:apps[0].container.image", 7),
        (CONFIG_ERROR_RULE, "flyte-apps:apps[1].container.image", 10),
    ]
