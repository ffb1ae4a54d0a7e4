"""The rules as pulumi-policy ``Policy`` objects, for ``policies/__main__.py`` (which only builds the
``PolicyPack``). The only module here that imports ``pulumi_policy``; it never constructs the pack."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ResourceValidationPolicy,
    StackValidationPolicy,
)

from flyte_apps.core import constants as c
from flyte_apps.policy.registry import RULES, ResourceRule, Rule

PACK_NAME: Final = c.PROJECT_NAME
PACK_DESCRIPTION: Final = (
    "flyte-apps: Flyte apps deployed as Knative Services stay valid, addressable by Flyte, private "
    "when stopped, pinned, bounded and free of plain-text credentials; the Flyte manager stays least "
    "privileged and single-writer on SQLite."
)


def build_policies(rules: Sequence[Rule] = RULES) -> list[Policy]:
    """One pulumi-policy ``Policy`` per rule, with its name, description, level and config schema."""
    policies: list[Policy] = []
    for rule in rules:
        schema = (
            PolicyConfigSchema(properties={k: dict(v) for k, v in rule.settings.items()})
            if rule.settings
            else None
        )
        level = EnforcementLevel(rule.level.value)
        if isinstance(rule, ResourceRule):
            policies.append(
                ResourceValidationPolicy(
                    name=rule.name,
                    description=rule.description,
                    validate=rule.validate,
                    enforcement_level=level,
                    config_schema=schema,
                )
            )
        else:
            policies.append(
                StackValidationPolicy(
                    name=rule.name,
                    description=rule.description,
                    validate=rule.validate,
                    enforcement_level=level,
                    config_schema=schema,
                )
            )
    return policies
