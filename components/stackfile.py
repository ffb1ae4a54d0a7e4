"""Read stack config the way the Pulumi CLI would hand it to the program, without the Pulumi CLI.

``Pulumi.yaml`` may declare config defaults (``config: {flyte-apps:project: {default: x}}`` or the
short, project-local form ``project: x``); ``Pulumi.<stack>.yaml`` holds the stack's values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import yaml

from components.constants import PROJECT_NAME
from components.errors import ConfigError, ConfigProblem

PROJECT_FILE = "Pulumi.yaml"
YAML_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""PyYAML's safe loader, through libyaml when PyYAML has it (large stacks load several times faster)."""


def stack_file(project_dir: Path, stack: str) -> Path:
    return project_dir / f"Pulumi.{stack}.yaml"


def read_stack_config(
    *, project_dir: Path, stack: str | None = None, config_file: Path | None = None
) -> dict[str, Any]:
    """Config keys (``namespace:key``) to values: project defaults, then the stack file on top."""
    values: dict[str, Any] = {}
    project_path = project_dir / PROJECT_FILE
    if project_path.exists():
        project = _load_yaml(project_path)
        for key, declared in (project.get("config") or {}).items():
            value = declared.get("default", declared.get("value")) if isinstance(declared, dict) else declared
            if isinstance(declared, dict) and "default" not in declared and "value" not in declared:
                continue
            values[key if ":" in key else f"{PROJECT_NAME}:{key}"] = value
    path = config_file if config_file is not None else stack_file(project_dir, stack or "dev")
    if not path.exists():
        raise ConfigError([ConfigProblem(str(path), "stack config file not found")])
    stack_values = _load_yaml(path).get("config") or {}
    if not isinstance(stack_values, dict):
        raise ConfigError([ConfigProblem(f"{path}: config", "must be a map of config keys")])
    for key, value in stack_values.items():
        values[key if ":" in key else f"{PROJECT_NAME}:{key}"] = value
    return values


def _load_yaml(path: Path) -> dict[str, Any]:
    try:
        loaded = yaml.load(path.read_text(encoding="utf-8"), Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        raise ConfigError([ConfigProblem(str(path), f"is not valid YAML: {exc}")]) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError([ConfigProblem(str(path), "must be a YAML map")])
    return loaded
