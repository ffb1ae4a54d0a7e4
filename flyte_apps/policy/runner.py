"""Run the rules outside the Pulumi engine, the way the engine runs the pack: the policy-pack config
(Pulumi's JSON format, checked against each rule's schema), the enforcement level of each rule,
resource rules per resource and stack rules once, and one ``Violation`` per report."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from jsonschema import Draft202012Validator, ValidationError

from flyte_apps.core import constants as c
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.policy.registry import RULES, Level, ResourceRule, Rule
from flyte_apps.policy.wire import OfflineResourceArgs, OfflineStackArgs, Report, WireResource

ALL: Final = "all"
ENFORCEMENT_LEVEL: Final = "enforcementLevel"
STACK_TYPE: Final = "pulumi:pulumi:Stack"
LEVELS: Final = tuple(level.value for level in Level)


@dataclass(frozen=True)
class RuleSettings:
    """How one rule runs: its effective enforcement level and its config (schema defaults filled in)."""

    level: Level
    config: Mapping[str, Any]


@dataclass(frozen=True)
class Violation:
    policy_name: str
    level: Level
    """Mandatory or advisory as reported (a remediate rule's violation is reported as mandatory)."""
    resource_type: str
    resource_name: str
    message: str
    urn: str = ""
    """The resource's URN (empty for a stack rule's violation about no resource in particular)."""

    def line(self) -> str:
        where = f"{self.resource_type} {self.resource_name}"
        return f"{self.level.value.upper()} {self.policy_name} {where}: {self.message}"

    def as_json(self) -> dict[str, str]:
        return {
            "policyName": self.policy_name,
            "enforcementLevel": self.level.value,
            "resourceType": self.resource_type,
            "resourceName": self.resource_name,
            "message": self.message,
        }


# --------------------------------------------------------------------------------------------------
# Policy-pack config
# --------------------------------------------------------------------------------------------------


def default_settings(rules: Sequence[Rule] = RULES) -> dict[str, RuleSettings]:
    return parse_policy_config({}, source="policy config", rules=rules)


def load_policy_config(path: Path | None, rules: Sequence[Rule] = RULES) -> dict[str, RuleSettings]:
    """Settings from a policy-pack config file (``pulumi preview --policy-pack-config`` format)."""
    if path is None:
        return default_settings(rules)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError([ConfigProblem(str(path), "policy config file not found")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([ConfigProblem(str(path), f"cannot be read: {exc}")]) from None
    except json.JSONDecodeError as exc:
        raise ConfigError([ConfigProblem(str(path), f"is not valid JSON: {exc}")]) from None
    return parse_policy_config(raw, source=str(path), rules=rules)


def parse_policy_config(
    raw: object, *, source: str, rules: Sequence[Rule] = RULES
) -> dict[str, RuleSettings]:
    """Pulumi's policy-pack config: ``{"all": LEVEL}``, ``{"<policy>": LEVEL}`` or ``{"<policy>":
    {"enforcementLevel": LEVEL, "<setting>": value}}``; a policy's own entry wins over ``all``.
    Every problem is collected, each named by its key, and raised as one ``ConfigError``."""
    by_name = {rule.name: rule for rule in rules}
    problems: list[ConfigProblem] = []
    levels: dict[str, Level] = {}
    given: dict[str, dict[str, Any]] = {}
    if not isinstance(raw, dict):
        problems.append(
            ConfigProblem(source, "must be a JSON object of policy names (or 'all') to a level or settings")
        )
        raw = {}
    for key, value in raw.items():
        where = f"{source}: {key}"
        if key != ALL and key not in by_name:
            problems.append(ConfigProblem(where, _unknown(key, [ALL, *by_name], "policy")))
            continue
        properties = by_name[key].settings if key in by_name else {}
        if isinstance(value, str):
            value = {ENFORCEMENT_LEVEL: value}
        if not isinstance(value, dict):
            problems.append(
                ConfigProblem(where, f"must be an enforcement level or an object, not {_json(value)}")
            )
            continue
        for setting, setting_value in value.items():
            setting_where = f"{where}.{setting}"
            if setting == ENFORCEMENT_LEVEL:
                if setting_value in LEVELS:
                    levels[key] = Level(setting_value)
                else:
                    problems.append(
                        ConfigProblem(
                            setting_where, f"{_json(setting_value)} is not one of {', '.join(LEVELS)}"
                        )
                    )
            elif setting in properties:
                complaint = schema_problem(properties[setting], setting_value)
                if complaint:
                    problems.append(ConfigProblem(setting_where, complaint))
                else:
                    given.setdefault(key, {})[setting] = setting_value
            else:
                problems.append(
                    ConfigProblem(
                        setting_where, _unknown(setting, [ENFORCEMENT_LEVEL, *properties], "setting")
                    )
                )
    if problems:
        raise ConfigError(problems)
    return {
        rule.name: RuleSettings(
            level=levels.get(rule.name, levels.get(ALL, rule.level)),
            config={
                **{key: schema["default"] for key, schema in rule.settings.items() if "default" in schema},
                **given.get(rule.name, {}),
            },
        )
        for rule in rules
    }


SUPPORTED_SCHEMA_KEYWORDS: Final = frozenset(
    {"type", "items", "enum", "minimum", "maximum", "default", "description"}
)
"""The JSON-schema keywords the rules' settings use: each has its own wording below."""
_TYPE_NAMES: Final = {
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "array": "an array",
    "object": "an object",
}
_KEYWORD_ORDER: Final = ("type", "enum", "minimum", "maximum")
"""Which problem of one value is told first (a value of the wrong type is not also out of range)."""


def schema_problem(schema: Mapping[str, Any], value: object) -> str | None:
    """Why ``value`` does not fit ``schema`` (a rule setting's JSON schema), in our wording, or None."""
    errors = list(Draft202012Validator(schema).iter_errors(value))
    if not errors:
        return None
    first = min(errors, key=lambda error: (len(error.absolute_path), _rank(error.validator)))
    where = "".join(f"item {part} " for part in first.absolute_path)
    return where + _wording(first)


def _rank(keyword: object) -> int:
    return _KEYWORD_ORDER.index(str(keyword)) if keyword in _KEYWORD_ORDER else len(_KEYWORD_ORDER)


def _wording(error: ValidationError) -> str:
    found = _json(error.instance)
    if error.validator == "type":
        expected = str(error.validator_value)
        return f"must be {_TYPE_NAMES.get(expected, expected)}, not {found}"
    if error.validator == "enum":
        return f"{found} is not one of {', '.join(_json(item) for item in error.validator_value)}"
    if error.validator == "minimum":
        return f"{found} is below the minimum {error.validator_value}"
    if error.validator == "maximum":
        return f"{found} is above the maximum {error.validator_value}"
    return str(error.message)


def _json(value: object) -> str:
    return json.dumps(value)


def _unknown(key: str, allowed: Sequence[str], what: str) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"known: {', '.join(allowed)}"
    return f"unknown {what} '{key}'; {hint}"


# --------------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------------


def evaluate(
    resources: Sequence[WireResource],
    settings: Mapping[str, RuleSettings] | None = None,
    *,
    stack: str = "dev",
    rules: Sequence[Rule] = RULES,
) -> list[Violation]:
    """Every violation of ``rules`` in ``resources``: resource rules per resource (in order), then
    stack rules. Disabled rules do not run."""
    chosen = settings if settings is not None else default_settings(rules)
    by_urn = {resource.urn: resource for resource in resources if resource.urn}
    found: list[Violation] = []
    active = [(rule, chosen[rule.name]) for rule in rules if chosen[rule.name].level is not Level.DISABLED]
    for resource in resources:
        for rule, rule_settings in active:
            if isinstance(rule, ResourceRule):
                args = OfflineResourceArgs(resource=resource, config=rule_settings.config)
                rule.validate(args, _reporter(found, rule, rule_settings, by_urn, resource, stack))
    for rule, rule_settings in active:
        if not isinstance(rule, ResourceRule):
            stack_args = OfflineStackArgs(resources=resources, config=rule_settings.config)
            rule.validate(stack_args, _reporter(found, rule, rule_settings, by_urn, None, stack))
    return found


def blocking(violations: Sequence[Violation]) -> bool:
    return any(violation.level.blocks for violation in violations)


def _reporter(
    found: list[Violation],
    rule: Rule,
    settings: RuleSettings,
    by_urn: Mapping[str, WireResource],
    resource: WireResource | None,
    stack: str,
) -> Report:
    level = Level.MANDATORY if settings.level.blocks else Level.ADVISORY

    def report(message: str, urn: str | None = None) -> None:
        target = by_urn.get(urn) if urn else resource
        resource_type, name = (
            (target.resource_type, target.name)
            if target is not None
            else (STACK_TYPE, f"{c.PROJECT_NAME}-{stack}")
        )
        found.append(Violation(rule.name, level, resource_type, name, message, target.urn if target else ""))

    return report
