"""``flyte-apps:manager`` as written (pydantic models) and validated (``ManagerConfig``); the checks are
``flyte_apps.core.manager.load``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from flyte_apps.core.config.kit import (
    MAX_INT64,
    MAX_MANAGER_REPLICAS,
    MAX_PORT,
    Bool,
    ConfigModel,
    Quantity,
)

LogLevel = Literal["error", "warn", "info", "debug"]


class ManagerPorts(ConfigModel):
    runs: int = Field(default=8090, ge=1, le=MAX_PORT)
    queue: int = Field(default=8089, ge=1, le=MAX_PORT)
    health: int = Field(default=8081, ge=1, le=MAX_PORT)
    webhook: int = Field(default=9443, ge=1, le=MAX_PORT)


class SqliteStorage(ConfigModel):
    size: Quantity = "1Gi"
    storage_class: str | None = None


class SecretKeyRef(ConfigModel):
    """A key of an existing Kubernetes Secret in the platform namespace."""

    name: str
    key: str


class Database(ConfigModel):
    """``type: sqlite`` (the seed's manager) or ``type: postgres`` (Flyte's current main)."""

    type: Literal["sqlite", "postgres"] = "sqlite"
    storage: SqliteStorage = Field(default_factory=SqliteStorage)
    host: str | None = None
    port: int = Field(default=5432, ge=1, le=MAX_PORT)
    dbname: str | None = None
    username: str | None = None
    password_secret: SecretKeyRef | None = None


class ManagerRequests(ConfigModel):
    cpu: Quantity | None = "250m"
    memory: Quantity | None = "512Mi"


class ManagerLimits(ConfigModel):
    cpu: Quantity | None = "1"
    memory: Quantity | None = "1Gi"


class ManagerResources(ConfigModel):
    """Each value has a default; ``null`` drops it."""

    requests: ManagerRequests = Field(default_factory=ManagerRequests)
    limits: ManagerLimits = Field(default_factory=ManagerLimits)


class Toleration(ConfigModel):
    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = Field(default=None, ge=-MAX_INT64 - 1, le=MAX_INT64)  # int64


class ManagerInput(ConfigModel):
    """``flyte-apps:manager`` as written in the stack config."""

    enabled: Bool = True
    """Writing the block enables the manager; ``enabled: false`` keeps the block but deploys nothing."""
    image: str | None = None
    replicas: int = Field(default=1, ge=0, le=MAX_MANAGER_REPLICAS)
    ports: ManagerPorts = Field(default_factory=ManagerPorts)
    database: Database = Field(default_factory=Database)
    apps_enabled: Bool = True
    resources: ManagerResources = Field(default_factory=ManagerResources)
    log_level: LogLevel = "info"
    extra_config: dict[str, Any] = Field(default_factory=dict)
    node_selector: dict[str, str] | None = None
    tolerations: tuple[Toleration, ...] = ()
    install_crd: Bool = True


@dataclass(frozen=True)
class ManagerConfig:
    """A validated, enabled manager."""

    input: ManagerInput
    image: str

    @property
    def sqlite(self) -> bool:
        return self.input.database.type == "sqlite"
