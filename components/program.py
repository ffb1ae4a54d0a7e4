"""The whole program, given already-read config: provider, namespace, apps, exports."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from components.adopt import upsert_provider, upserts
from components.app import FlyteApp, FlyteAppArgs, ReaperFactory
from components.domains import register_custom_domains
from components.reaper import RevisionReaper, RevisionReaperArgs, stack_cluster
from flyte_apps.core.durations import NANOS_PER_SECOND
from flyte_apps.core.knative_features import ENABLED_BY_DEFAULT
from flyte_apps.core.knative_settings import (
    KNATIVE_CONFIG_FEATURES,
    admission_settings,
    disabled_flag_problems,
)
from flyte_apps.core.plan import AppPlan, StackPlan

PROVIDER_NAME = "kubernetes"
NAMESPACE_NAME = "apps-namespace"
MANAGER_NAME = "flyte-manager"


@dataclass(frozen=True)
class ClusterSettings:
    """The stack's ``kubernetes:kubeconfig``/``kubernetes:context``, as pulumi-kubernetes reads them."""

    kubeconfig: str | None = None
    context: str | None = None
    secret: bool = False
    """The stack keeps either setting secret (``pulumi config set --secret``): so is the reapers' record
    of it."""

    def record(self, working_directory: Path) -> pulumi.Input[dict[str, Any]]:
        """The reapers' ``cluster`` input: ``stack_cluster`` in the program's working directory (the
        engine runs the program, and pulumi-kubernetes, in the project's)."""
        cluster = stack_cluster(self.kubeconfig, self.context, working_directory)
        return pulumi.Output.secret(cluster) if self.secret else cluster


EXIT_STOPPED_BY_ENGINE: Final = 128 + signal.SIGINT
"""The shell's code for a process ended by SIGINT."""


def exit_quietly_when_stopped() -> None:
    """When the engine stops the program (a resource failed, or the user pressed Ctrl-C), the language
    host sends it SIGINT. Python's default answer is a KeyboardInterrupt raised wherever the program
    happens to be, and the SDK's threads and event loop print its traceback beside the engine's own
    message, which already says what failed. The program has nothing left to do: it leaves at once."""

    def leave(_signum: int, _frame: object) -> None:
        os._exit(EXIT_STOPPED_BY_ENGINE)

    signal.signal(signal.SIGINT, leave)


def deploy(plan: StackPlan, cluster: ClusterSettings) -> dict[str, FlyteApp]:
    """Register every object of ``plan``; returns the app components by ``project/domain/name``.

    The plan's warnings go to the Pulumi log (``render`` prints the same ones)."""
    for warning in plan.warnings:
        pulumi.log.warn(warning)
    settings = plan.platform.settings
    if plan.config.knative is None and not settings.render_yaml_to_directory:
        refuse_disabled_flags(plan, cluster)
    provider = k8s.Provider(
        PROVIDER_NAME,
        kubeconfig=cluster.kubeconfig,
        context=cluster.context,
        cluster_identifier=settings.cluster_identifier,
        render_yaml_to_directory=settings.render_yaml_to_directory or None,
    )
    # In render mode nothing may talk to a cluster, so stopped apps get no reaper.
    reaper = (
        None
        if settings.render_yaml_to_directory
        else dynamic_reaper(settings.reaper_timeout, cluster.record(Path.cwd()))
    )
    # `adopt: upsert` apps go through a provider that updates their existing KService in place.
    upsert = (
        upsert_provider(cluster.kubeconfig, cluster.context, settings.cluster_identifier)
        if any(upserts(app) for app in plan.apps)
        else None
    )
    apps = register_stack(
        plan,
        pulumi.ResourceOptions(provider=provider),
        reaper=reaper,
        app_provider=lambda app: upsert if upsert is not None and upserts(app) else provider,
    )
    pulumi.export("apps", stack_exports(plan))
    if plan.manager:
        # Imported only when used: the manager's resource types cost time and memory to load.
        from components.manager import FlyteManager, FlyteManagerArgs

        manager = FlyteManager(
            MANAGER_NAME,
            FlyteManagerArgs(objects=plan.manager),
            opts=pulumi.ResourceOptions(provider=provider, depends_on=[apps.namespace]),
        )
        pulumi.export("managerRunsUrl", manager.runs_url)
        pulumi.export("managerQueueUrl", manager.queue_url)
    return apps.apps


FEATURES_READ_ATTEMPTS: Final = 2
FEATURES_READ_TIMEOUT_S: Final = 15.0
"""One read of Knative's config-features before anything is registered: short, as a preview against
an unreachable cluster must not wait long for a check pulumi-kubernetes then makes anyway."""


