"""Every rule with its stable name, one-sentence description, default enforcement level and config
schema: the single list the policy pack and ``flyte-apps check`` are built from."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from flyte_apps.policy import app_rules, domain_rules, knative_rules, manager_rules, pod_rules
from flyte_apps.policy.wire import Report, ResourceArgs, StackArgs

ResourceValidation = Callable[[ResourceArgs, Report], None]
StackValidation = Callable[[StackArgs, Report], None]


class Level(StrEnum):
    """pulumi-policy's ``EnforcementLevel`` values."""

    ADVISORY = "advisory"
    MANDATORY = "mandatory"
    REMEDIATE = "remediate"
    DISABLED = "disabled"

    @property
    def blocks(self) -> bool:
        """Mandatory, and remediate (which the engine reports as mandatory when a violation stays)."""
        return self in (Level.MANDATORY, Level.REMEDIATE)


@dataclass(frozen=True, kw_only=True)
class _Rule:
    name: str
    """Stable kebab-case id: users configure the pack by it."""
    description: str
    """One sentence."""
    level: Level
    """Default enforcement level."""
    settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """JSON-schema properties of the rule's config (``PolicyConfigSchema.properties``)."""


@dataclass(frozen=True, kw_only=True)
class ResourceRule(_Rule):
    """Runs once per resource (pulumi-policy's ``ResourceValidationPolicy``)."""

    validate: ResourceValidation


@dataclass(frozen=True, kw_only=True)
class StackRule(_Rule):
    """Runs once over every resource of the stack (pulumi-policy's ``StackValidationPolicy``)."""

    validate: StackValidation


Rule = ResourceRule | StackRule

RULES: Final[tuple[Rule, ...]] = (
    ResourceRule(
        name="kservice-name-valid",
        description="KService names are DNS-1035 labels of at most 63 characters.",
        level=Level.MANDATORY,
        validate=app_rules.kservice_name_valid,
    ),
    StackRule(
        name="kservice-names-unique",
        description="No two KServices share a namespace and a name.",
        level=Level.MANDATORY,
        validate=app_rules.kservice_names_unique,
    ),
    ResourceRule(
        name="flyte-identity-consistent",
        description=(
            "A KService carries flyte.org/app-managed=true, identity labels that agree with "
            "flyte.org/app-id, and the flyte.org/spec-sha of its flyte.org/spec."
        ),
        level=Level.MANDATORY,
        validate=app_rules.flyte_identity_consistent,
    ),
    ResourceRule(
        name="stopped-apps-are-private",
        description="A stopped app is cluster-local with min-scale and initial-scale 0.",
        level=Level.MANDATORY,
        validate=app_rules.stopped_apps_are_private,
    ),
    StackRule(
        name="domain-mappings-target-public-apps",
        description="No DomainMapping routes to a stopped or cluster-local KService of the stack.",
        level=Level.MANDATORY,
        validate=domain_rules.domain_mappings_target_public_apps,
    ),
    StackRule(
        name="request-timeout-within-knative-max",
        description=(
            "Every KService's timeoutSeconds is at most Knative's max-revision-timeout-seconds "
            "(the stack's config-defaults patch, else the maxRevisionTimeoutSeconds setting)."
        ),
        level=Level.MANDATORY,
        settings={
            app_rules.SETTING_MAX_TIMEOUT: {
                "type": "integer",
                "minimum": 1,
                "default": app_rules.KNATIVE_DEFAULT_MAX_TIMEOUT_S,
                "description": "Knative's max-revision-timeout-seconds when the stack does not patch it.",
            }
        },
        validate=app_rules.request_timeout_within_knative_max,
    ),
    StackRule(
        name="knative-feature-flags-enabled",
        description=(
            "Pod-spec fields Knative accepts only behind feature flags are enabled by the stack's "
            "config-features patch or, for the cluster's own config, the enabledFlags setting."
        ),
        level=Level.ADVISORY,
        settings={
            knative_rules.SETTING_ENABLED_FLAGS: {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Knative feature flags the cluster's config-features enables.",
            }
        },
        validate=knative_rules.feature_flags_enabled,
    ),
    ResourceRule(
        name="autoscaling-bounded",
        description="A public app sets an autoscaling max-scale other than 0.",
        level=Level.ADVISORY,
        validate=app_rules.autoscaling_bounded,
    ),
    ResourceRule(
        name="image-pinned",
        description="Container images name a version tag or a digest, never :latest or no tag.",
        level=Level.ADVISORY,
        settings={
            pod_rules.SETTING_REQUIRE_DIGEST: {
                "type": "boolean",
                "default": False,
                "description": "Require every image to be pinned by digest (@sha256:...).",
            }
        },
        validate=pod_rules.image_pinned,
    ),
    ResourceRule(
        name="resources-set",
        description="Every container requests and limits CPU and memory.",
        level=Level.ADVISORY,
        validate=pod_rules.resources_set,
    ),
    ResourceRule(
        name="no-privileged-pods",
        description=(
            "No pod template runs privileged containers, allows privilege escalation, uses the "
            "host's network, PID or IPC namespace, or mounts hostPath volumes."
        ),
        level=Level.MANDATORY,
        validate=pod_rules.no_privileged_pods,
    ),
    ResourceRule(
        name="no-plaintext-credentials",
        description="Env vars named like credentials carry no literal values.",
        level=Level.ADVISORY,
        settings={
            pod_rules.SETTING_ALLOWED_NAMES: {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Env var names that look like credentials but are not.",
            }
        },
        validate=pod_rules.no_plaintext_credentials,
    ),
    ResourceRule(
        name="rbac-no-wildcards",
        description="No Role or ClusterRole rule grants * in apiGroups, resources or verbs.",
        level=Level.MANDATORY,
        validate=manager_rules.rbac_no_wildcards,
    ),
    StackRule(
        name="sqlite-manager-single-replica",
        description="A SQLite-backed flyte-manager Deployment runs one replica with the Recreate strategy.",
        level=Level.MANDATORY,
        validate=manager_rules.sqlite_manager_single_replica,
    ),
)

RULES_BY_NAME: Final[Mapping[str, Rule]] = {rule.name: rule for rule in RULES}
