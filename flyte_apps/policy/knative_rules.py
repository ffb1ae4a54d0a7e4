"""Rules about what Knative must allow for the apps' KServices to be admitted: the feature flags that
gate pod-spec fields (affinity, tolerations, volumes, init containers...).

A stack that manages Knative's config (``flyte-apps:knative.manageConfig``) enables the flags its apps
use in a ``config-features`` patch; a stack that does not relies on the cluster, so the rule cannot
know and reports each flag an app needs unless the ``enabledFlags`` setting says the cluster has it.
The map of fields to flags is the core's (``flyte_apps.core.knative_features``), the one the program
enables flags from.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from flyte_apps.core.knative_features import ENABLED_BY_DEFAULT, ENABLING_VALUES, flags_used
from flyte_apps.core.knative_settings import KNATIVE_CONFIG_FEATURES
from flyte_apps.policy.pods import pod_spec
from flyte_apps.policy.wire import UNKNOWN, Report, StackArgs, dig, is_kind, is_kservice, props_of, section

SETTING_ENABLED_FLAGS: Final = "enabledFlags"


def feature_flags_enabled(args: StackArgs, report: Report) -> None:
    """Every Knative feature flag a KService's pod spec needs is enabled: by Knative's defaults, by the
    stack's own ``config-features`` patch, or (the cluster's own config) by the ``enabledFlags``
    setting."""
    enabled = set(ENABLED_BY_DEFAULT) | _setting(args.get_config().get(SETTING_ENABLED_FLAGS))
    patched = _patched_flags(args)
    if patched is None:
        return  # the stack's config-features is not known yet (preview): nothing to judge
    enabled |= patched
    for resource in args.resources:
        if not is_kservice(resource.resource_type):
            continue
        pod = pod_spec(resource)
        if pod is None:
            continue
        for use in flags_used(pod.spec):
            if use.flag in enabled:
                continue
            fields = ", ".join(f"{pod.path}.{where}" for where in use.paths)
            report(
                f"{fields} need(s) Knative's feature flag {use.flag}, which neither the stack's "
                f"{KNATIVE_CONFIG_FEATURES} patch nor the {SETTING_ENABLED_FLAGS} setting enables: Knative "
                "rejects the revision unless the cluster enables it",
                resource.urn,
            )


def _patched_flags(args: StackArgs) -> set[str] | None:
    """The flags the stack's ``config-features`` ConfigMap (or patch of it) enables; None when any of
    its data is unknown."""
    found: set[str] = set()
    for resource in args.resources:
        token = resource.resource_type
        if not (is_kind(token, "core", "ConfigMap", patch=True) or is_kind(token, "core", "ConfigMap")):
            continue
        props = props_of(resource)
        if dig(props, "metadata", "name") != KNATIVE_CONFIG_FEATURES:
            continue
        data = section(dig(props, "data"))
        if data is None:
            return None
        for flag, value in data.items():
            if value is UNKNOWN:
                return None
            if value in ENABLING_VALUES:
                found.add(flag)
    return found


def _setting(value: object) -> set[str]:
    if not isinstance(value, Iterable) or isinstance(value, str | bytes):
        return set()
    return {flag for flag in value if isinstance(flag, str)}
