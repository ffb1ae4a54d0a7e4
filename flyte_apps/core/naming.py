"""Names and URLs of an app, exactly as Flyte's app service derives them (reference (c)1, 2, 12)."""

from __future__ import annotations

import hashlib

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
