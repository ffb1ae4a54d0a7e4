"""Rules about the apps' KServices: names, Flyte's identity labels and annotations, the stop form,
autoscaling and request timeouts against Knative's maximum."""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any, Final

from google.protobuf.message import DecodeError

from flyte_apps.core import constants as c
from flyte_apps.core.config.names import DNS1035_LABEL
from flyte_apps.core.knative_settings import KNATIVE_CONFIG_DEFAULTS, KNATIVE_MAX_REVISION_TIMEOUT
from flyte_apps.core.spec import decode_spec
from flyte_apps.policy.wire import (
    UNKNOWN,
    Report,
    ResourceArgs,
    StackArgs,
    StackResource,
    dig,
    is_kind,
    is_kservice,
    props_of,
    section,
    shown,
    whole_number,
)

SPEC_SHA_BYTES: Final = 8  # flyte.org/spec-sha: the first 8 bytes of SHA-256, as hex (reference (b))
KNATIVE_DEFAULT_MAX_TIMEOUT_S: Final = 600  # Knative's own max-revision-timeout-seconds
SETTING_MAX_TIMEOUT: Final = "maxRevisionTimeoutSeconds"
DEFAULT_NAMESPACE: Final = "default"

_LABELS: Final = ("metadata", "labels")
_ANNOTATIONS: Final = ("metadata", "annotations")
_TEMPLATE_ANNOTATIONS: Final = ("spec", "template", "metadata", "annotations")


def kservice_name_valid(args: ResourceArgs, report: Report) -> None:
    """KService names are DNS-1035 labels of at most 63 characters (Knative's admission rule)."""
    if not is_kservice(args.resource_type):
        return
    name = dig(props_of(args), "metadata", "name")
    if name is UNKNOWN:
        return
    if not isinstance(name, str) or not name:
        report("metadata.name is not set: Flyte finds an app's KService by its name", None)
        return
    if len(name) > c.MAX_KSERVICE_NAME_LEN:
        report(
            f"metadata.name '{name}' is {len(name)} characters; KService names are at most "
            f"{c.MAX_KSERVICE_NAME_LEN}",
            None,
        )
    if not DNS1035_LABEL.fullmatch(name):
        report(
            f"metadata.name '{name}' is not a DNS-1035 label (lower-case letters, digits and '-', "
            "starting with a letter and ending with a letter or digit)",
            None,
        )


def kservice_names_unique(args: StackArgs, report: Report) -> None:
    """No two KServices share a namespace and name: the second would overwrite the first."""
    seen: dict[tuple[str, str], StackResource] = {}
    for resource in args.resources:
        if not is_kservice(resource.resource_type):
            continue
        metadata = dig(props_of(resource), "metadata")
        name, namespace = dig(metadata, "name"), dig(metadata, "namespace")
        if not isinstance(name, str) or namespace is UNKNOWN:
            continue
        namespace = namespace if isinstance(namespace, str) and namespace else DEFAULT_NAMESPACE
        first = seen.setdefault((namespace, name), resource)
        if first is not resource:
            report(
                f"metadata.name '{name}' in namespace '{namespace}' is also the name of {first.name}: "
                "one KService would overwrite the other",
                resource.urn,
            )


def flyte_identity_consistent(args: ResourceArgs, report: Report) -> None:
    """The app-managed label, the identity labels, ``flyte.org/app-id`` and ``flyte.org/spec-sha``
    say the same thing, as Flyte's app service reads them."""
    if not is_kservice(args.resource_type):
        return
    props = props_of(args)
    labels, annotations = section(dig(props, *_LABELS)), section(dig(props, *_ANNOTATIONS))
    if labels is not None:
        managed = labels.get(c.LABEL_APP_MANAGED)
        if managed is not UNKNOWN and managed != c.TRUE:
            report(
                f"metadata.labels['{c.LABEL_APP_MANAGED}'] is {_value(managed)}, not 'true': Flyte's "
                "app service does not see the app",
                None,
            )
    if annotations is None:
        return
    if labels is not None:
        _check_app_id(labels, annotations.get(c.ANNOTATION_APP_ID), report)
    _check_spec_sha(annotations.get(c.ANNOTATION_SPEC), annotations.get(c.ANNOTATION_SPEC_SHA), report)


def _check_app_id(labels: dict[str, Any], app_id: object, report: Report) -> None:
    field = f"metadata.annotations['{c.ANNOTATION_APP_ID}']"
    if app_id is UNKNOWN:
        return
    parts = app_id.split("/") if isinstance(app_id, str) else []
    if len(parts) != 3:
        report(f"{field} is {_value(app_id)}, not project/domain/name", None)
        return
    for label, expected in zip((c.LABEL_PROJECT, c.LABEL_DOMAIN, c.LABEL_APP_NAME), parts, strict=True):
        value = labels.get(label)
        if value is not UNKNOWN and value != expected:
            report(
                f"metadata.labels['{label}'] is {_value(value)}, but {field} '{app_id}' says '{expected}'",
                None,
            )


