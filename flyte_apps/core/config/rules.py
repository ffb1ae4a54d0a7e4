"""Rules that span fields or apps, each returning the problems it finds with their key paths: ports,
secrets, autoscaling, timeouts against the platform, and identities and KService names across apps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import shown
from flyte_apps.core.config.keys import PREFIX
from flyte_apps.core.config.models import (
    AppId,
    Autoscaling,
    EnvVar,
    PlatformConfig,
    Port,
    SecretInput,
)
from flyte_apps.core.config.names import is_env_var_name
from flyte_apps.core.durations import NANOS_PER_SECOND, format_duration
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.naming import kservice_name

MAX_PROTO_REQUEST_TIMEOUT_S: Final = 3600  # flyteidl2.app.TimeoutConfig.request_timeout <= 3600s
MIN_REQUEST_TIMEOUT_S: Final = 1
MIN_SCALEDOWN_PERIOD_S: Final = 6  # Knative's autoscaling window bounds
MAX_SCALEDOWN_PERIOD_S: Final = 3600
MAX_REAPER_TIMEOUT_S: Final = 3600
"""platform.reaperTimeout: Knative settles in seconds to minutes; a longer bound only holds `pulumi up`."""
KNATIVE_PORT_NAMES: Final = ("", "http1", "h2c")  # Knative admission accepts only these port names
KNATIVE_RESERVED_PORTS: Final = (8012, 8013, 8022, 9090, 9091)  # used by Knative's queue-proxy


def port_problems(ports: Sequence[Port], path: str) -> list[ConfigProblem]:
    found: list[ConfigProblem] = []
    seen: dict[int, int] = {}
    for index, port in enumerate(ports):
        if port.container_port in seen:
            found.append(
                ConfigProblem(
                    f"{path}[{index}].containerPort",
                    f"duplicate port {port.container_port} (also at {path}[{seen[port.container_port]}])",
                )
            )
            continue
        seen[port.container_port] = index
        if port.container_port in KNATIVE_RESERVED_PORTS:
            found.append(
                ConfigProblem(
                    f"{path}[{index}].containerPort",
                    f"port {port.container_port} is reserved by Knative's queue-proxy "
                    f"({', '.join(map(str, KNATIVE_RESERVED_PORTS))})",
                )
            )
        if port.name not in KNATIVE_PORT_NAMES:
            found.append(
                ConfigProblem(
                    f"{path}[{index}].name",
                    "Knative accepts only the port names 'http1' and 'h2c' (or none), "
                    f"not {shown(port.name)}",
                )
            )
    if len(seen) > 1:
        found.append(ConfigProblem(path, "Knative allows at most one container port"))
    return found


def secret_problems(secrets: Sequence[SecretInput], env: Sequence[EnvVar], path: str) -> list[ConfigProblem]:
    """Each secret names a key; env vars it asks for are valid, unique and do not shadow others."""
    found: list[ConfigProblem] = []
    taken = {var.name: "the app's env" for var in env}
    for index, secret in enumerate(secrets):
        where = f"{path}[{index}]"
        if not secret.key.strip():
            found.append(ConfigProblem(f"{where}.key", "must not be empty"))
        name = secret.env_var
        if not name:
            continue
        if not is_env_var_name(name):
            found.append(
                ConfigProblem(f"{where}.envVar", f"{shown(name)} is not a valid environment variable name")
            )
        elif name in c.INJECTED_ENV_VARS:
            found.append(ConfigProblem(f"{where}.envVar", f"{shown(name)} is set by Flyte for every app"))
        elif name in taken:
            found.append(
                ConfigProblem(
                    f"{where}.envVar", f"duplicate environment variable {shown(name)} (also in {taken[name]})"
                )
            )
        else:
            taken[name] = f"{where}.envVar"
    return found


def autoscaling_problems(scaling: Autoscaling, path: str) -> list[ConfigProblem]:
    found: list[ConfigProblem] = []
    low, high = scaling.min_replicas, scaling.max_replicas
    if low is not None and high is not None and high > 0 and low > high:
        found.append(ConfigProblem(f"{path}.minReplicas", f"{low} is above maxReplicas {high}"))
    if scaling.target is not None and scaling.target <= 0:
        found.append(ConfigProblem(f"{path}.target", f"must be a positive number, not {scaling.target}"))
    if scaling.target is not None and scaling.metric is None:
        found.append(ConfigProblem(f"{path}.target", "needs a metric (concurrency or rps)"))
    if scaling.metric is not None and scaling.target is None:
        found.append(ConfigProblem(f"{path}.metric", "needs a positive target"))
    period = scaling.scaledown_period
    if period is not None and not (
        MIN_SCALEDOWN_PERIOD_S * NANOS_PER_SECOND <= period <= MAX_SCALEDOWN_PERIOD_S * NANOS_PER_SECOND
    ):
        found.append(
            ConfigProblem(
                f"{path}.scaledownPeriod",
                f"{format_duration(period)} is outside Knative's autoscaling window range 6s..1h",
            )
        )
    return found


def timeout_problems(request: int, path: str, platform: PlatformConfig | None) -> list[ConfigProblem]:
    if request < MIN_REQUEST_TIMEOUT_S * NANOS_PER_SECOND:
        return [ConfigProblem(path, f"{format_duration(request)} is below the minimum of 1s")]
    if platform is not None and request > platform.settings.max_request_timeout:
        limit = format_duration(platform.settings.max_request_timeout)
        return [
            ConfigProblem(
                path,
                f"{format_duration(request)} exceeds {PREFIX}platform.maxRequestTimeout ({limit}); "
                "upstream would silently cap it",
            )
        ]
    return []


def cross_app_problems(apps: Sequence[tuple[AppId, str]]) -> list[ConfigProblem]:
    """Identities must be unique, and so must KService names (upstream bug (j)1: a colliding app
    silently overwrites another app's KService). ``apps``: each entry's claimed identity and key path,
    also of entries with problems of their own, so a duplicate is reported beside them."""
    found: list[ConfigProblem] = []
    by_identity: dict[AppId, str] = {}
    by_name: dict[str, tuple[AppId, str]] = {}
    for identity, path in apps:
        first = by_identity.get(identity)
        if first is not None:
            found.append(ConfigProblem(f"{path}.name", f"duplicate app {identity} (also at {first})"))
            continue
        by_identity[identity] = path
        name = kservice_name(project=identity.project, domain=identity.domain, name=identity.name)
        other = by_name.get(name)
        if other is not None:
            found.append(
                ConfigProblem(
                    f"{path}.name",
                    f"app {identity} and app {other[0]} (at {other[1]}) both map to KService name "
                    f"'{name}'; one would overwrite the other",
                )
            )
            continue
        by_name[name] = (identity, path)
    return found