def refuse_disabled_flags(plan: StackPlan, cluster: ClusterSettings) -> None:
    """When this program does not manage Knative's settings, an app whose pod spec needs a feature flag
    the live ``config-features`` leaves off is refused here, one line per app naming the flags and the
    setting that enables them, before anything is registered; otherwise Knative's webhook refuses the
    KService (a preview's dry run included) in its own words. A cluster that cannot be read is left to
    pulumi-kubernetes, which says why."""
    needing = [
        app for app in plan.apps if any(use.flag not in ENABLED_BY_DEFAULT for use in app.feature_flags)
    ]
    if not needing:
        return
    # Imported only when used: the Kubernetes client costs the program time to load.
    from flyte_apps.kube.api import config_map_data
    from flyte_apps.kube.errors import KubeError
    from flyte_apps.kube.retry import RetryPolicy
    from flyte_apps.kube.target import KubeTarget, build_api_client

    namespace = plan.config.knative_namespace
    read = RetryPolicy(attempts=FEATURES_READ_ATTEMPTS, timeout=FEATURES_READ_TIMEOUT_S)
    try:
        api = build_api_client(stack=KubeTarget(cluster.kubeconfig, cluster.context))
        live = config_map_data(api, namespace=namespace, name=KNATIVE_CONFIG_FEATURES, retry=read)
    except KubeError as exc:
        pulumi.log.debug(f"Knative's feature flags not checked: {exc}")
        return
    problems = disabled_flag_problems(needing, live, namespace)
    for problem in problems:
        pulumi.log.error(str(problem))
    if problems:
        msg = f"{len(problems)} app(s) need Knative feature flags left off: nothing was registered"
        raise pulumi.RunError(msg)


def dynamic_reaper(timeout_nanos: int, cluster: pulumi.Input[dict[str, Any]]) -> ReaperFactory:
    """Stopped apps' reapers as the program's dynamic resource (``cluster``: the stack's, recorded)."""

    def make(name: str, app: AppPlan, opts: pulumi.ResourceOptions) -> pulumi.Resource:
        return RevisionReaper(
            name,
            RevisionReaperArgs(
                namespace=app.namespace,
                kservice_name=app.kservice_name,
                spec_sha=app.blob.sha,
                timeout_seconds=timeout_nanos / NANOS_PER_SECOND,
                cluster=cluster,
            ),
            opts=opts,
        )

    return make


@dataclass(frozen=True)
class RegisteredStack:
    namespace: pulumi.CustomResource
    apps: dict[str, FlyteApp]
    """By ``project/domain/name``."""


def register_stack(
    plan: StackPlan,
    opts: pulumi.ResourceOptions,
    *,
    reaper: ReaperFactory | None,
    app_provider: Callable[[AppPlan], pulumi.ProviderResource | None] = lambda _: None,
) -> RegisteredStack:
    """The namespace, Knative's config patches, every app and its custom domains, with ``opts`` (the
    program's provider, or a package component as the parent).

    Every app waits for the namespace and for Knative's config patches: a revision whose timeout or
    feature flags a patch allows would otherwise race the patch and be refused by Knative's admission."""
    namespace = register_namespace(plan, opts)
    knative: dict[str, pulumi.CustomResource] = {}
    if plan.knative:
        # Imported only when used, as the manager's types.
        from components.knative import register_knative_config

        knative = register_knative_config(plan.knative, opts)
    apps = {}
    for app in plan.apps:
        provider = app_provider(app)
        app_opts = pulumi.ResourceOptions(depends_on=[namespace, *knative.values()], provider=provider)
        flags = [use.flag for use in app.feature_flags]
        admitted_after = [
            knative[name] for name in sorted(admission_settings(app.kservice, flags)) if name in knative
        ]
        apps[app.key] = FlyteApp(
            app.kservice_name,
            FlyteAppArgs(plan=app, reaper=reaper, admitted_after=admitted_after),
            opts=pulumi.ResourceOptions.merge(opts, app_opts),
        )
        # Beside the app, not inside it: a DomainMapping is the app's route, not part of its KService.
        register_custom_domains(app.domains, apps[app.key], app.kservice_name, opts)
    return RegisteredStack(namespace, apps)


def register_namespace(plan: StackPlan, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """Create the namespace, or patch an existing one (``adoptNamespace``) so it is not ours to delete."""
    settings = plan.platform.settings
    metadata = plan.namespace.manifest["metadata"]
    # The typed classes, not a lighter registration of our own: loading pulumi_kubernetes.core.v1
    # costs about 0.7 s per run, and their registration is the provider package's public API.
    from pulumi_kubernetes.core.v1 import Namespace, NamespacePatch

    if settings.adopt_namespace:
        return NamespacePatch(
            NAMESPACE_NAME,
            metadata=metadata,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(retain_on_delete=True)),
        )
    return Namespace(
        NAMESPACE_NAME,
        metadata=metadata,
        opts=pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(retain_on_delete=settings.retain_namespace)
        ),
    )


def stack_exports(plan: StackPlan) -> dict[str, dict[str, Any]]:
    """The stack export ``apps``: ``project/domain/name`` -> the app's names, URLs (its custom ones
    included) and spec sha.

    Plain values from the plan (the same the components expose as outputs): one ``Output.all`` per
    app would cost more than the rest of the export on a stack of thousands of apps."""
    return {app.key: app.exports() for app in plan.apps}
