"""``FlyteApp``: one Flyte app as a Knative Service custom resource."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_kubernetes.apiextensions import CustomResource

from components.reaper import RevisionReaper, RevisionReaperArgs
from flyte_apps.core import constants as c
from flyte_apps.core.plan import AppPlan


@dataclass(frozen=True)
class FlyteAppArgs:
    """Inputs of a ``FlyteApp``."""

    plan: AppPlan
    """The app's rendered KService and outputs, from ``flyte_apps.core.plan.plan_stack``."""
    reaper_timeout_seconds: float | None = None
    """When set and the app is stopped, add a ``RevisionReaper`` with this bound; None (render
    mode) registers nothing that talks to a cluster."""


class FlyteApp(pulumi.ComponentResource):
    """A Flyte app deployed the way Flyte's app service deploys it."""

    kservice: CustomResource
    """The Knative Service (``serving.knative.dev/v1``)."""
    kservice_name: pulumi.Output[str]
    """The KService name (Flyte's ``KServiceName``)."""
    namespace: pulumi.Output[str]
    public_url: pulumi.Output[str | None]
    """The public URL, or None for a cluster-local app or without a base domain."""
    internal_url: pulumi.Output[str]
    spec_sha: pulumi.Output[str]
    """``flyte.org/spec-sha`` of the app's spec."""
    reaper: RevisionReaper | None
    """Present only while the app is stopped (and not in render mode)."""

    def __init__(self, name: str, args: FlyteAppArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(c.TYPE_FLYTE_APP, name, None, opts)
        plan = args.plan
        manifest = plan.kservice
        child = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=self))
        self.kservice = CustomResource(
            f"{name}-kservice",
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=child,
        )
        self.reaper = None
        if plan.config.input.stopped and args.reaper_timeout_seconds is not None:
            self.reaper = RevisionReaper(
                f"{name}-reaper",
                RevisionReaperArgs(
                    namespace=plan.namespace,
                    kservice_name=plan.kservice_name,
                    spec_sha=plan.blob.sha,
                    timeout_seconds=args.reaper_timeout_seconds,
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.kservice]),
            )
        self.kservice_name = pulumi.Output.from_input(plan.kservice_name)
        self.namespace = pulumi.Output.from_input(plan.namespace)
        self.public_url = pulumi.Output.from_input(plan.public_url)
        self.internal_url = pulumi.Output.from_input(plan.internal_url)
        self.spec_sha = pulumi.Output.from_input(plan.blob.sha)
        self.register_outputs(
            {
                "kserviceName": self.kservice_name,
                "namespace": self.namespace,
                "publicUrl": self.public_url,
                "internalUrl": self.internal_url,
                "specSha": self.spec_sha,
            }
        )
