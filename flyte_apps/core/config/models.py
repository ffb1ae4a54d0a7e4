"""The platform and app sections of the stack config as written (pydantic models), and the validated
results the rest of the core works with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from flyte_apps.core import constants as c
from flyte_apps.core.config.kit import (
    MAX_PORT,
    MAX_UINT32,
    Bool,
    ConfigModel,
    GoDuration,
    Int,
    LowerCase,
    Quantity,
    RawEnv,
)
from flyte_apps.core.durations import NANOS_PER_SECOND

ResourceName = Literal["cpu", "memory", "ephemeral-storage"]


class Platform(ConfigModel):
    """Flyte's ``internalApps`` settings plus how this program manages the namespace."""

    namespace: str = "flyte"
    base_domain: LowerCase = ""
    scheme: Literal["http", "https"] = "https"
    ingress_apps_port: Int = Field(default=0, ge=0, le=MAX_PORT)
    default_request_timeout: GoDuration = 300 * NANOS_PER_SECOND
    max_request_timeout: GoDuration = 3600 * NANOS_PER_SECOND
    namespaced_name_suffix_template: str = c.DEFAULT_SUFFIX_TEMPLATE
    default_env_vars: RawEnv = None
    default_service_account: str = ""
    watch_buffer_size: Int = Field(default=100, ge=1)
    adopt_namespace: Bool = False
    retain_namespace: Bool = True
    render_yaml_to_directory: str = ""
    reaper_timeout: GoDuration = 30 * NANOS_PER_SECOND


class Port(ConfigModel):
    container_port: Int = Field(ge=1, le=MAX_PORT)
    name: str = ""


class Resources(ConfigModel):
    requests: dict[ResourceName, Quantity] = Field(default_factory=dict)
    limits: dict[ResourceName, Quantity] = Field(default_factory=dict)


class Container(ConfigModel):
    image: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: RawEnv = None
    ports: tuple[Port, ...] = ()
    resources: Resources | None = None


class Autoscaling(ConfigModel):
    min_replicas: Int | None = Field(default=None, ge=0, le=MAX_UINT32)
    max_replicas: Int | None = Field(default=None, ge=0, le=MAX_UINT32)
    metric: Literal["concurrency", "rps"] | None = None
    target: Int | None = Field(default=None, le=MAX_UINT32)
    scaledown_period: GoDuration | None = None


class Timeouts(ConfigModel):
    request: GoDuration | None = None


class SecretInput(ConfigModel):
    """A Flyte secret the pod webhook injects: ``security_context.secrets`` of the app spec."""

    group: str = ""
    key: str
    group_version: str = ""
    mount_requirement: Literal["ANY", "ENV_VAR", "FILE"] = "ANY"
    env_var: str = ""


class AppInput(ConfigModel):
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
    stopped: Bool = False
    secrets: tuple[SecretInput, ...] = ()


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
