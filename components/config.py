"""The stack config: pydantic models of every ``flyte-apps:*`` key and the one pass that validates it.

``load_stack_config`` is the only place raw config is read. It checks the whole config and raises one
``ConfigError`` that lists every problem with its key path, so nothing is applied when anything is
wrong (decision 8 in DESIGN.md). Structure and single values are checked by pydantic; rules that
span fields or apps (env names, identities, KService names, timeouts against the platform) by the
functions below, which know the exact path of what they check.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from components import constants as c
from components.durations import NANOS_PER_SECOND, DurationSyntaxError, format_duration, parse_duration
from components.errors import ConfigError, ConfigProblem
from components.naming import kservice_name
from components.quantities import is_negative_quantity, is_quantity

if TYPE_CHECKING:
    from components.manager import KnativeConfig, ManagerConfig

PREFIX: Final = f"{c.PROJECT_NAME}:"
KEY_PLATFORM: Final = "platform"
KEY_PROJECT: Final = "project"
KEY_DOMAIN: Final = "domain"
KEY_APPS: Final = "apps"
KEY_MANAGER: Final = "manager"
KEY_KNATIVE: Final = "knative"
TOP_LEVEL_KEYS: Final = (KEY_PLATFORM, KEY_PROJECT, KEY_DOMAIN, KEY_APPS, KEY_MANAGER, KEY_KNATIVE)

MAX_PROTO_REQUEST_TIMEOUT_S: Final = 3600  # flyteidl2.app.TimeoutConfig.request_timeout <= 3600s
MIN_REQUEST_TIMEOUT_S: Final = 1
MIN_SCALEDOWN_PERIOD_S: Final = 6  # Knative's autoscaling window bounds
MAX_SCALEDOWN_PERIOD_S: Final = 3600
MAX_PORT: Final = 65535
KNATIVE_PORT_NAMES: Final = ("", "http1", "h2c")  # Knative admission accepts only these port names
KNATIVE_RESERVED_PORTS: Final = (8012, 8013, 8022, 9090, 9091)  # used by Knative's queue-proxy

DNS1123_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL: Final = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE: Final = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
FLYTE_APP_NAME: Final = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,28}[A-Za-z0-9])?$")  # proto: 1..30 chars
ENV_VAR_NAME: Final = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")  # Kubernetes' classic IsEnvVarName
MAX_LABEL_LEN: Final = 63
MAX_UINT32: Final = 2**32 - 1  # replica bounds and targets are uint32 in Flyte's spec
INVALID_DEFAULT: Final = "\x00invalid"
"""Stands for a project/domain default that was itself reported as invalid."""
MAX_SUBDOMAIN_LEN: Final = 253


# --------------------------------------------------------------------------------------------------
# Value types
# --------------------------------------------------------------------------------------------------


ERROR_DURATION: Final = "duration"
ERROR_QUANTITY: Final = "quantity"
ERROR_ENV: Final = "env"
GO_DURATION_HINT: Final = "write it like 90s, 5m or 1h30m"


def _value_error(kind: str, detail: str, /) -> PydanticCustomError:
    """A pydantic error whose message is ``detail`` verbatim (our messages are complete sentences)."""
    return PydanticCustomError(kind, "{detail}", {"detail": detail})


def _go_duration(value: object) -> int:
    """Accept a Go duration string and return nanoseconds; a bare number is ambiguous, so refuse it."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise _value_error(ERROR_DURATION, f"{value!r} is not a Go duration string ({GO_DURATION_HINT})")
    try:
        return parse_duration(value)
    except DurationSyntaxError:
        raise _value_error(ERROR_DURATION, f"'{value}' is not a Go duration ({GO_DURATION_HINT})") from None


def _quantity(value: object) -> str:
    """Accept a Kubernetes quantity (``500m``, ``1Gi``); numbers from YAML are taken as their text."""
    text = str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
    if not isinstance(text, str) or not is_quantity(text):
        raise _value_error(ERROR_QUANTITY, f"'{value}' is not a Kubernetes quantity")
    if is_negative_quantity(text):
        raise _value_error(ERROR_QUANTITY, f"'{value}' is negative; resources must be >= 0")
    return text


