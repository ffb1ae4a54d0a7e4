"""Stack config the way the Pulumi CLI would hand it to the program, from the text of the project and
stack files (reading the files is the caller's job: ``flyte_apps.cli.stackfile``).

``Pulumi.yaml`` may declare config defaults (``config: {flyte-apps:project: {default: x}}`` or the
short, project-local form ``project: x``); ``Pulumi.<stack>.yaml`` holds the stack's values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import yaml

from flyte_apps.core.constants import PROJECT_NAME
from flyte_apps.core.errors import ConfigError, ConfigProblem

PROJECT_FILE: Final = "Pulumi.yaml"
YAML_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""PyYAML's safe loader, through libyaml when PyYAML has it (large stacks load several times faster)."""


def stack_file_name(stack: str) -> str:
    return f"Pulumi.{stack}.yaml"


def parse_yaml_map(text: str, source: str) -> dict[str, Any]:
    """A YAML document that must be a map (an empty document is an empty map)."""
    try:
        loaded = yaml.load(text, Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        raise ConfigError([ConfigProblem(source, f"is not valid YAML: {exc}")]) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError([ConfigProblem(source, "must be a YAML map")])
    return loaded


def project_defaults(project: Mapping[str, Any]) -> dict[str, Any]:
    """Config defaults declared in ``Pulumi.yaml``, by full key (``namespace:key``)."""
    values: dict[str, Any] = {}
    for key, declared in (project.get("config") or {}).items():
        if isinstance(declared, dict) and "default" not in declared and "value" not in declared:
            continue
        value = declared.get("default", declared.get("value")) if isinstance(declared, dict) else declared
        values[key if ":" in key else f"{PROJECT_NAME}:{key}"] = value
    return values


def stack_values(stack: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The ``config:`` map of a stack file, by full key (``namespace:key``)."""
    config = stack.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError([ConfigProblem(f"{source}: config", "must be a map of config keys")])
    return {key if ":" in key else f"{PROJECT_NAME}:{key}": value for key, value in config.items()}
