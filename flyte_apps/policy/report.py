"""Policy violations as a reviewer reads them: located at the stack file's key and line, one per
place to fix, in text, JSON, SARIF 2.1.0 (code scanning) or GitHub workflow commands (annotations
on the pull request's lines, no token needed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.policy.registry import RULES, Level, Rule
from flyte_apps.policy.runner import Violation

SARIF_VERSION: Final = "2.1.0"
SARIF_SCHEMA: Final = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_URI: Final = "https://github.com/flyteorg/flyte"
SARIF_LEVELS: Final = {Level.MANDATORY: "error", Level.ADVISORY: "warning"}
GITHUB_COMMANDS: Final = {Level.MANDATORY: "error", Level.ADVISORY: "warning"}


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


def sarif(findings: Sequence[Finding], *, version: str, rules: Sequence[Rule] = RULES) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run, the pack's rules as the driver's rules, one result per finding."""
    listed = list(rules)
    index = {rule.name: position for position, rule in enumerate(listed)}
    results = []
    for finding in findings:
        v = finding.violation
        result: dict[str, Any] = {
            "ruleId": v.policy_name,
            "level": SARIF_LEVELS[v.level],
            "message": {"text": f"{finding.key}: {v.message} ({v.resource_type} {v.resource_name})"},
        }
        if v.policy_name in index:
            result["ruleIndex"] = index[v.policy_name]
        if finding.file and finding.line:
            result["locations"] = [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": finding.file},
                        "region": {"startLine": finding.line},
                    },
                    "logicalLocations": [{"fullyQualifiedName": finding.key}],
                }
            ]
        results.append(result)
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
                        "rules": [
                            {
                                "id": rule.name,
                                "shortDescription": {"text": rule.description},
                                "defaultConfiguration": {"level": _rule_level(rule)},
                            }
                            for rule in listed
                        ],
                    }
                },
                "results": results,
            }
        ],
    }


def _rule_level(rule: Rule) -> str:
    return "error" if rule.level.blocks else ("none" if rule.level is Level.DISABLED else "warning")


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")