def _env_source(value: object) -> object:
    """An env block is a map ``NAME: value`` or a list; its entries are checked by ``resolve_env``."""
    if value is None or isinstance(value, dict | list):
        return value
    raise _value_error(
        ERROR_ENV, f"must be a map of NAME: value or a list of name/value items, not {value!r}"
    )


GoDuration = Annotated[int, BeforeValidator(_go_duration)]
Int = Annotated[int, Strict()]
"""An integer as YAML/JSON writes it: ``true`` or ``"8080"`` are mistakes, not numbers."""
Quantity = Annotated[str, BeforeValidator(_quantity)]
RawEnv = Annotated[Any, BeforeValidator(_env_source)]
ResourceName = Literal["cpu", "memory", "ephemeral-storage"]


class _Model(BaseModel):
    """Config models: camelCase keys as users write them, unknown keys rejected, immutable."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, frozen=True, populate_by_name=False)


M = TypeVar("M", bound=_Model)


# --------------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------------


class Platform(_Model):
    """Flyte's ``internalApps`` settings plus how this program manages the namespace."""

    namespace: str = "flyte"
    base_domain: str = ""
    scheme: Literal["http", "https"] = "https"
    ingress_apps_port: Int = Field(default=0, ge=0, le=MAX_PORT)
    default_request_timeout: GoDuration = 300 * NANOS_PER_SECOND
    max_request_timeout: GoDuration = 3600 * NANOS_PER_SECOND
    namespaced_name_suffix_template: str = c.DEFAULT_SUFFIX_TEMPLATE
    default_env_vars: RawEnv = None
    default_service_account: str = ""
    watch_buffer_size: Int = Field(default=100, ge=1)
    adopt_namespace: bool = False
    retain_namespace: bool = True
    render_yaml_to_directory: str = ""
    reaper_timeout: GoDuration = 30 * NANOS_PER_SECOND


class Port(_Model):
    container_port: Int = Field(ge=1, le=MAX_PORT)
    name: str = ""


class Resources(_Model):
    requests: dict[ResourceName, Quantity] = Field(default_factory=dict)
    limits: dict[ResourceName, Quantity] = Field(default_factory=dict)


class Container(_Model):
    image: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: RawEnv = None
    ports: tuple[Port, ...] = ()
    resources: Resources | None = None


class Autoscaling(_Model):
    min_replicas: Int | None = Field(default=None, ge=0, le=MAX_UINT32)
    max_replicas: Int | None = Field(default=None, ge=0, le=MAX_UINT32)
    metric: Literal["concurrency", "rps"] | None = None
    target: Int | None = Field(default=None, le=MAX_UINT32)
    scaledown_period: GoDuration | None = None


class Timeouts(_Model):
    request: GoDuration | None = None


class SecretInput(_Model):
    """A Flyte secret the pod webhook injects: ``security_context.secrets`` of the app spec."""

    group: str = ""
    key: str
    group_version: str = ""
    mount_requirement: Literal["ANY", "ENV_VAR", "FILE"] = "ANY"
    env_var: str = ""


class AppInput(_Model):
    """One app as written under ``flyte-apps:apps``."""

    name: str
    project: str | None = None
    domain: str | None = None
    org: str = ""
    container: Container
    autoscaling: Autoscaling | None = None
    timeouts: Timeouts | None = None
    service_account: str | None = None
    visibility: Literal["public", "cluster-local"] = "public"
    stopped: bool = False
    secrets: tuple[SecretInput, ...] = ()


# --------------------------------------------------------------------------------------------------
# Validated results
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str


@dataclass(frozen=True)
class AppId:
    org: str
    project: str
    domain: str
    name: str

    def __str__(self) -> str:
        return f"{self.project}/{self.domain}/{self.name}"


@dataclass(frozen=True)
class AppConfig:
    """A validated app: its input, resolved identity, env in render order and config key path."""

    input: AppInput
    id: AppId
    env: tuple[EnvVar, ...]
    path: str

    @property
    def public(self) -> bool:
        return self.input.visibility == "public"


@dataclass(frozen=True)
class PlatformConfig:
    settings: Platform
    default_env: tuple[EnvVar, ...]
    valid: bool = True
    """False when a setting failed a cross-field check; its values still serve to check the apps."""


