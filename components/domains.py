"""``CustomDomains``: an app's custom domains as Knative ``DomainMapping`` and ``ClusterDomainClaim``
custom resources, registered from the manifests ``flyte_apps.core.domains`` builds (what ``render``
prints), next to the app's ``FlyteApp``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import pulumi
from pulumi_kubernetes.apiextensions import CustomResource

from flyte_apps.core import constants as c
from flyte_apps.core.domains import CustomDomains as Domains
from flyte_apps.core.objects import Manifest

NAME_SUFFIX: Final = "-domains"
"""A ``CustomDomains`` is named ``<kservice name>-domains``."""


@dataclass(frozen=True)
class CustomDomainsArgs:
    """Inputs of a ``CustomDomains``."""

    domains: Domains
    """The app's mappings and claims, from ``flyte_apps.core.plan`` (``AppPlan.domains``)."""
    app: pulumi.Resource
    """The app's ``FlyteApp``: the mappings wait for its KService."""


class CustomDomains(pulumi.ComponentResource):
    """The DomainMappings (a public, running app) and ClusterDomainClaims of one app's custom hosts."""

    claims: dict[str, CustomResource]
    """By host. Kept on delete, like the Knative patches: the claim may outlive the stack."""
    mappings: dict[str, CustomResource]
    """By host; each waits for the app and for its host's claim."""
    domains: Domains
    """What the outputs are made from (already planned: every value is known)."""

    def __init__(
        self, name: str, args: CustomDomainsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(c.TYPE_CUSTOM_DOMAINS, name, None, opts)
        child = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=self))
        self.claims = {}
        for manifest in args.domains.claims:
            host = manifest["metadata"]["name"]
            self.claims[host] = _custom_resource(
                manifest, pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(retain_on_delete=True))
            )
        self.mappings = {}
        for manifest in args.domains.mappings:
            host = manifest["metadata"]["name"]
            waits_for: list[pulumi.Resource] = [args.app]
            if host in self.claims:
                waits_for.append(self.claims[host])
            self.mappings[host] = _custom_resource(
                manifest, pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=waits_for))
            )
        self.domains = args.domains
        self.register_outputs(
            {c.OUTPUT_CUSTOM_URLS: list(args.domains.urls), "hosts": list(args.domains.hosts)}
        )

    @property
    def custom_urls(self) -> pulumi.Output[list[str]]:
        """The URLs the mappings serve (empty while the app is stopped or cluster-local)."""
        return pulumi.Output.from_input(list(self.domains.urls))


def _custom_resource(manifest: Manifest, opts: pulumi.ResourceOptions) -> CustomResource:
    """The object as it is: the logical name is the host (unique in the stack, a config rule)."""
    return CustomResource(
        manifest["metadata"]["name"],
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=opts,
    )


def register_custom_domains(
    domains: Domains, app: pulumi.Resource, kservice_name: str, opts: pulumi.ResourceOptions
) -> CustomDomains | None:
    """A ``CustomDomains`` for an app that declares custom hosts; None for one that declares none."""
    if not domains.hosts:
        return None
    return CustomDomains(
        f"{kservice_name}{NAME_SUFFIX}", CustomDomainsArgs(domains=domains, app=app), opts=opts
    )
