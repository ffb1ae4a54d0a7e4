"""Loading the platform settings and the apps: each raw section is validated, its rules run, and every
problem is appended to the caller's list with its key path, so one pass finds them all."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import bounded, shown
from flyte_apps.core.config.accelerators import gpu_resource_name
from flyte_apps.core.config.domain_rules import ingress_problems
from flyte_apps.core.config.gpu_rules import gpu_platform_problems
from flyte_apps.core.config.keys import KEY_DOMAIN, KEY_PLATFORM, KEY_PROJECT, PREFIX
from flyte_apps.core.config.kit import valid_fields, validate_model
from flyte_apps.core.config.knative_rules import knative_revision_problems
from flyte_apps.core.config.models import (
    AppConfig,
    AppId,
    AppInput,
    Autoscaling,
    Container,
    EnvVar,
    KnativeRevision,
    Platform,
    PlatformConfig,
    Timeouts,
)
from flyte_apps.core.config.names import (
    DNS1035_LABEL,
    DNS1123_LABEL,
    FLYTE_APP_NAME,
    MAX_LABEL_LEN,
    is_env_var_name,
    is_subdomain,
    label_value_problem,
    not_dns_label,
)
from flyte_apps.core.config.node_rules import NUL, knative_reserved_env_message, nul_in_env_message
from flyte_apps.core.config.payload import build_payload
from flyte_apps.core.config.pod_rules import payload_part_problems, payload_problems
from flyte_apps.core.config.rules import (
    MAX_PROTO_REQUEST_TIMEOUT_S,
    MAX_REAPER_TIMEOUT_S,
    MIN_REQUEST_TIMEOUT_S,
    autoscaling_problems,
    port_problems,
    secret_problems,
    timeout_problems,
)
from flyte_apps.core.config.spec_rules import spec_field_problems
from flyte_apps.core.durations import NANOS_PER_SECOND, format_duration
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.naming import kservice_name
from flyte_apps.core.pod_schema import PodSpecSchemas

SECURE_KEY: Final = "secure"
INVALID_DEFAULT: Final = "\x00invalid"
"""Stands for a project/domain default that was itself reported as invalid."""


def is_within(path: str, parent: str) -> bool:
    return path == parent or path.startswith((parent + ".", parent + "["))


def _is_secure(node: dict[Any, Any]) -> bool:
    """``{secure: ...}``, Pulumi's encrypted value (tested without building a set: every node is)."""
    return len(node) == 1 and SECURE_KEY in node


PLAIN_TYPES: Final = frozenset({str, int, float, bool, type(None)})
"""Values that are never a dict or list: copied as they are without a call (every leaf of the config)."""


def _redacted(node: object, seen: list[bool]) -> object:
    """A copy of ``node`` with every ``{secure: ...}`` value replaced by None (never echoed back),
    appending to ``seen`` for each one it replaces."""
    if isinstance(node, dict):
        if _is_secure(node):
            seen.append(True)
            return None
        return {
            key: child if type(child) in PLAIN_TYPES else _redacted(child, seen)
            for key, child in node.items()
        }
    if isinstance(node, list):
        return [child if type(child) in PLAIN_TYPES else _redacted(child, seen) for child in node]
    return node


def redact_secure(
    values: Mapping[str, Any], prefix: str = PREFIX
) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """A copy of ``values`` with every ``{secure: ...}`` value replaced by None, and
    ``find_secure_values(values)``: the values are walked once, and again (to build the paths) only
    under the keys that hold one."""
    redacted: dict[str, Any] = {}
    with_secure: dict[str, Any] = {}
    for key, value in values.items():
        seen: list[bool] = []
        redacted[key] = _redacted(value, seen)
        if seen:
            with_secure[key] = value
    return redacted, find_secure_values(with_secure, prefix)