@dataclass(frozen=True)
class StackConfig:
    platform: PlatformConfig
    apps: tuple[AppConfig, ...]
    manager: ManagerConfig | None = None
    """The Flyte manager, when ``flyte-apps:manager`` enables it."""
    knative: KnativeConfig | None = None
    """Knative Serving settings, when ``flyte-apps:knative.manageConfig`` is true."""


# --------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------


def load_stack_config(raw: Mapping[str, Any]) -> StackConfig:
    """Validate ``raw`` (config keys with or without the ``flyte-apps:`` prefix) in one pass.

    Raises ``ConfigError`` listing every problem; returns only a config with none.
    """
    problems: list[ConfigProblem] = []
    values: dict[str, Any] = {}
    for key, value in raw.items():
        local = key.removeprefix(PREFIX)
        if ":" in local:
            continue  # another namespace, e.g. kubernetes:context
        if local not in TOP_LEVEL_KEYS:
            problems.append(ConfigProblem(PREFIX + local, _unknown_key_message(local, TOP_LEVEL_KEYS)))
            continue
        values[local] = value
    secure = find_secure_values(values)
    values = {key: _without_secure(value) for key, value in values.items()}

    platform = _load_platform(values.get(KEY_PLATFORM), problems)
    defaults: dict[str, str | None] = {
        key: INVALID_DEFAULT
        if any(p.path == PREFIX + key for p in secure)
        else _default_name(values.get(key), key, problems)
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
    for index, app_raw in enumerate(apps_raw):
        app = _load_app(app_raw, f"{PREFIX}{KEY_APPS}[{index}]", defaults, platform, problems)
        if app is not None:
            apps.append(app)
    problems.extend(_cross_app_problems(apps))
    # The manager's models build on this module's, so they are imported here, not at the top.
    from components.manager import load_knative_config, load_manager_config

    manager = load_manager_config(values.get(KEY_MANAGER), platform, problems)
    knative = load_knative_config(values.get(KEY_KNATIVE), problems)
    # A redacted secure value would also fail its own field's check: report the secure value only.
    problems = [p for p in problems if not any(_within(p.path, s.path) for s in secure)] + secure
    if problems or platform is None or not platform.valid:
        raise ConfigError(problems)
    return StackConfig(platform=platform, apps=tuple(apps), manager=manager, knative=knative)


def _within(path: str, parent: str) -> bool:
    return path == parent or path.startswith((parent + ".", parent + "["))


def _without_secure(node: object) -> object:
    """A copy of ``node`` with every ``{secure: ...}`` value replaced by None (never echoed back)."""
    if isinstance(node, dict):
        if set(node) == {"secure"}:
            return None
        return {key: _without_secure(child) for key, child in node.items()}
    if isinstance(node, list):
        return [_without_secure(child) for child in node]
    return node


def find_secure_values(values: Mapping[str, Any], prefix: str = PREFIX) -> list[ConfigProblem]:
    """Encrypted (``secure:``) values are not supported under ``flyte-apps:``: app secrets use Flyte's
    secret store, so a ciphertext here is almost always a credential about to be put in plain sight."""
    found: list[ConfigProblem] = []

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            if set(node) == {"secure"}:
                found.append(ConfigProblem(path, "encrypted (secure:) values are not supported here"))
                return
            for key, child in node.items():
                walk(child, f"{path}.{key}")
        elif isinstance(node, list):
            for index, child in enumerate(node):
                walk(child, f"{path}[{index}]")

    for key, value in values.items():
        walk(value, prefix + key)
    return found


def _load_platform(raw: object, problems: list[ConfigProblem]) -> PlatformConfig | None:
    path = PREFIX + KEY_PLATFORM
    settings = _validate(Platform, {} if raw is None else raw, path, problems)
    if settings is None:
        return None
    before = len(problems)
    if not DNS1123_LABEL.match(settings.namespace) or len(settings.namespace) > MAX_LABEL_LEN:
        problems.append(ConfigProblem(f"{path}.namespace", _not_dns_label(settings.namespace, "DNS-1123")))
    if settings.base_domain and not _is_subdomain(settings.base_domain):
        problems.append(
            ConfigProblem(
                f"{path}.baseDomain",
                f"'{settings.base_domain}' is not a DNS subdomain (e.g. apps.example.com)",
            )
        )
    if settings.default_service_account and not _is_subdomain(settings.default_service_account):
        problems.append(
            ConfigProblem(
                f"{path}.defaultServiceAccount",
                f"'{settings.default_service_account}' is not a valid Kubernetes service account name",
            )
        )
    limit = MAX_PROTO_REQUEST_TIMEOUT_S * NANOS_PER_SECOND
    if settings.max_request_timeout > limit:
        problems.append(
            ConfigProblem(
                f"{path}.maxRequestTimeout",
                f"{format_duration(settings.max_request_timeout)} exceeds {format_duration(limit)}, "
                "the limit of Flyte's app spec (TimeoutConfig.request_timeout)",
            )
        )
    if settings.default_request_timeout < MIN_REQUEST_TIMEOUT_S * NANOS_PER_SECOND:
        problems.append(ConfigProblem(f"{path}.defaultRequestTimeout", "must be at least 1s"))
    elif settings.max_request_timeout < settings.default_request_timeout:
        problems.append(
            ConfigProblem(
                f"{path}.maxRequestTimeout",
                f"{format_duration(settings.max_request_timeout)} is below defaultRequestTimeout "
                f"{format_duration(settings.default_request_timeout)}",
            )
        )
    if settings.reaper_timeout <= 0:
        problems.append(ConfigProblem(f"{path}.reaperTimeout", "must be a positive duration"))
    default_env = resolve_env(
        settings.default_env_vars, f"{path}.defaultEnvVars", problems, upstream_list=True
    )
    return PlatformConfig(settings=settings, default_env=default_env, valid=len(problems) == before)


def _default_name(raw: object, key: str, problems: list[ConfigProblem]) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        problems.append(ConfigProblem(PREFIX + key, f"must be a string, not {type(raw).__name__}"))
        return INVALID_DEFAULT
    message = _label_value_problem(raw, key)
    if message:
        problems.append(ConfigProblem(PREFIX + key, message))
        return INVALID_DEFAULT
    return raw


def _load_app(
    raw: object,
    path: str,
    defaults: Mapping[str, str | None],
    platform: PlatformConfig | None,
    problems: list[ConfigProblem],
) -> AppConfig | None:
    app = _validate(AppInput, raw, path, problems)
    if app is None:
        return None
    before = len(problems)
    project = app.project if app.project is not None else defaults[KEY_PROJECT]
    domain = app.domain if app.domain is not None else defaults[KEY_DOMAIN]
    identity_ok = True
    for key, value, given in ((KEY_PROJECT, project, app.project), (KEY_DOMAIN, domain, app.domain)):
        if value is INVALID_DEFAULT:
            identity_ok = False  # already reported once, at the default's own key
        elif value is None:
            identity_ok = False
            problems.append(ConfigProblem(f"{path}.{key}", f"is required (no {PREFIX}{key} default is set)"))
        elif given is not None and (message := _label_value_problem(value, key)):
            identity_ok = False
            problems.append(ConfigProblem(f"{path}.{key}", message))
    if not FLYTE_APP_NAME.match(app.name):
        problems.append(
            ConfigProblem(
                f"{path}.name",
                f"'{app.name}' is not a valid Flyte app name: 1-30 letters, digits or '-', "
                "starting and ending with a letter or digit",
            )
        )
    elif identity_ok and project is not None and domain is not None:
        ksvc = kservice_name(project=project, domain=domain, name=app.name)
        if not DNS1035_LABEL.match(ksvc):
            problems.append(
                ConfigProblem(
                    f"{path}.name",
                    f"KService name '{ksvc}' is not a DNS-1035 label (it must start with a letter "
                    "and hold only lower-case letters, digits and '-'); Knative would reject it",
                )
            )
    container_path = f"{path}.container"
    if not app.container.image.strip():
        problems.append(ConfigProblem(f"{container_path}.image", "must not be empty"))
    env = resolve_env(app.container.env, f"{container_path}.env", problems, upstream_list=False)
    problems.extend(_port_problems(app.container.ports, f"{container_path}.ports"))
    if app.autoscaling is not None:
        problems.extend(_autoscaling_problems(app.autoscaling, f"{path}.autoscaling"))
    if app.timeouts is not None and app.timeouts.request is not None:
        problems.extend(_timeout_problems(app.timeouts.request, f"{path}.timeouts.request", platform))
    problems.extend(_secret_problems(app.secrets, env, f"{path}.secrets"))
    if app.service_account is not None and not _is_subdomain(app.service_account):
        problems.append(
            ConfigProblem(
                f"{path}.serviceAccount",
                f"'{app.service_account}' is not a valid Kubernetes service account name",
            )
        )
    if len(problems) > before or not identity_ok or project is None or domain is None:
        return None
    return AppConfig(
        input=app, id=AppId(org=app.org, project=project, domain=domain, name=app.name), env=env, path=path
    )


def resolve_env(
    raw: object, path: str, problems: list[ConfigProblem], *, upstream_list: bool
) -> tuple[EnvVar, ...]:
    """Turn an env block into ordered ``EnvVar``s.

    A map is taken in sorted key order (Pulumi hands structured config over as JSON and does not keep
    a YAML map's order); a list keeps its order. Lists hold ``{name, value}`` items, or (for the
    platform's ``defaultEnvVars``, as upstream's config does) single-key maps ``- NAME: value``.
    """
    entries: list[tuple[str, object, str, str]] = []  # name, value, path of the name, path of the value
    if raw is None:
        return ()
    if isinstance(raw, dict):
        entries = [
            (str(name), raw[name], f"{path}.{name}", f"{path}.{name}") for name in sorted(raw, key=str)
        ]
    elif isinstance(raw, list):
        for index, item in enumerate(raw):
            item_path = f"{path}[{index}]"
            if isinstance(item, dict) and set(item) == {"name", "value"}:
                if not isinstance(item["name"], str):
                    problems.append(
                        ConfigProblem(f"{item_path}.name", f"must be a string, not {item['name']!r}")
                    )
                    continue
                entries.append((item["name"], item["value"], f"{item_path}.name", f"{item_path}.value"))
            elif isinstance(item, dict) and set(item) == {"name"}:
                problems.append(ConfigProblem(f"{item_path}.value", "is required"))
            elif upstream_list and isinstance(item, dict) and len(item) == 1:
                name = next(iter(item))
                entries.append((str(name), item[name], f"{item_path}.{name}", f"{item_path}.{name}"))
            else:
                shape = "{name, value} or a single NAME: value" if upstream_list else "{name, value}"
                problems.append(ConfigProblem(item_path, f"must be {shape}, not {item!r}"))
    result: list[EnvVar] = []
    seen: dict[str, str] = {}
    for name, value, entry_path, value_path in entries:
        if not ENV_VAR_NAME.match(name):
            problems.append(
                ConfigProblem(
                    entry_path,
                    f"'{name}' is not a valid environment variable name "
                    "(letters, digits, '_', '-', '.'; not starting with a digit)",
                )
            )
            continue
        if name in c.INJECTED_ENV_VARS:
            problems.append(
                ConfigProblem(entry_path, f"'{name}' is set by Flyte for every app and cannot be overridden")
            )
            continue
        if name in seen:
            problems.append(
                ConfigProblem(entry_path, f"duplicate environment variable '{name}' (also at {seen[name]})")
            )
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            problems.append(ConfigProblem(value_path, f"value of '{name}' must be a string, not {value!r}"))
            continue
        seen[name] = entry_path
        result.append(EnvVar(name=name, value=str(value)))
    return tuple(result)


def _port_problems(ports: Sequence[Port], path: str) -> list[ConfigProblem]:
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
                    f"Knative accepts only the port names 'http1' and 'h2c' (or none), not '{port.name}'",
                )
            )
    if len(seen) > 1:
        found.append(ConfigProblem(path, "Knative allows at most one container port"))
    return found


