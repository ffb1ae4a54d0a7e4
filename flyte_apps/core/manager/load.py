"""Loading ``flyte-apps:manager``: the block is validated (``models``) and checked, every problem
collected with its key path, like the rest of the stack config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from flyte_apps.core import bounds
from flyte_apps.core.config.keys import KEY_MANAGER, PREFIX
from flyte_apps.core.config.kit import validate_model
from flyte_apps.core.config.models import PlatformConfig
from flyte_apps.core.config.names import DNS1123_SUBDOMAIN, MAX_SUBDOMAIN_LEN
from flyte_apps.core.config.node_rules import (
    image_problems,
    node_selector_problems,
    request_limit_problems,
    toleration_problems,
)
from flyte_apps.core.config.pod_paths import suffix
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.manager.config_file import PLACEMENT_KEYS, generated_config, gpu_placement_config
from flyte_apps.core.manager.layout import PORT_KEYS
from flyte_apps.core.manager.models import Database, ManagerConfig, ManagerInput, ManagerPorts

# extraConfig may change these generated keys; every other generated key is something the manager's
# objects (Services, probes, mounts) or the apps' KServices depend on.
EXTRA_CONFIG_OVERRIDABLE: Final = (("webhook", "localCert"), ("webhook", "certDir"))


def load_manager_config(
    raw: object, platform: PlatformConfig | None, problems: list[ConfigProblem]
) -> ManagerConfig | None:
    """Validate ``flyte-apps:manager`` (``raw`` is None when the key is absent), appending problems.

    Returns None when the key is absent, ``enabled: false``, invalid, or ``platform`` is None (an
    invalid platform, whose problems are reported where it is loaded). A disabled block is still
    checked for structure, so a misspelled key is reported before someone enables it.
    """
    if raw is None:
        return None
    path = PREFIX + KEY_MANAGER
    manager = validate_model(ManagerInput, raw, path, problems)
    if manager is None or not manager.enabled:
        return None
    before = len(problems)
    image = manager.image.strip() if manager.image else ""
    if not image:
        problems.append(ConfigProblem(f"{path}.image", "is required when the manager is enabled"))
    problems.extend(image_problems(image, f"{path}.image"))
    problems.extend(node_selector_problems(manager.node_selector, f"{path}.nodeSelector"))
    tolerations = [
        toleration.model_dump(by_alias=True, exclude_none=True) for toleration in manager.tolerations
    ]
    problems.extend(toleration_problems(tolerations, f"{path}.tolerations"))
    resources = manager.resources.model_dump(by_alias=True, exclude_none=True)
    problems.extend(request_limit_problems({"resources": resources}, lambda place: f"{path}{suffix(place)}"))
    problems.extend(_database_problems(manager, path))
    problems.extend(_duplicate_port_problems(manager.ports, f"{path}.ports"))
    if platform is not None:
        problems.extend(_extra_config_problems(manager, platform, f"{path}.extraConfig"))
    if len(problems) > before or platform is None:
        return None
    return ManagerConfig(input=manager, image=image)


def _database_problems(manager: ManagerInput, path: str) -> list[ConfigProblem]:
    database = manager.database
    db_path = f"{path}.database"
    given = {Database.model_fields[name].alias or name for name in database.model_fields_set}
    found: list[ConfigProblem] = []
    if database.type == "sqlite":
        if manager.replicas > 1:
            found.append(
                ConfigProblem(
                    f"{path}.replicas",
                    f"{manager.replicas} replicas cannot share one SQLite file (SQLite has one "
                    "writer); use 1 replica, or a postgres database",
                )
            )
        for key in sorted(given & {"host", "port", "dbname", "username", "passwordSecret"}):
            found.append(ConfigProblem(f"{db_path}.{key}", "applies only to a postgres database"))
        return found
    if "storage" in given:
        found.append(ConfigProblem(f"{db_path}.storage", "applies only to a sqlite database"))
    required = {
        "host": database.host,
        "dbname": database.dbname,
        "username": database.username,
        "passwordSecret": database.password_secret,
    }
    for key, value in required.items():
        if not value:
            found.append(ConfigProblem(f"{db_path}.{key}", "is required for a postgres database"))
    secret = database.password_secret
    if secret is not None:
        if len(secret.name) > MAX_SUBDOMAIN_LEN or not DNS1123_SUBDOMAIN.fullmatch(secret.name):
            found.append(
                ConfigProblem(
                    f"{db_path}.passwordSecret.name",
                    f"{bounds.shown(secret.name)} is not a valid Kubernetes Secret name",
                )
            )
        if not secret.key or not all(ch.isalnum() or ch in "-._" for ch in secret.key):
            found.append(
                ConfigProblem(
                    f"{db_path}.passwordSecret.key",
                    f"{bounds.shown(secret.key)} is not a valid Secret key "
                    "(letters, digits, '-', '_' or '.')",
                )
            )
    return found


def _duplicate_port_problems(ports: ManagerPorts, path: str) -> list[ConfigProblem]:
    found: list[ConfigProblem] = []
    seen: dict[int, str] = {}
    for key in PORT_KEYS:
        port = getattr(ports, key)
        if port in seen:
            found.append(ConfigProblem(f"{path}.{key}", f"port {port} is already used by ports.{seen[port]}"))
        else:
            seen[port] = key
    return found


def _extra_config_problems(manager: ManagerInput, platform: PlatformConfig, path: str) -> list[ConfigProblem]:
    """extraConfig must not silently change a value the manager's objects or the apps depend on
    (a port the Services and probes use, the namespace, the database, an ``internalApps`` setting
    the KServices were rendered with)."""
    found: list[ConfigProblem] = []

    def walk(extra: Mapping[str, Any], generated: Mapping[str, Any], keys: tuple[str, ...]) -> None:
        for key, value in extra.items():
            here = (*keys, str(key))
            if key not in generated or here in EXTRA_CONFIG_OVERRIDABLE:
                continue
            current = generated[key]
            if isinstance(current, dict) and isinstance(value, dict):
                walk(value, current, here)
            elif value != current:
                shown = "section" if isinstance(current, dict) else f"value {bounds.shown(current)}"
                found.append(
                    ConfigProblem(
                        f"{path}.{'.'.join(here)}",
                        f"would override the generated {shown}; set it through the "
                        f"{PREFIX}{KEY_MANAGER} or {PREFIX}platform settings instead",
                    )
                )

    walk(manager.extra_config, generated_config(manager, platform), ())
    plugins = manager.extra_config.get("plugins")
    k8s = plugins.get("k8s") if isinstance(plugins, Mapping) else None
    generated = gpu_placement_config(platform)
    for key in sorted(k8s or {}):
        if key in PLACEMENT_KEYS and key not in generated:
            found.append(
                ConfigProblem(
                    f"{path}.plugins.k8s.{key}",
                    "would place tasks where apps are not placed; set "
                    f"{PREFIX}platform.{PLACEMENT_KEYS[key]} instead (the apps and this config both get it)",
                )
            )
    return found
