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
from flyte_apps.policy.report import Finding
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
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == [rule.name for rule in RULES]
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
