"""Names and URLs of an app, exactly as Flyte's app service derives them (reference (c)1, 2, 12)."""

from __future__ import annotations

import hashlib
import re

from flyte_apps.core import constants as c

_HASHED_PREFIX_LEN = 54  # 54 + "-" + 8 hex chars = 63


def kservice_name(*, project: str, domain: str, name: str) -> str:
    """Flyte's ``KServiceName``: ``name-project-domain`` lower-cased, hashed down to 63 characters.

    Not injective (upstream bug (j)1); the config pass refuses stacks where two apps collide.
    """
    raw = f"{name}-{project}-{domain}".lower()
    if len(raw.encode()) <= c.MAX_KSERVICE_NAME_LEN:
        return raw
    digest = hashlib.sha256(f"{project}/{domain}/{name}".encode()).hexdigest()[:8]
    prefix = raw.encode()[:_HASHED_PREFIX_LEN].decode(errors="ignore")
    return f"{prefix}-{digest}"


def is_hashed(*, project: str, domain: str, name: str) -> bool:
    """True when the KService name is the hashed fallback (so the endpoint pattern cannot reach it)."""
    return len(f"{name}-{project}-{domain}".lower().encode()) > c.MAX_KSERVICE_NAME_LEN


def namespaced_suffix(template: str, *, project: str, domain: str) -> str:
    """Flyte's ``renderNamespacedSuffix``: only the exact tokens ``{{ project }}``/``{{ domain }}``."""
    return template.replace(c.SUFFIX_TOKEN_PROJECT, project.lower()).replace(
        c.SUFFIX_TOKEN_DOMAIN, domain.lower()
    )


def endpoint_pattern(template: str, *, project: str, domain: str, namespace: str) -> str:
    """Value of ``INTERNAL_APP_ENDPOINT_PATTERN``; ``{app_fqdn}`` is left for app code to fill in."""
    suffix = namespaced_suffix(template, project=project, domain=domain)
    return f"http://{c.APP_FQDN_PLACEHOLDER}-{suffix}.{namespace}.svc.cluster.local"


def public_url(*, ksvc: str, base_domain: str, scheme: str, ingress_apps_port: int) -> str | None:
    """Flyte's ``PublicIngress``: none without a base domain; the port is appended whenever non-zero."""
    if not base_domain:
        return None
    host = f"{ksvc}.{base_domain}".lower()
    url = f"{scheme or 'https'}://{host}"
    return f"{url}:{ingress_apps_port}" if ingress_apps_port else url


def internal_url(*, ksvc: str, namespace: str) -> str:
    """The cluster-local address Knative gives every KService."""
    return f"http://{ksvc}.{namespace}.svc.cluster.local"


_CHILD_NAME_MAX = 63
"""The longest Kubernetes object name Knative's ``kmeta.ChildName`` writes."""
_CHILD_NAME_HEAD = _CHILD_NAME_MAX - 32
"""What ``ChildName`` keeps of a parent it shortens: the rest is the 32 hex digits of an MD5 sum."""
_TRAILING_NON_ALPHANUMERIC = re.compile(r"[^a-zA-Z0-9]+\Z")
REVISION_SUFFIX_DIGITS = 5
"""Knative names a Configuration's revision ``<configuration>-<generation, at least 5 digits>``."""


def knative_child_name(parent: str, suffix: str) -> str:
    """Knative's ``kmeta.ChildName`` (knative.dev/pkg): ``parent + suffix`` when that fits 63 characters;
    else the parent shortened with the MD5 sum of it (or, for a suffix of 31 characters or more, of
    ``parent + suffix``) in hex, then the suffix, cut and stripped of trailing non-alphanumerics to fit.
    The MD5 sum names, it does not protect. Kubernetes names are ASCII, so characters are bytes."""
    if len(parent) <= _CHILD_NAME_MAX - len(suffix):
        return parent + suffix
    if _CHILD_NAME_HEAD - len(suffix) > 0:
        digest = hashlib.md5(parent.encode(), usedforsecurity=False).hexdigest()
        return parent[: _CHILD_NAME_HEAD - len(suffix)] + digest + suffix
    digest = hashlib.md5((parent + suffix).encode(), usedforsecurity=False).hexdigest()
    name = parent[:_CHILD_NAME_HEAD] + digest
    name += suffix[: max(0, _CHILD_NAME_MAX - len(name))]
    return _TRAILING_NON_ALPHANUMERIC.sub("", name)


def revision_name(configuration: str, generation: int) -> str:
    """The name Knative Serving gives the revision a Configuration's ``generation`` creates (when its
    template names none): ``kmeta.ChildName(configuration, "-%05d" % generation)``. A KService's
    Configuration has the KService's name."""
    return knative_child_name(configuration, f"-{generation:0{REVISION_SUFFIX_DIGITS}d}")
