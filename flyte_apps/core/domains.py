"""Pure: an app's custom domains (``ingress.subdomain``, ``ingress.cname``) as Knative objects.

Flyte's app service stores both fields and ignores them ((j)10). Here each custom host becomes:

- a ``DomainMapping`` (``serving.knative.dev/v1beta1``) named after the host, in the apps' namespace,
  whose ``ref`` is the app's KService, with ``spec.tls.secretName`` from ``ingress.tlsSecret``. Only
  for a public app that is running: a DomainMapping makes its target reachable from outside even when
  the KService is cluster-local, so a stopped or cluster-local app gets none;
- unless ``platform.domainClaims`` is false, a ``ClusterDomainClaim``
  (``networking.internal.knative.dev/v1alpha1``, cluster-scoped) that lets the apps' namespace map the
  host: a DomainMapping becomes Ready only once its host is claimed for its namespace. The claim is
  rendered for every host the stack declares, the app stopped or not: it exposes nothing, and the
  program keeps it on delete, so one dropped while an app is stopped would be left behind in the
  cluster and refused as already existing when the app starts again.

The custom URLs are what the mappings serve: ``https`` with a TLS secret, else the platform's scheme,
and the platform's ``ingressAppsPort`` as for the default URL (the same ingress serves both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from flyte_apps.core import constants as c
from flyte_apps.core.config.domain_rules import custom_hosts
from flyte_apps.core.config.models import AppConfig, PlatformConfig
from flyte_apps.core.objects import Manifest

HTTPS: Final = "https"


@dataclass(frozen=True)
class CustomDomains:
    """An app's custom hosts and the objects and URLs made from them (all empty without any)."""

    hosts: tuple[str, ...] = ()
    """Every custom host the app declares, mapped or not."""
    mappings: tuple[Manifest, ...] = ()
    """One DomainMapping per host while the app is public and running."""
    claims: tuple[Manifest, ...] = ()
    """One ClusterDomainClaim per host (none with ``platform.domainClaims: false``)."""
    urls: tuple[str, ...] = ()
    """What the mappings serve, in the order of ``mappings``."""


def build_custom_domains(app: AppConfig, platform: PlatformConfig, kservice: str) -> CustomDomains:
    """The custom domains of ``app``, whose KService is named ``kservice``."""
    settings = platform.settings
    hosts = tuple(host.host for host in custom_hosts(app.input.ingress, settings.base_domain))
    if not hosts:
        return CustomDomains()
    ingress = app.input.ingress
    tls_secret = ingress.tls_secret if ingress is not None else None
    exposed = app.public and not app.input.stopped
    mappings = (
        tuple(build_domain_mapping(host, app, settings.namespace, kservice, tls_secret) for host in hosts)
        if exposed
        else ()
    )
    claims = (
        tuple(build_domain_claim(host, settings.namespace) for host in hosts)
        if settings.domain_claims
        else ()
    )
    scheme = HTTPS if tls_secret else settings.scheme
    urls = tuple(custom_url(host, scheme, settings.ingress_apps_port) for host in hosts) if exposed else ()
    return CustomDomains(hosts=hosts, mappings=mappings, claims=claims, urls=urls)


def build_domain_mapping(
    host: str, app: AppConfig, namespace: str, kservice: str, tls_secret: str | None
) -> Manifest:
    """``host`` -> the app's KService; labelled with the app's identity, as its KService is."""
    spec: Manifest = {
        "ref": {
            "apiVersion": c.KNATIVE_API_VERSION,
            "kind": c.KSERVICE_KIND,
            "name": kservice,
            "namespace": namespace,
        }
    }
    if tls_secret:
        spec["tls"] = {"secretName": tls_secret}
    return {
        "apiVersion": c.DOMAIN_MAPPING_API_VERSION,
        "kind": c.DOMAIN_MAPPING_KIND,
        "metadata": {
            "name": host,
            "namespace": namespace,
            "labels": {
                c.LABEL_PROJECT: app.id.project,
                c.LABEL_DOMAIN: app.id.domain,
                c.LABEL_APP_NAME: app.id.name,
                c.LABEL_MANAGED_BY: c.MANAGED_BY_PULUMI,
            },
        },
        "spec": spec,
    }


def build_domain_claim(host: str, namespace: str) -> Manifest:
    """Lets ``namespace`` map ``host``: a ``ClusterDomainClaim``, cluster-scoped, named by the host."""
    return {
        "apiVersion": c.DOMAIN_CLAIM_API_VERSION,
        "kind": c.DOMAIN_CLAIM_KIND,
        "metadata": {"name": host, "labels": {c.LABEL_MANAGED_BY: c.MANAGED_BY_PULUMI}},
        "spec": {"namespace": namespace},
    }


def custom_url(host: str, scheme: str, ingress_apps_port: int) -> str:
    """The URL a mapping of ``host`` serves, built like Flyte's ``PublicIngress`` builds the default one."""
    url = f"{scheme}://{host}"
    return f"{url}:{ingress_apps_port}" if ingress_apps_port else url
