"""Knative Serving's settings that Flyte's apps rely on (reference (i)): ``flyte-apps:knative`` as
written and validated, and the server-side-apply patches of Knative's ConfigMaps that carry only
those keys, plus ``config-features`` with the feature flags the stack's apps need."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.config.keys import KEY_KNATIVE, PREFIX
from flyte_apps.core.config.kit import Bool, ConfigModel, validate_model
from flyte_apps.core.config.models import PlatformConfig
from flyte_apps.core.config.names import DNS1123_LABEL, MAX_LABEL_LEN, not_dns_label
from flyte_apps.core.durations import NANOS_PER_SECOND
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.knative_features import ENABLED_BY_DEFAULT
from flyte_apps.core.objects import RenderedObject

KNATIVE_NAMESPACE: Final = "knative-serving"
KNATIVE_CONFIG_AUTOSCALER: Final = "config-autoscaler"
KNATIVE_CONFIG_DEFAULTS: Final = "config-defaults"
KNATIVE_CONFIG_DOMAIN: Final = "config-domain"
KNATIVE_CONFIG_FEATURES: Final = "config-features"
KNATIVE_CONFIG_NETWORK: Final = "config-network"
KNATIVE_ALLOW_ZERO_INITIAL_SCALE: Final = "allow-zero-initial-scale"  # Stop writes initial-scale "0"
KNATIVE_DOMAIN_TEMPLATE: Final = "domain-template"
# Flyte's public URLs are <ksvc>.<baseDomain>: Knative's default template puts the namespace in too.
DOMAIN_TEMPLATE: Final = "{{.Name}}.{{.Domain}}"
KNATIVE_MAX_REVISION_TIMEOUT: Final = "max-revision-timeout-seconds"
KNATIVE_REVISION_TIMEOUT: Final = "revision-timeout-seconds"
FLAG_ADMITTING_VALUES: Final = frozenset({c.KNATIVE_FEATURE_ENABLED, "allowed"})
"""A pod-spec flag's values (any case) under which Knative's webhook keeps the field: anything but
``Disabled`` (knative.dev/serving pkg/apis/serving/fieldmask.go); a value it cannot read is its default,
``Disabled`` (pkg/apis/config/features.go ``asFlag``)."""
KNATIVE_DEFAULT_MAX_REVISION_TIMEOUT_S: Final = 600
"""``max-revision-timeout-seconds`` of a Knative that nobody configured (knative.dev/serving
pkg/apis/config/defaults.go): a revision timeout up to it is admitted before our patch is."""


class KnativeInput(ConfigModel):
    """``flyte-apps:knative`` as written in the stack config."""

    manage_config: Bool = False
    """Patch Knative Serving's ConfigMaps with the keys Flyte's apps need (one owner per key)."""
    namespace: str = KNATIVE_NAMESPACE
    """Knative Serving's namespace."""


@dataclass(frozen=True)
class KnativeConfig:
    """Knative Serving's config, to be patched: exists only when ``manageConfig`` is true."""

    namespace: str
    """Knative Serving's namespace."""


def load_knative_config(raw: object, problems: list[ConfigProblem]) -> KnativeConfig | None:
    """Validate ``flyte-apps:knative``; returns a config only when ``manageConfig`` is true."""
    if raw is None:
        return None
    path = PREFIX + KEY_KNATIVE
    knative = validate_model(KnativeInput, raw, path, problems)
    if knative is None:
        return None
    if not DNS1123_LABEL.fullmatch(knative.namespace) or len(knative.namespace) > MAX_LABEL_LEN:
        problems.append(ConfigProblem(f"{path}.namespace", not_dns_label(knative.namespace, "DNS-1123")))
        return None
    if not knative.manage_config:
        return None
    return KnativeConfig(namespace=knative.namespace)


def knative_namespace(raw: object) -> str:
    """``flyte-apps:knative.namespace`` as given (``load_knative_config`` reports a bad one), else the
    default: needed to read Knative's settings even when this program does not manage them."""
    given = raw.get("namespace") if isinstance(raw, Mapping) else None
    return given if isinstance(given, str) and given else KNATIVE_NAMESPACE


