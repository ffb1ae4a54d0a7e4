"""Rules of custom domains (``ingress.subdomain``, ``ingress.cname``, ``ingress.tlsSecret``): each host
is a DNS name Knative can map, and no host is claimed twice in the stack, by two apps or by an app and
another app's default ``<ksvc>.<baseDomain>`` host (Knative routes that one to its KService already).

The hosts themselves (``custom_hosts``) are what ``flyte_apps.core.domains`` renders DomainMappings
and ClusterDomainClaims for; both modules read them from here so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import shown
from flyte_apps.core.config.keys import KEY_PLATFORM, PREFIX
from flyte_apps.core.config.models import AppConfig, Ingress, PlatformConfig
from flyte_apps.core.config.names import DNS1123_LABEL, MAX_LABEL_LEN, MAX_SUBDOMAIN_LEN, is_subdomain
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.naming import kservice_name

KEY_SUBDOMAIN: Final = "subdomain"
KEY_CNAME: Final = "cname"


@dataclass(frozen=True)
class CustomHost:
    """A host an app asks for, and the config key that asks for it."""

    host: str
    key: str
    """``subdomain`` or ``cname``."""


def custom_hosts(ingress: Ingress | None, base_domain: str) -> tuple[CustomHost, ...]:
    """The app's custom hosts in the spec's field order: ``<subdomain>.<baseDomain>``, then the cname.
    A subdomain without a base domain has no host (a config error of its own)."""
    if ingress is None:
        return ()
    hosts = []
    if ingress.subdomain and base_domain:
        hosts.append(CustomHost(f"{ingress.subdomain}.{base_domain}", KEY_SUBDOMAIN))
    if ingress.cname:
        hosts.append(CustomHost(ingress.cname, KEY_CNAME))
    return tuple(hosts)


def is_host(value: str) -> bool:
    """A fully qualified DNS name Knative accepts as a DomainMapping's name: lower-case labels of
    letters, digits and ``-``, at least two of them, at most 253 characters, no wildcard."""
    return (
        "." in value
        and is_subdomain(value)
        and all(len(label) <= MAX_LABEL_LEN for label in value.split("."))
    )


def ingress_problems(
    fields: Mapping[str, Any], path: str, platform: PlatformConfig | None
) -> list[ConfigProblem]:
    """The rules of one app's ``ingress`` (by field name of the app), when it has one."""
    ingress = fields.get("ingress")
    if not isinstance(ingress, Ingress):
        return []
    where = f"{path}.ingress"
    base_domain = platform.settings.base_domain if platform is not None else ""
    found: list[ConfigProblem] = []
    subdomain = ingress.subdomain
    if subdomain:
        if len(subdomain) > MAX_LABEL_LEN or not DNS1123_LABEL.fullmatch(subdomain):
            found.append(
                ConfigProblem(
                    f"{where}.subdomain",
                    f"{shown(subdomain)} is not a DNS label (lower-case letters, digits and '-', at most "
                    f"{MAX_LABEL_LEN} characters); the host is <subdomain>.<baseDomain>",
                )
            )
        elif not base_domain:
            found.append(
                ConfigProblem(
                    f"{where}.subdomain",
                    f"needs {PREFIX}{KEY_PLATFORM}.baseDomain: the custom host is <subdomain>.<baseDomain>",
                )
            )
        elif len(subdomain) + 1 + len(base_domain) > MAX_SUBDOMAIN_LEN:
            found.append(
                ConfigProblem(
                    f"{where}.subdomain",
                    f"{shown(subdomain)}.{base_domain} is longer than a DNS name may be "
                    f"({MAX_SUBDOMAIN_LEN} characters)",
                )
            )
    if ingress.cname:
        found.extend(_cname_problems(ingress.cname, f"{where}.cname"))
    if ingress.tls_secret is not None:
        if not subdomain and not ingress.cname:
            found.append(
                ConfigProblem(f"{where}.tlsSecret", "serves only custom hosts: set subdomain or cname too")
            )
        elif not is_subdomain(ingress.tls_secret):
            found.append(
                ConfigProblem(
                    f"{where}.tlsSecret",
                    f"{shown(ingress.tls_secret)} is not a valid Kubernetes Secret name",
                )
            )
    return found


def _cname_problems(cname: str, path: str) -> list[ConfigProblem]:
    if not is_host(cname):
        return [
            ConfigProblem(
                path,
                f"{shown(cname)} is not a DNS name Knative can map (lower-case letters, digits, '-' and "
                "'.', at least two labels, no wildcard, such as churn.acme.dev)",
            )
        ]
    if cname == c.CLUSTER_LOCAL_DOMAIN or cname.endswith(f".{c.CLUSTER_LOCAL_DOMAIN}"):
        return [
            ConfigProblem(
                path,
                f"{shown(cname)} is in the cluster's own domain ({c.CLUSTER_LOCAL_DOMAIN}), which resolves "
                "only inside the cluster; a custom domain is for clients outside it",
            )
        ]
    return []


def custom_host_problems(apps: Sequence[AppConfig], platform: PlatformConfig) -> list[ConfigProblem]:
    """No host twice: a custom host of two apps (or twice in one app), or a custom host that is another
    app's default host ``<ksvc>.<baseDomain>``; each problem names both apps."""
    base_domain = platform.settings.base_domain
    found: list[ConfigProblem] = []
    defaults: dict[str, AppConfig] = {}
    if base_domain:
        for app in apps:
            name = kservice_name(project=app.id.project, domain=app.id.domain, name=app.id.name)
            defaults[f"{name}.{base_domain}".lower()] = app
    claimed: dict[str, tuple[AppConfig, str]] = {}
    for app in apps:
        for host in custom_hosts(app.input.ingress, base_domain):
            where = f"{app.path}.ingress.{host.key}"
            owner = defaults.get(host.host)
            if owner is not None:
                whose = "its own KService" if owner is app else f"app {owner.id} (at {owner.path})"
                found.append(
                    ConfigProblem(
                        where,
                        f"host '{host.host}' of app {app.id} is the default host of {whose}: Knative "
                        "already routes it there",
                    )
                )
                continue
            first = claimed.get(host.host)
            if first is not None:
                other, other_path = first
                found.append(
                    ConfigProblem(
                        where,
                        f"host '{host.host}' of app {app.id} is also a custom host of app {other.id} "
                        f"(at {other_path}); a host maps to one app",
                    )
                )
                continue
            claimed[host.host] = (app, where)
    return found