def _secret_problems(secrets: Sequence[SecretInput], env: Sequence[EnvVar], path: str) -> list[ConfigProblem]:
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
        if not ENV_VAR_NAME.match(name):
            found.append(
                ConfigProblem(f"{where}.envVar", f"'{name}' is not a valid environment variable name")
            )
        elif name in c.INJECTED_ENV_VARS:
            found.append(ConfigProblem(f"{where}.envVar", f"'{name}' is set by Flyte for every app"))
        elif name in taken:
            found.append(
                ConfigProblem(
                    f"{where}.envVar", f"duplicate environment variable '{name}' (also in {taken[name]})"
                )
            )
        else:
            taken[name] = f"{where}.envVar"
    return found


def _autoscaling_problems(scaling: Autoscaling, path: str) -> list[ConfigProblem]:
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


def _timeout_problems(request: int, path: str, platform: PlatformConfig | None) -> list[ConfigProblem]:
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


def _cross_app_problems(apps: Sequence[AppConfig]) -> list[ConfigProblem]:
    """Identities must be unique, and so must KService names (upstream bug (j)1: a colliding app
    silently overwrites another app's KService)."""
    found: list[ConfigProblem] = []
    by_identity: dict[AppId, AppConfig] = {}
    by_name: dict[str, AppConfig] = {}
    for app in apps:
        first = by_identity.get(app.id)
        if first is not None:
            found.append(ConfigProblem(f"{app.path}.name", f"duplicate app {app.id} (also at {first.path})"))
            continue
        by_identity[app.id] = app
        name = kservice_name(project=app.id.project, domain=app.id.domain, name=app.id.name)
        other = by_name.get(name)
        if other is not None:
            found.append(
                ConfigProblem(
                    f"{app.path}.name",
                    f"app {app.id} and app {other.id} (at {other.path}) both map to KService name "
                    f"'{name}'; one would overwrite the other",
                )
            )
            continue
        by_name[name] = app
    return found


