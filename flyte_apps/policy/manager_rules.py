"""Rules about the Flyte manager's objects: RBAC without wildcards, and a SQLite-backed manager that
runs one pod at a time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import yaml

from flyte_apps.core.constants import LABEL_NAME
from flyte_apps.core.manager.layout import CONFIG_FILE_KEY, MANAGER_NAME
from flyte_apps.policy.wire import (
    UNKNOWN,
    Report,
    ResourceArgs,
    StackArgs,
    dig,
    is_kind,
    items,
    kube_type,
    props_of,
    shown,
    whole_number,
)

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
RBAC_ROLE_KINDS: Final = ("Role", "ClusterRole")
RBAC_RULE_LISTS: Final = ("apiGroups", "resources", "verbs")
WILDCARD: Final = "*"
SQLITE: Final = "sqlite"
RECREATE: Final = "Recreate"
DEFAULT_NAMESPACE: Final = "default"


def rbac_no_wildcards(args: ResourceArgs, report: Report) -> None:
    """No Role or ClusterRole rule grants ``*`` in apiGroups, resources or verbs."""
    kind = kube_type(args.resource_type)
    if kind is None or kind.group != RBAC_GROUP or kind.kind not in RBAC_ROLE_KINDS:
        return
    for index, rule in enumerate(items(dig(props_of(args), "rules"))):
        if not isinstance(rule, dict):
            continue
        for key in RBAC_RULE_LISTS:
            for position, entry in enumerate(items(rule.get(key))):
                if isinstance(entry, str) and WILDCARD in entry:
                    report(
                        f"rules[{index}].{key}[{position}] '{entry}' is a wildcard; name the {key} the "
                        "role needs",
                        None,
                    )


@dataclass(frozen=True)
class _Database:
    sqlite: bool
    evidence: str = ""


def sqlite_manager_single_replica(args: StackArgs, report: Report) -> None:
    """A flyte-manager Deployment whose database is SQLite runs at most one replica with the
    ``Recreate`` strategy: SQLite has a single writer, on a ReadWriteOnce volume.

    SQLite is read from the manager's own config (``database.type: sqlite`` in the ``config.yaml``
    of a ConfigMap the pod mounts, when the stack holds it); without that config, a pod that mounts
    a PersistentVolumeClaim is taken as SQLite-backed (the only state the manager keeps on a claim).
    """
    config_maps: dict[tuple[str, str], dict[str, Any]] = {}
    for resource in args.resources:
        if is_kind(resource.resource_type, "core", "ConfigMap"):
            props = props_of(resource)
            name, namespace = dig(props, "metadata", "name"), dig(props, "metadata", "namespace")
            if isinstance(name, str):
                config_maps[
                    (namespace if isinstance(namespace, str) and namespace else DEFAULT_NAMESPACE, name)
                ] = props
    for resource in args.resources:
        if not is_kind(resource.resource_type, "apps", "Deployment"):
            continue
        props = props_of(resource)
        if not _is_manager(props):
            continue
        namespace = dig(props, "metadata", "namespace")
        namespace = namespace if isinstance(namespace, str) and namespace else DEFAULT_NAMESPACE
        database = _database(dig(props, "spec", "template", "spec", "volumes"), namespace, config_maps)
        if not database.sqlite:
            continue
        replicas = dig(props, "spec", "replicas")
        count = whole_number(replicas)
        if replicas is not None and replicas is not UNKNOWN and (count is None or count > 1):
            report(
                f"spec.replicas is {shown(replicas)}, but {database.evidence}, which has a single "
                "writer: run one replica, or use a postgres database",
                resource.urn,
            )
        strategy = dig(props, "spec", "strategy", "type")
        if strategy is not UNKNOWN and strategy != RECREATE:
            current = "not set (Kubernetes uses RollingUpdate)" if strategy is None else shown(strategy)
            report(
                f"spec.strategy.type is {current}, but {database.evidence}: use '{RECREATE}' so the "
                "old pod lets go of the database before the new one starts",
                resource.urn,
            )


def _is_manager(props: dict[str, Any]) -> bool:
    name, label = dig(props, "metadata", "name"), dig(props, "metadata", "labels", LABEL_NAME)
    return MANAGER_NAME in (name, label)


def _database(
    volumes: object, namespace: str, config_maps: dict[tuple[str, str], dict[str, Any]]
) -> _Database:
    for volume in items(volumes):
        name = dig(volume, "configMap", "name")
        config_map = config_maps.get((namespace, name)) if isinstance(name, str) else None
        text = dig(config_map, "data", CONFIG_FILE_KEY)
        if not isinstance(text, str):
            continue
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        database_type = dig(document, "database", "type")
        if database_type == SQLITE:
            return _Database(
                True, f"the manager's database is SQLite (ConfigMap {name}: database.type sqlite)"
            )
        if isinstance(database_type, str) or isinstance(dig(document, "runs", "database"), dict):
            return _Database(False)
    for volume in items(volumes):
        claim = dig(volume, "persistentVolumeClaim", "claimName")
        if claim is not None and claim is not UNKNOWN:
            return _Database(
                True,
                f"the manager keeps its database on PersistentVolumeClaim {shown(claim)} "
                f"(volume {shown(dig(volume, 'name'))})",
            )
    return _Database(False)