def find_secure_values(values: Mapping[str, Any], prefix: str = PREFIX) -> list[ConfigProblem]:
    """Encrypted (``secure:``) values are not supported under ``flyte-apps:``: app secrets use Flyte's
    secret store, so a ciphertext here is almost always a credential about to be put in plain sight."""
    found: list[ConfigProblem] = []

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            if _is_secure(node):
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


def load_platform(raw: object, problems: list[ConfigProblem]) -> PlatformConfig | None:
    """The platform settings, or None when pydantic rejects them; the cross-field rules run on every
    field that is valid on its own either way, so one pass reports everything."""
    path = PREFIX + KEY_PLATFORM
    raw = {} if raw is None else raw
    settings = validate_model(Platform, raw, path, problems)
    if settings is None:
        problems.extend(platform_problems(valid_fields(Platform, raw), path))
        return None
    before = len(problems)
    problems.extend(platform_problems(dict(settings), path))
    default_env = resolve_env(
        settings.default_env_vars, f"{path}.defaultEnvVars", problems, upstream_list=True
    )
    return PlatformConfig(settings=settings, default_env=default_env, valid=len(problems) == before)


def platform_problems(fields: Mapping[str, Any], path: str) -> list[ConfigProblem]:
    """Rules over the platform's fields (by field name); a field that is absent is not checked."""
    found: list[ConfigProblem] = []
    namespace = fields.get("namespace")
    if isinstance(namespace, str) and (
        not DNS1123_LABEL.fullmatch(namespace) or len(namespace) > MAX_LABEL_LEN
    ):
        found.append(ConfigProblem(f"{path}.namespace", bounded(not_dns_label(namespace, "DNS-1123"))))
    base_domain = fields.get("base_domain")
    if base_domain and not is_subdomain(base_domain):
        found.append(
            ConfigProblem(
                f"{path}.baseDomain", f"{shown(base_domain)} is not a DNS subdomain (e.g. apps.example.com)"
            )
        )
    account = fields.get("default_service_account")
    if account and not is_subdomain(account):
        found.append(
            ConfigProblem(
                f"{path}.defaultServiceAccount",
                f"{shown(account)} is not a valid Kubernetes service account name",
            )
        )
    limit = MAX_PROTO_REQUEST_TIMEOUT_S * NANOS_PER_SECOND
    maximum = fields.get("max_request_timeout")
    default = fields.get("default_request_timeout")
    if maximum is not None and maximum > limit:
        found.append(
            ConfigProblem(
                f"{path}.maxRequestTimeout",
                f"{format_duration(maximum)} exceeds {format_duration(limit)}, "
                "the limit of Flyte's app spec (TimeoutConfig.request_timeout)",
            )
        )
    if default is not None and default < MIN_REQUEST_TIMEOUT_S * NANOS_PER_SECOND:
        found.append(ConfigProblem(f"{path}.defaultRequestTimeout", "must be at least 1s"))
    elif default is not None and maximum is not None and maximum < default:
        found.append(
            ConfigProblem(
                f"{path}.maxRequestTimeout",
                f"{format_duration(maximum)} is below defaultRequestTimeout {format_duration(default)}",
            )
        )
    reaper_timeout = fields.get("reaper_timeout")
    if reaper_timeout is not None and reaper_timeout <= 0:
        found.append(ConfigProblem(f"{path}.reaperTimeout", "must be a positive duration"))
    elif reaper_timeout is not None and reaper_timeout > MAX_REAPER_TIMEOUT_S * NANOS_PER_SECOND:
        found.append(
            ConfigProblem(
                f"{path}.reaperTimeout",
                f"{format_duration(reaper_timeout)} exceeds "
                f"{format_duration(MAX_REAPER_TIMEOUT_S * NANOS_PER_SECOND)}, "
                "the longest a stop waits for Knative",
            )
        )
    found.extend(gpu_platform_problems(fields, path))
    return found