# --------------------------------------------------------------------------------------------------
# pydantic errors -> problems with key paths
# --------------------------------------------------------------------------------------------------


def _validate(model: type[M], raw: object, path: str, problems: list[ConfigProblem]) -> M | None:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            problems.append(_problem_from_error(model, path, error))
        return None


def _problem_from_error(model: type[_Model], path: str, error: Mapping[str, Any]) -> ConfigProblem:
    loc = [part for part in error["loc"] if part != "[key]"]
    where = path + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, loc[:-1])
        return ConfigProblem(where, _unknown_key_message(str(loc[-1]), allowed))
    if kind == "missing":
        return ConfigProblem(where, "is required")
    if kind == "model_type" or kind == "model_attributes_type":
        return ConfigProblem(where, f"must be a map of keys, not {error.get('input')!r}")
    message = str(error["msg"])
    if kind in {ERROR_DURATION, ERROR_QUANTITY, ERROR_ENV}:
        return ConfigProblem(where, message)
    return ConfigProblem(where, f"{message[:1].lower()}{message[1:]} (got {error.get('input')!r})")


def _allowed_keys(model: type[_Model], loc: Sequence[object]) -> tuple[str, ...]:
    """The keys a map at ``loc`` accepts, to suggest the closest one for a misspelled key."""
    current: object = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, _Model)):
            return ()
        fields = {info.alias or name: info for name, info in current.model_fields.items()}
        info = fields.get(str(part))
        if info is None:
            return ()
        current = _model_in(info.annotation)
    if isinstance(current, type) and issubclass(current, _Model):
        return tuple(info.alias or name for name, info in current.model_fields.items())
    return ()


