"""The whole stack config in one pass: ``load_stack_config`` is the only place raw config is read.

It checks every section (platform, apps, manager, Knative settings) and raises one ``ConfigError``
that lists every problem with its key path, so nothing is applied when anything is wrong (decision 8
in DESIGN.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flyte_apps.core.config.domain_rules import custom_host_problems
from flyte_apps.core.config.keys import (
    KEY_APP_FILES,
    KEY_APPS,
    KEY_DOMAIN,
    KEY_KNATIVE,
    KEY_MANAGER,
    KEY_PLATFORM,
    KEY_PROJECT,
    PREFIX,
    TOP_LEVEL_KEYS,
)
from flyte_apps.core.config.kit import unknown_key_message
from flyte_apps.core.config.load import (
    INVALID_DEFAULT,
    claimed_identity,
    default_name,
    is_within,
    load_app,
    load_platform,
    redact_secure,
)
from flyte_apps.core.config.models import AppConfig, AppId, PlatformConfig
from flyte_apps.core.config.rules import cross_app_problems
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.knative_settings import (
    KNATIVE_NAMESPACE,
    KnativeConfig,
    knative_namespace,
    load_knative_config,
)
from flyte_apps.core.pod_schema import PodSpecSchemas

if TYPE_CHECKING:
    from flyte_apps.core.manager.models import ManagerConfig


@dataclass(frozen=True)
class StackConfig:
    """A validated stack config: every section, none with a problem."""

    platform: PlatformConfig
    apps: tuple[AppConfig, ...]
    manager: ManagerConfig | None = None
    """The Flyte manager, when ``flyte-apps:manager`` enables it."""
    knative: KnativeConfig | None = None
    """Knative Serving settings, when ``flyte-apps:knative.manageConfig`` is true."""
    knative_namespace: str = KNATIVE_NAMESPACE
    """Where Knative Serving runs, whether or not this program manages its settings."""


def load_stack_config(raw: Mapping[str, Any], *, app_paths: Sequence[str] | None = None) -> StackConfig:
    """Validate ``raw`` (config keys with or without the ``flyte-apps:`` prefix) in one pass.

    Raises ``ConfigError`` listing every problem; returns only a config with none.
    """
    problems: list[ConfigProblem] = []
    config = gather_stack_config(raw, problems, app_paths=app_paths)
    if problems or config is None:
        raise ConfigError(problems)
    return config


def gather_stack_config(
    raw: Mapping[str, Any], problems: list[ConfigProblem], *, app_paths: Sequence[str] | None = None
) -> StackConfig | None:
    """Validate every section of ``raw``, appending every problem to ``problems``; ``app_paths`` names
    each app when apps files were appended to ``apps`` (``StackInput.app_paths``).

    Returns the platform and the apps that have no problem of their own, so that later stages
    (specs, object limits) can check those too in the same pass; None when the platform settings
    cannot be read at all. A caller must treat any appended problem as fatal."""
    values: dict[str, Any] = {}
    for key, value in raw.items():
        local = key.removeprefix(PREFIX)
        if ":" in local:
            continue  # another namespace, e.g. kubernetes:context
        if local == KEY_APP_FILES:
            # Read from disk by the stack's readers (flyte_apps.core.appfiles), never here: planning
            # without them would drop their apps.
            problems.append(ConfigProblem(PREFIX + local, "apps files are not read by this reader"))
            continue
        if local not in TOP_LEVEL_KEYS:
            known = (*TOP_LEVEL_KEYS, KEY_APP_FILES)
            problems.append(ConfigProblem(PREFIX + local, unknown_key_message(local, known)))
            continue
        values[local] = value
    values, secure = redact_secure(values)

    platform = load_platform(values.get(KEY_PLATFORM), problems)
    defaults: dict[str, str | None] = {
        key: INVALID_DEFAULT
        if any(p.path == PREFIX + key for p in secure)
        else default_name(values.get(key), key, problems)
        for key in (KEY_PROJECT, KEY_DOMAIN)
    }
    apps_raw = values.get(KEY_APPS, [])
    apps: list[AppConfig] = []
    if apps_raw is None:
        apps_raw = []
    if not isinstance(apps_raw, list):
        problems.append(
            ConfigProblem(PREFIX + KEY_APPS, f"must be a list of apps, not {type(apps_raw).__name__}")
        )
        apps_raw = []
    schemas = PodSpecSchemas()  # built on first use, then shared by every app of this pass
    claimed: list[tuple[AppId, str]] = []
    if app_paths is not None and len(app_paths) != len(apps_raw):
        msg = f"{len(app_paths)} app paths for {len(apps_raw)} apps"
        raise ValueError(msg)
    for index, app_raw in enumerate(apps_raw):
        path = app_paths[index] if app_paths is not None else f"{PREFIX}{KEY_APPS}[{index}]"
        app = load_app(app_raw, path, defaults, platform, problems, schemas)
        if app is not None:
            apps.append(app)
        identity = app.id if app is not None else claimed_identity(app_raw, defaults)
        if identity is not None:
            claimed.append((identity, path))
    problems.extend(cross_app_problems(claimed))
    if platform is not None:
        problems.extend(custom_host_problems(apps, platform))
    manager: ManagerConfig | None = None
    if values.get(KEY_MANAGER) is not None:
        # Imported only when used: the manager's models cost the program time and memory to load.
        from flyte_apps.core.manager.load import load_manager_config

        manager = load_manager_config(values[KEY_MANAGER], platform, problems)
    knative = load_knative_config(values.get(KEY_KNATIVE), problems)
    # A redacted secure value would also fail its own field's check: report the secure value only.
    problems[:] = [p for p in problems if not any(is_within(p.path, s.path) for s in secure)] + secure
    if platform is None:
        return None
    return StackConfig(
        platform=platform,
        apps=tuple(apps),
        manager=manager,
        knative=knative,
        knative_namespace=knative_namespace(values.get(KEY_KNATIVE)),
    )
