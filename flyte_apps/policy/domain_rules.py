"""Policy rules over custom domains: Knative ``DomainMapping`` resources next to the apps' KServices."""

from __future__ import annotations

from typing import Any

from flyte_apps.core import constants as c
from flyte_apps.policy.app_rules import DEFAULT_NAMESPACE
from flyte_apps.policy.wire import UNKNOWN, Report, StackArgs, dig, is_kservice, props_of


def domain_mappings_target_public_apps(args: StackArgs, report: Report) -> None:
    """A DomainMapping makes its target reachable from outside even when the KService is cluster-local,
    so one that routes to a stopped or cluster-local KService of the stack exposes what the stack hides.

    Mappings to a KService the stack does not deploy, and values not known during preview, are left
    for ``pulumi up`` (the engine runs the pack again with every value known)."""
    kservices: dict[tuple[str, str], dict[str, Any]] = {}
    for resource in args.resources:
        if not is_kservice(resource.resource_type):
            continue
        metadata = dig(props_of(resource), "metadata")
        name, namespace, labels = dig(metadata, "name"), dig(metadata, "namespace"), dig(metadata, "labels")
        if isinstance(name, str) and isinstance(labels, dict):
            kservices[(_namespace(namespace), name)] = labels
    for resource in args.resources:
        if resource.resource_type != c.TYPE_DOMAIN_MAPPING:
            continue
        props = props_of(resource)
        ref = dig(props, "spec", "ref")
        if not isinstance(ref, dict) or ref.get("kind") != c.KSERVICE_KIND:
            continue
        target, host = ref.get("name"), dig(props, "metadata", "name")
        namespace = ref.get("namespace") or dig(props, "metadata", "namespace")
        if not isinstance(target, str) or namespace is UNKNOWN:
            continue
        labels = kservices.get((_namespace(namespace), target))
        if labels is None or labels.get(c.LABEL_VISIBILITY) != c.VISIBILITY_CLUSTER_LOCAL:
            continue
        why = "stopped" if labels.get(c.LABEL_APP_STOPPED) == c.TRUE else "cluster-local"
        report(
            f"DomainMapping '{host}' routes to KService '{target}', which is {why}: a DomainMapping makes "
            "its target reachable from outside even when the KService is cluster-local",
            resource.urn,
        )


def _namespace(value: object) -> str:
    return value if isinstance(value, str) and value else DEFAULT_NAMESPACE