def _model_in(annotation: object) -> object:
    """The config model inside ``Foo | None`` or ``tuple[Foo, ...]``, if any."""
    if isinstance(annotation, type) and issubclass(annotation, _Model):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, tuple, list):
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def _unknown_key_message(key: str, allowed: Iterable[str]) -> str:
    choices = list(allowed)
    close = difflib.get_close_matches(key, choices, n=1, cutoff=0.6)
    if close:
        return f"unknown key '{key}'; did you mean '{close[0]}'?"
    if choices:
        return f"unknown key '{key}'; valid keys: {', '.join(choices)}"
    return f"unknown key '{key}'"


def _label_value_problem(value: str, key: str) -> str | None:
    if not value:
        return f"{key} must not be empty"
    if len(value) > MAX_LABEL_LEN or not LABEL_VALUE.match(value):
        return (
            f"'{value}' is not a valid Kubernetes label value (at most 63 letters, digits, '-', '_' "
            "or '.', starting and ending with a letter or digit); Flyte labels the KService with it"
        )
    return None


def _is_subdomain(value: str) -> bool:
    return len(value) <= MAX_SUBDOMAIN_LEN and DNS1123_SUBDOMAIN.match(value) is not None


def _not_dns_label(value: str, kind: str) -> str:
    return f"'{value}' is not a {kind} label (lower-case letters, digits and '-', at most 63 characters)"