def default_name(raw: object, key: str, problems: list[ConfigProblem]) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        problems.append(ConfigProblem(PREFIX + key, f"must be a string, not {type(raw).__name__}"))
        return INVALID_DEFAULT
    message = label_value_problem(raw, key)
    if message:
        problems.append(ConfigProblem(PREFIX + key, bounded(message)))
        return INVALID_DEFAULT
    return raw


def claimed_identity(raw: object, defaults: Mapping[str, str | None]) -> AppId | None:
    """The identity an app entry claims, read from its own fields and the stack's defaults whatever
    else is wrong with it (so a duplicate is reported beside the first copy's other problems), or
    None when its name, project or domain is not text."""
    if not isinstance(raw, Mapping):
        return None
    name, org = raw.get("name"), raw.get("org", "")
    project = raw.get(KEY_PROJECT, defaults[KEY_PROJECT])
    domain = raw.get(KEY_DOMAIN, defaults[KEY_DOMAIN])
    fields = (name, org, project, domain)
    if not all(isinstance(field, str) for field in fields) or INVALID_DEFAULT in fields:
        return None
    return AppId(org=str(org), project=str(project), domain=str(domain), name=str(name))


def load_app(
    raw: object,
    path: str,
    defaults: Mapping[str, str | None],
    platform: PlatformConfig | None,
    problems: list[ConfigProblem],
    schemas: PodSpecSchemas | None = None,
) -> AppConfig | None:
    """One app, or None when it has any problem. When pydantic rejects some of its fields, the rules
    still run on the parts that are valid on their own, so one pass reports everything. The payload's
    pod spec is built and checked here (``schemas``: shared by every app of one pass)."""
    app = validate_model(AppInput, raw, path, problems)
    if app is None:
        app_part_problems(valid_fields(AppInput, raw), path, platform, problems)
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
        elif given is not None and (message := label_value_problem(value, key)):
            identity_ok = False
            problems.append(ConfigProblem(f"{path}.{key}", bounded(message)))
    # The model's fields by name, read-only and uncopied (``dict(app)`` iterates, after a failing
    # attribute lookup of ``keys``): a frozen model with no extra keys holds exactly its fields.
    env = app_part_problems(MappingProxyType(vars(app)), path, platform, problems)
    settings = platform.settings if platform is not None else Platform()
    payload = build_payload(app, env, gpu_resource_name(app.accelerator, settings), path)
    if app.container is not None or app.pod is not None:
        problems.extend(payload_problems(app, payload, settings, schemas or PodSpecSchemas(), path))
    if FLYTE_APP_NAME.fullmatch(app.name) and identity_ok and project is not None and domain is not None:
        ksvc = kservice_name(project=project, domain=domain, name=app.name)
        if not DNS1035_LABEL.fullmatch(ksvc):
            problems.append(
                ConfigProblem(
                    f"{path}.name",
                    f"KService name '{ksvc}' is not a DNS-1035 label (it must start with a letter "
                    "and hold only lower-case letters, digits and '-'); Knative would reject it",
                )
            )
    if len(problems) > before or not identity_ok or project is None or domain is None:
        return None
    return AppConfig(
        input=app,
        id=AppId(org=app.org, project=project, domain=domain, name=app.name),
        env=env,
        path=path,
        pod_spec=payload.spec,
    )