def disabled_flag_problems(
    apps: Iterable[Any], live: Mapping[str, str], namespace: str
) -> list[ConfigProblem]:
    """One problem per app whose pod spec needs a Knative feature flag that the live
    ``config-features`` (``live``: its data) does not enable, naming the flags and the settings that
    enable them. Without these, Knative's webhook refuses the KService with its own text."""
    found: list[ConfigProblem] = []
    for app in apps:
        needed = sorted(
            {use.flag for use in app.feature_flags if use.flag not in ENABLED_BY_DEFAULT}
            - {flag for flag, value in live.items() if value.lower() in FLAG_ADMITTING_VALUES}
        )
        if needed:
            found.append(
                ConfigProblem(
                    app.config.path,
                    f"app {app.config.id} needs Knative's feature flag(s) {', '.join(needed)}, which "
                    f"{namespace}/{KNATIVE_CONFIG_FEATURES} does not enable: set "
                    f"{PREFIX}{KEY_KNATIVE}.manageConfig: true to have this program enable them, or enable "
                    "them there",
                )
            )
    return found


def build_knative_objects(
    knative: KnativeConfig, platform: PlatformConfig, features: Iterable[str] = ()
) -> list[RenderedObject]:
    """Server-side-apply patches of Knative's ConfigMaps that carry only the keys Flyte's apps need
    (reference (i)); everything else in those ConfigMaps stays as the cluster has it.

    ``features``: the feature flags the stack's apps use (``flyte_apps.core.knative_features``).
    ``config-features`` gets each of them as ``enabled`` and nothing else, so a flag the stack does
    not use (another team's apps may rely on it) is never turned off; without flags, no patch."""
    settings = platform.settings
    patches: list[tuple[str, dict[str, str]]] = [
        (KNATIVE_CONFIG_AUTOSCALER, {KNATIVE_ALLOW_ZERO_INITIAL_SCALE: c.TRUE}),
        (
            KNATIVE_CONFIG_DEFAULTS,
            {
                KNATIVE_MAX_REVISION_TIMEOUT: str(settings.max_request_timeout // NANOS_PER_SECOND),
                # Knative rejects a config-defaults whose default timeout is above the maximum (its
                # own default is 300 s): keep the two consistent with the platform's.
                KNATIVE_REVISION_TIMEOUT: str(settings.default_request_timeout // NANOS_PER_SECOND),
            },
        ),
        (KNATIVE_CONFIG_NETWORK, {KNATIVE_DOMAIN_TEMPLATE: DOMAIN_TEMPLATE}),
    ]
    if settings.base_domain:
        patches.append((KNATIVE_CONFIG_DOMAIN, {settings.base_domain: ""}))
    flags = sorted(set(features))
    if flags:
        patches.append((KNATIVE_CONFIG_FEATURES, dict.fromkeys(flags, c.KNATIVE_FEATURE_ENABLED)))
    return [
        RenderedObject(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": name,
                    "namespace": knative.namespace,
                    "annotations": {c.ANNOTATION_PATCH_FORCE: c.TRUE},
                },
                "data": data,
            },
            patch=True,
        )
        for name, data in patches
    ]


def admission_settings(kservice: Mapping[str, Any], flags: Iterable[str]) -> frozenset[str]:
    """The ConfigMaps of ``build_knative_objects`` whose keys Knative's webhook checks this KService
    against when it admits it (a create, or pulumi-kubernetes' dry run of one in a preview):
    ``config-defaults`` for a revision whose timeout is above Knative's default maximum, ``config-autoscaler``
    for a revision that starts at zero (a stopped app), ``config-features`` for one that needs a flag
    (``flags``, from ``flyte_apps.core.knative_features``). Until such a patch is applied, the webhook
    refuses what the patch would allow."""
    needed = set()
    template = kservice.get("spec", {}).get("template", {})
    if template.get("spec", {}).get("timeoutSeconds", 0) > KNATIVE_DEFAULT_MAX_REVISION_TIMEOUT_S:
        needed.add(KNATIVE_CONFIG_DEFAULTS)
    if template.get("metadata", {}).get("annotations", {}).get(c.ANNOTATION_INITIAL_SCALE) == "0":
        needed.add(KNATIVE_CONFIG_AUTOSCALER)
    if any(flag not in ENABLED_BY_DEFAULT for flag in flags):
        needed.add(KNATIVE_CONFIG_FEATURES)
    return frozenset(needed)