def _check_spec_sha(spec: object, sha: object, report: Report) -> None:
    spec_field = f"metadata.annotations['{c.ANNOTATION_SPEC}']"
    sha_field = f"metadata.annotations['{c.ANNOTATION_SPEC_SHA}']"
    if spec is UNKNOWN:
        return
    if not isinstance(spec, str) or not spec:
        report(f"{spec_field} is {_value(spec)}: Flyte cannot read the app's spec", None)
        return
    try:
        data = base64.b64decode(spec, validate=True)
        decode_spec(spec)
    except (binascii.Error, ValueError):
        report(f"{spec_field} is not standard base64", None)
        return
    except DecodeError:
        report(f"{spec_field} does not decode as a flyteidl2.app.Spec", None)
        return
    expected = hashlib.sha256(data).digest()[:SPEC_SHA_BYTES].hex()
    if sha is not UNKNOWN and sha != expected:
        report(f"{sha_field} is {_value(sha)}, but the hash of {spec_field} is '{expected}'", None)


def stopped_apps_are_private(args: ResourceArgs, report: Report) -> None:
    """A stopped app is ``cluster-local`` with min-scale and initial-scale "0" (Flyte's stop patch)."""
    if not is_kservice(args.resource_type):
        return
    props = props_of(args)
    labels = section(dig(props, *_LABELS))
    if labels is None or labels.get(c.LABEL_APP_STOPPED) != c.TRUE:
        return
    visibility = labels.get(c.LABEL_VISIBILITY)
    if visibility is not UNKNOWN and visibility != c.VISIBILITY_CLUSTER_LOCAL:
        report(
            f"metadata.labels['{c.LABEL_VISIBILITY}'] is {_value(visibility)}; a stopped app must be "
            f"'{c.VISIBILITY_CLUSTER_LOCAL}'",
            None,
        )
    annotations = section(dig(props, *_TEMPLATE_ANNOTATIONS))
    if annotations is None:
        return
    for key in (c.ANNOTATION_MIN_SCALE, c.ANNOTATION_INITIAL_SCALE):
        value = annotations.get(key)
        if value is not UNKNOWN and value != "0":
            report(
                f"spec.template.metadata.annotations['{key}'] is {_value(value)}; a stopped app must "
                "have '0'",
                None,
            )


def autoscaling_bounded(args: ResourceArgs, report: Report) -> None:
    """A public app sets a max-scale other than "0", so traffic cannot scale it without bound."""
    if not is_kservice(args.resource_type):
        return
    props = props_of(args)
    labels = section(dig(props, *_LABELS))
    if labels is None:
        return
    visibility = labels.get(c.LABEL_VISIBILITY)
    if visibility is UNKNOWN or visibility == c.VISIBILITY_CLUSTER_LOCAL:
        return
    annotations = section(dig(props, *_TEMPLATE_ANNOTATIONS))
    value = None if annotations is None else annotations.get(c.ANNOTATION_MAX_SCALE, None)
    if annotations is None or value is UNKNOWN:
        return
    field = f"spec.template.metadata.annotations['{c.ANNOTATION_MAX_SCALE}']"
    if value is None:
        report(
            f"{field} is not set, so the public app scales without bound; set autoscaling.maxReplicas", None
        )
    elif whole_number(value) == 0:
        report(f"{field} is '0' (unbounded) on a public app; set autoscaling.maxReplicas", None)


def request_timeout_within_knative_max(args: StackArgs, report: Report) -> None:
    """Every KService's timeoutSeconds is at most Knative's ``max-revision-timeout-seconds``, from the
    stack's own ``config-defaults`` (patch) when it has one, else from the policy setting."""
    limit, source = _knative_max_timeout(args, report)
    if limit is None:
        return
    for resource in args.resources:
        if not is_kservice(resource.resource_type):
            continue
        value = dig(props_of(resource), "spec", "template", "spec", "timeoutSeconds")
        seconds = whole_number(value)
        if seconds is not None and seconds > limit:
            report(
                f"spec.template.spec.timeoutSeconds {seconds} exceeds Knative's "
                f"{KNATIVE_MAX_REVISION_TIMEOUT} {limit} (from {source}): Knative rejects the revision. "
                f"Fix: lower the app's timeouts.request to at most {limit}s, or set "
                f"{c.PROJECT_NAME}:knative.manageConfig: true so the stack raises Knative's maximum to "
                "platform.maxRequestTimeout",
                resource.urn,
            )


def _knative_max_timeout(args: StackArgs, report: Report) -> tuple[int | None, str]:
    for resource in args.resources:
        token = resource.resource_type
        if not (is_kind(token, "core", "ConfigMap", patch=True) or is_kind(token, "core", "ConfigMap")):
            continue
        props = props_of(resource)
        if dig(props, "metadata", "name") != KNATIVE_CONFIG_DEFAULTS:
            continue
        value = dig(props, "data", KNATIVE_MAX_REVISION_TIMEOUT)
        if value is None:
            continue
        if value is UNKNOWN:
            return None, ""
        limit = whole_number(value)
        if limit is None or limit <= 0:
            report(
                f"data['{KNATIVE_MAX_REVISION_TIMEOUT}'] is {_value(value)}, not a positive whole "
                "number of seconds",
                resource.urn,
            )
            return None, ""
        namespace = dig(props, "metadata", "namespace")
        where = f"{namespace}/" if isinstance(namespace, str) and namespace else ""
        return limit, f"{token.rsplit(':', 1)[-1]} {where}{KNATIVE_CONFIG_DEFAULTS}"
    setting = whole_number(args.get_config().get(SETTING_MAX_TIMEOUT, KNATIVE_DEFAULT_MAX_TIMEOUT_S))
    return setting, f"the policy setting {SETTING_MAX_TIMEOUT}"


def _value(value: object) -> str:
    return "missing" if value is None else shown(value)
