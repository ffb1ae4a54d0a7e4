"""Reading a project's ``Pulumi.yaml`` and ``Pulumi.<stack>.yaml`` from disk (the parsing is pure, in
``flyte_apps.core.stackfile``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.stackfile import (
    PROJECT_FILE,
    parse_yaml_map,
    project_defaults,
    stack_file_name,
    stack_values,
)

DEFAULT_STACK = "dev"


def read_stack_config(
    *, project_dir: Path, stack: str | None = None, config_file: Path | None = None
) -> dict[str, Any]:
    """Config keys (``namespace:key``) to values: project defaults, then the stack file on top."""
    values: dict[str, Any] = {}
    project_path = project_dir / PROJECT_FILE
    if project_path.exists():
        values.update(project_defaults(_read_map(project_path)))
    path = config_file if config_file is not None else project_dir / stack_file_name(stack or DEFAULT_STACK)
    if not path.exists():
        raise ConfigError([ConfigProblem(str(path), "stack config file not found")])
    values.update(stack_values(_read_map(path), str(path)))
    return values


def _read_map(path: Path) -> dict[str, Any]:
    return parse_yaml_map(path.read_text(encoding="utf-8"), str(path))
