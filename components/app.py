"""``FlyteApp``: one Flyte app as a Knative Service custom resource."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_kubernetes.apiextensions import CustomResource

from components.adopt import kservice_options
from flyte_apps.core import constants as c
from flyte_apps.core.plan import AppPlan

ReaperFactory = Callable[[str, AppPlan, pulumi.ResourceOptions], pulumi.Resource]
"""Registers a stopped app's reaper (name, app, options): the program's dynamic resource, or the
component package's own custom resource."""


@dataclass(frozen=True)
class FlyteAppArgs:
    """Inputs of a ``FlyteApp``."""

    plan: AppPlan
    """The app's rendered KService and outputs, from ``flyte_apps.core.plan.plan_stack``."""
    reaper: ReaperFactory | None = None
    """When set and the app is stopped, registers the app's reaper after its KService; None (render
    mode) registers nothing that talks to a cluster."""
    admitted_after: Sequence[pulumi.CustomResource] = ()
    """Knative settings patches Knative's webhook needs applied before it admits this KService (its
    feature flags, its timeout's maximum, a zero initial scale). While one of them is being created in
    a preview (it has no ID yet), the KService's annotations are unknown, so pulumi-kubernetes skips
    the dry run the webhook would refuse (a patch that changes is replaced, so it is created again)."""


class FlyteApp(pulumi.ComponentResource):
    """A Flyte app deployed the way Flyte's app service deploys it."""

    kservice: CustomResource
    """The Knative Service (``serving.knative.dev/v1``)."""
    reaper: pulumi.Resource | None
    """Present only while the app is stopped (and not in render mode)."""
    plan: AppPlan
    """What the outputs below are made from (already planned: every value is known)."""

    def __init__(self, name: str, args: FlyteAppArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(c.TYPE_FLYTE_APP, name, None, opts)
        plan = args.plan
        manifest = plan.kservice
        metadata: dict[str, Any] = manifest["metadata"]
        if args.admitted_after:
            # Only the annotations wait: an unknown name would make the preview show a replacement.
            annotations = metadata["annotations"]
            waited = pulumi.Output.all(*(patch.id for patch in args.admitted_after)).apply(
                lambda _: annotations
            )
            metadata = {**metadata, "annotations": waited}
        self.kservice = CustomResource(
            f"{name}-kservice",
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=metadata,
            spec=manifest["spec"],
            # One merge: the parent, and adoption's import option when `adopt: true`.
            opts=pulumi.ResourceOptions.merge(opts, kservice_options(plan, self)),
        )
        self.reaper = None
        if plan.config.input.stopped and args.reaper is not None:
            self.reaper = args.reaper(
                f"{name}-reaper", plan, pulumi.ResourceOptions(parent=self, depends_on=[self.kservice])
            )
        self.plan = plan
        # Plain values: they are known at plan time, and the engine records the same outputs as from
        # ``Output``s, without five futures per app (a stack of thousands of apps felt them).
        self.register_outputs(
            {
                c.OUTPUT_KSERVICE_NAME: plan.kservice_name,
                c.OUTPUT_NAMESPACE: plan.namespace,
                c.OUTPUT_PUBLIC_URL: plan.public_url,
                c.OUTPUT_INTERNAL_URL: plan.internal_url,
                c.OUTPUT_SPEC_SHA: plan.blob.sha,
            }
        )

    # The typed outputs are made when asked for: a program rarely reads them (the stack export uses
    # the plan's plain values), and each ``Output`` costs futures and a task in the SDK's loop.

    @property
    def kservice_name(self) -> pulumi.Output[str]:
        """The KService name (Flyte's ``KServiceName``)."""
        return pulumi.Output.from_input(self.plan.kservice_name)

    @property
    def namespace(self) -> pulumi.Output[str]:
        return pulumi.Output.from_input(self.plan.namespace)

    @property
    def public_url(self) -> pulumi.Output[str | None]:
        """The public URL, or None for a cluster-local app or without a base domain."""
        return pulumi.Output.from_input(self.plan.public_url)

    @property
    def internal_url(self) -> pulumi.Output[str]:
        return pulumi.Output.from_input(self.plan.internal_url)

    @property
    def spec_sha(self) -> pulumi.Output[str]:
        """``flyte.org/spec-sha`` of the app's spec."""
        return pulumi.Output.from_input(self.plan.blob.sha)
