"""Policy violations as a reviewer reads them: located at the stack file's key and line, one per
place to fix, in text, JSON, SARIF 2.1.0 (code scanning) or GitHub workflow commands (annotations
on the pull request's lines, no token needed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.policy.registry import RULES, Level, Rule
from flyte_apps.policy.runner import Violation

SARIF_VERSION: Final = "2.1.0"
SARIF_SCHEMA: Final = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_URI: Final = "https://github.com/flyteorg/flyte"
SARIF_LEVELS: Final = {Level.MANDATORY: "error", Level.ADVISORY: "warning"}
GITHUB_COMMANDS: Final = {Level.MANDATORY: "error", Level.ADVISORY: "warning"}
CONFIG_ERROR_RULE: Final = "config-error"
"""The rule id of a config error (the stack file cannot be planned), beside the pack's rules."""
CONFIG_ERROR_DESCRIPTION: Final = (
    "The stack config has a mistake: nothing of the stack can be checked or deployed."
)


@dataclass(frozen=True)
class Finding:
    """One violation at one place to fix, with every rendered object it was found in."""

    violation: Violation
    key: str
    """The stack config key to fix (``flyte-apps:apps[1].container.env.API_TOKEN``)."""
    file: str | None = None
    line: int | None = None
    others: tuple[Violation, ...] = field(default=())
    """The same violation in other objects (a platform value every app inherits)."""

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line} {self.key}" if self.file and self.line else self.key

    def text(self) -> str:
        v = self.violation
        also = f" and {len(self.others)} more" if self.others else ""
        objects = f"{v.resource_type} {v.resource_name}{also}"
        return f"{v.level.value.upper()} {v.policy_name} {self.where}: {v.message} ({objects})"

    def as_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {**self.violation.as_json(), "stackKey": self.key}
        if self.file and self.line:
            found.update(file=self.file, line=self.line)
        if self.others:
            found["alsoIn"] = [
                {"resourceType": o.resource_type, "resourceName": o.resource_name} for o in self.others
            ]
        return found

    def github(self) -> str:
        """A workflow command: ``::error file=F,line=L,title=T::message`` (GitHub's escaping)."""
        v = self.violation
        properties = [f"title={_property(v.policy_name)}"]
        if self.file and self.line:
            properties[:0] = [f"file={_property(self.file)}", f"line={self.line}"]
        message = f"{self.key}: {v.message}"
        return f"::{GITHUB_COMMANDS[v.level]} {','.join(properties)}::{_data(message)}"


def sarif(
    findings: Sequence[Finding],
    *,
    version: str,
    category: str,
    problems: Sequence[ConfigProblem] = (),
    rules: Sequence[Rule] = RULES,
) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run (``category``: its ``automationDetails.id``, distinct per stack file,
    as code scanning requires of several runs in one upload), the pack's rules and ``config-error`` as
    the driver's rules, one result per finding and per config problem."""
    listed = list(rules)
    index = {rule.name: position for position, rule in enumerate(listed)}
    results = [_finding_result(finding, index) for finding in findings]
    results.extend(_problem_result(problem, len(listed)) for problem in problems)
    driver_rules = [
        {
            "id": rule.name,
            "shortDescription": {"text": rule.description},
            "defaultConfiguration": {"level": _rule_level(rule)},
        }
        for rule in listed
    ]
    driver_rules.append(
        {
            "id": CONFIG_ERROR_RULE,
            "shortDescription": {"text": CONFIG_ERROR_DESCRIPTION},
            "defaultConfiguration": {"level": "error"},
        }
    )
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": c.PROJECT_NAME,
                        "version": version,
                        "informationUri": TOOL_URI,
                        "rules": driver_rules,
                    }
                },
                "automationDetails": {"id": category},
                "results": results,
            }
        ],
    }


def _location(file: str | None, line: int | None, key: str) -> list[dict[str, Any]]:
    if not file or not line:
        return []
    return [
        {
            "physicalLocation": {"artifactLocation": {"uri": file}, "region": {"startLine": line}},
            "logicalLocations": [{"fullyQualifiedName": key}],
        }
    ]


def _finding_result(finding: Finding, index: dict[str, int]) -> dict[str, Any]:
    v = finding.violation
    result: dict[str, Any] = {
        "ruleId": v.policy_name,
        "level": SARIF_LEVELS[v.level],
        "message": {"text": f"{finding.key}: {v.message} ({v.resource_type} {v.resource_name})"},
    }
    if v.policy_name in index:
        result["ruleIndex"] = index[v.policy_name]
    if locations := _location(finding.file, finding.line, finding.key):
        result["locations"] = locations
    return result


def _problem_result(problem: ConfigProblem, rule_index: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": CONFIG_ERROR_RULE,
        "ruleIndex": rule_index,
        "level": "error",
        "message": {"text": f"{problem.path}: {problem.message}"},
    }
    if locations := _location(problem.file, problem.line, problem.path):
        result["locations"] = locations
    return result


def problem_github(problem: ConfigProblem) -> str:
    """A config problem as a workflow command: ``::error file=F,line=L,title=config-error::...``."""
    properties = [f"title={CONFIG_ERROR_RULE}"]
    if problem.file and problem.line:
        properties[:0] = [f"file={_property(problem.file)}", f"line={problem.line}"]
    return f"::error {','.join(properties)}::{_data(f'{problem.path}: {problem.message}')}"


def warning_key(warning: str) -> str | None:
    """The stack config key a planner warning begins with (``flyte-apps:apps[0].accelerator.device: ...``),
    or None for one about the stack as a whole."""
    key, separator, _ = warning.partition(": ")
    return key if separator and key.startswith(f"{c.PROJECT_NAME}:") and " " not in key else None


def warning_text(warning: str, where: tuple[str, int] | None) -> str:
    """A planner warning as ``render`` and ``check`` print it: at its file and line when known."""
    return f"warning: {where[0]}:{where[1]} {warning}" if where else f"warning: {warning}"


def warning_github(warning: str, where: tuple[str, int] | None) -> str:
    """A planner warning as a workflow command, annotating its line when known."""
    properties = [f"title={c.PROJECT_NAME}"]
    if where:
        properties[:0] = [f"file={_property(where[0])}", f"line={where[1]}"]
    return f"::warning {','.join(properties)}::{_data(warning)}"


def problem_json(problem: ConfigProblem) -> dict[str, Any]:
    """A config problem as ``check -o json`` lists it, beside the violations."""
    found: dict[str, Any] = {
        "policyName": CONFIG_ERROR_RULE,
        "enforcementLevel": Level.MANDATORY.value,
        "stackKey": problem.path,
        "message": problem.message,
    }
    if problem.file and problem.line:
        found.update(file=problem.file, line=problem.line)
    return found


def _rule_level(rule: Rule) -> str:
    return "error" if rule.level.blocks else ("none" if rule.level is Level.DISABLED else "warning")


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")
