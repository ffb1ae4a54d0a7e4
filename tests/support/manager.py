"""Flyte manager objects built the way the stack builds them, for the component and policy tests."""

from __future__ import annotations

from typing import Any, Final

from flyte_apps.core.config.models import PlatformConfig
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.manager.load import load_manager_config
from flyte_apps.core.manager.objects import build_manager_objects
from flyte_apps.core.objects import RenderedObject
from flyte_apps.core.stack import load_stack_config

MANAGER_IMAGE: Final = "ghcr.io/flyteorg/flyte:v2.0.0"
POSTGRES: Final = {
    "type": "postgres",
    "host": "db",
    "dbname": "flyte",
    "username": "flyte",
    "passwordSecret": {"name": "db", "key": "pw"},
}
"""A valid ``manager.database`` on PostgreSQL."""


def platform(**settings: Any) -> PlatformConfig:
    """The ``flyte-apps:platform`` section loaded from ``settings`` (camelCase keys)."""
    return load_stack_config({"flyte-apps:platform": settings}).platform


def manager_objects(raw: dict[str, Any] | None = None, **settings: Any) -> list[RenderedObject]:
    """The manager's objects for ``manager`` config ``raw`` (image preset) on platform ``settings``."""
    on = platform(**settings)
    problems: list[ConfigProblem] = []
    loaded = load_manager_config({"image": MANAGER_IMAGE, **(raw or {})}, on, problems)
    assert loaded is not None, problems
    return build_manager_objects(loaded, on)