def app_part_problems(
    fields: Mapping[str, Any], path: str, platform: PlatformConfig | None, problems: list[ConfigProblem]
) -> tuple[EnvVar, ...]:
    """The rules of each part of an app (by field name) that is present; returns the app's env."""
    name = fields.get("name")
    if isinstance(name, str) and not FLYTE_APP_NAME.fullmatch(name):
        problems.append(
            ConfigProblem(
                f"{path}.name",
                f"{shown(name)} is not a valid Flyte app name: 1-30 letters, digits or '-', "
                "starting and ending with a letter or digit",
            )
        )
    env: tuple[EnvVar, ...] = ()
    problems.extend(payload_part_problems(fields, path, platform.settings if platform is not None else None))
    container = fields.get("container")
    if isinstance(container, Container):
        container_path = f"{path}.container"
        env = resolve_env(container.env, f"{container_path}.env", problems, upstream_list=False)
        problems.extend(port_problems(container.ports, f"{container_path}.ports"))
    scaling = fields.get("autoscaling")
    if isinstance(scaling, Autoscaling):
        problems.extend(autoscaling_problems(scaling, f"{path}.autoscaling"))
    knative = fields.get("knative")
    if isinstance(knative, KnativeRevision):
        autoscaling = scaling if isinstance(scaling, Autoscaling) else None
        problems.extend(knative_revision_problems(knative, autoscaling, f"{path}.knative"))
    timeouts = fields.get("timeouts")
    if isinstance(timeouts, Timeouts) and timeouts.request is not None:
        problems.extend(timeout_problems(timeouts.request, f"{path}.timeouts.request", platform))
    secrets = fields.get("secrets")
    if secrets is not None:
        problems.extend(secret_problems(secrets, env, f"{path}.secrets"))
    problems.extend(spec_field_problems(fields, path))
    problems.extend(ingress_problems(fields, path, platform))
    problems.extend(adopt_problems(fields.get("adopt"), path, platform))
    account = fields.get("service_account")
    if account and not is_subdomain(account):  # "" is allowed: it writes an empty run_as
        problems.append(
            ConfigProblem(
                f"{path}.serviceAccount", f"{shown(account)} is not a valid Kubernetes service account name"
            )
        )
    return env


def adopt_problems(adopt: object, path: str, platform: PlatformConfig | None) -> list[ConfigProblem]:
    """``adopt`` takes over a running KService: its namespace exists already, so it must be adopted
    too, and there is nothing to take over when the program only writes YAML files."""
    if adopt is None or adopt is False or platform is None:
        return []
    found: list[ConfigProblem] = []
    settings = platform.settings
    if not settings.adopt_namespace:
        found.append(
            ConfigProblem(
                f"{path}.adopt",
                f"needs {PREFIX}{KEY_PLATFORM}.adoptNamespace: true (the app's namespace already exists)",
            )
        )
    if settings.render_yaml_to_directory:
        found.append(
            ConfigProblem(
                f"{path}.adopt",
                f"cannot be used with {PREFIX}{KEY_PLATFORM}.renderYamlToDirectory "
                "(no cluster to adopt from)",
            )
        )
    return found


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
                        ConfigProblem(f"{item_path}.name", f"must be a string, not {shown(item['name'])}")
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
                problems.append(ConfigProblem(item_path, f"must be {shape}, not {shown(item)}"))
    result: list[EnvVar] = []
    seen: dict[str, str] = {}
    for name, value, entry_path, value_path in entries:
        if not is_env_var_name(name):
            problems.append(
                ConfigProblem(
                    entry_path,
                    f"{shown(name)} is not a valid environment variable name "
                    "(letters, digits, '_', '-', '.'; not starting with a digit)",
                )
            )
            continue
        if name in c.INJECTED_ENV_VARS:
            problems.append(
                ConfigProblem(
                    entry_path, f"{shown(name)} is set by Flyte for every app and cannot be overridden"
                )
            )
            continue
        if name in c.KNATIVE_RESERVED_ENV_VARS:
            problems.append(ConfigProblem(entry_path, knative_reserved_env_message(name)))
            continue
        if name in seen:
            problems.append(
                ConfigProblem(
                    entry_path, f"duplicate environment variable {shown(name)} (also at {seen[name]})"
                )
            )
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            problems.append(
                ConfigProblem(value_path, f"value of {shown(name)} must be a string, not {shown(value)}")
            )
            continue
        if isinstance(value, str) and NUL in value:
            problems.append(ConfigProblem(value_path, nul_in_env_message(name)))
            continue
        seen[name] = entry_path
        result.append(EnvVar(name=name, value=str(value)))
    return tuple(result)
