"""The component package's provider: ``FlyteApp``, ``FlyteApps`` and the ``RevisionReaper`` they use.

The engine starts it from ``components/plugin`` (``pulumi package add``; any Pulumi language) and calls
``Construct`` for the two components, ``Check``/``Diff``/``Create``/``Update``/``Delete`` for the reaper,
and ``GetSchema`` for the SDKs (the schema is ``components.schema``'s, translated from the stack config's
models; ``components/plugin/schema.json`` is its committed copy).

Inputs are planned by ``flyte_apps.core.package_inputs`` (``plan_stack``, as for a stack file) and
registered by the same components as the stack-config program's (``components.app``,
``components.program.register_stack``), under the consumer's Kubernetes provider: no provider of the
package's own, no ambient cluster. Problems reach the consumer as the engine's invalid-inputs error, one
line per input path.

Stopping is the package's own custom resource (``flyte:apps:RevisionReaper``), served by this same
provider: the program's dynamic provider cannot run in another language's interpreter. Its cluster is
the component's ``kubeconfig``/``context`` inputs, else the package's ``flyte:kubeconfig``/``flyte:context``
setting; a stopped app without either is refused rather than stopped wherever KUBECONFIG points.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import pulumi
from pulumi.errors import InputPropertiesError, InputPropertyErrorDetails
from pulumi.output import UNKNOWN
from pulumi.provider.experimental.property_value import Computed, PropertyValue
from pulumi.provider.experimental.provider import (
    CheckRequest,
    CheckResponse,
    ConfigureRequest,
    ConfigureResponse,
    ConstructRequest,
    ConstructResponse,
    CreateRequest,
    CreateResponse,
    DeleteRequest,
    DiffRequest,
    DiffResponse,
    GetSchemaRequest,
    GetSchemaResponse,
    Provider,
    UpdateRequest,
    UpdateResponse,
)
from pulumi_kubernetes.apiextensions import CustomResource

from components import schema
from components.app import FlyteApp, FlyteAppArgs, ReaperFactory
from components.domains import register_custom_domains
from components.program import register_stack
from flyte_apps.core import constants as c
from flyte_apps.core.bounds import bounded
from flyte_apps.core.durations import NANOS_PER_SECOND
from flyte_apps.core.errors import ConfigError, ConfigProblem, FlyteAppsError
from flyte_apps.core.kubeconfig import is_kubeconfig_path
from flyte_apps.core.package_inputs import (
    UNKNOWN_PLACEHOLDER,
    Inputs,
    PackagePlan,
    plan_app_inputs,
    plan_stack_inputs,
)
from flyte_apps.core.plan import AppPlan, StackPlan
from flyte_apps.core.reaping import ReaperKeys, StopFailed, diff_stop

CONFIG_KUBECONFIG: Final = f"{c.PACKAGE_NAME}:{schema.INPUT_KUBECONFIG}"
CONFIG_CONTEXT: Final = f"{c.PACKAGE_NAME}:{schema.INPUT_CONTEXT}"
REAPER_KEYS: Final = ReaperKeys(
    namespace=schema.REAPER_NAMESPACE,
    kservice=schema.REAPER_KSERVICE,
    spec_sha=schema.REAPER_SPEC_SHA,
    timeout=schema.REAPER_TIMEOUT,
)
"""The package reaper's names for the inputs of the core both reapers adapt (``flyte_apps.core.reaping``)."""
NO_CLUSTER_MESSAGE: Final = (
    "is stopped, and stopping deletes its old revisions in the cluster, which this package is not told: "
    f"set `{schema.INPUT_KUBECONFIG}` (or `{schema.INPUT_CONTEXT}`) on the resource, or "
    f"{CONFIG_KUBECONFIG} in the stack config (KUBECONFIG is never assumed: it may name another cluster)"
)


class PackageError(FlyteAppsError):
    """A failure of the package's own resources, as the one line the engine shows."""


def to_inputs(properties: Mapping[str, PropertyValue]) -> Inputs:
    """Plain values of ``properties`` (unknowns as the placeholder), and where the unknown and secret
    values are, by input path. Nulls are left out (an unset input); integral numbers become ints."""
    unknown: list[str] = []
    secret: list[str] = []

    def plain(value: PropertyValue, path: str) -> Any:
        if value.is_secret:
            secret.append(path)
        inner = value.value
        if isinstance(inner, Computed):
            unknown.append(path)
            return UNKNOWN_PLACEHOLDER
        if isinstance(inner, float):
            return int(inner) if inner.is_integer() else inner
        if isinstance(inner, Mapping):
            return {
                key: plain(item, f"{path}.{key}" if path else key)
                for key, item in inner.items()
                if item.value is not None
            }
        if isinstance(inner, Sequence) and not isinstance(inner, str):
            return [plain(item, f"{path}[{index}]") for index, item in enumerate(inner)]
        return inner

    values = {key: plain(value, key) for key, value in properties.items() if value.value is not None}
    return Inputs(values=values, unknown=tuple(unknown), secret=tuple(secret))


def invalid_inputs(kind: str, name: str, error: ConfigError) -> InputPropertiesError:
    """The engine's invalid-inputs error: every problem by input path (the engine prints each one
    under the message, with the input's value or ``<secret>``)."""
    details: list[InputPropertyErrorDetails] = [
        {"property_path": problem.path, "reason": bounded(problem.message)} for problem in error.problems
    ]
    return InputPropertiesError(f"{kind} {name!r} has {len(details)} invalid input(s)", details)


def plain_state(values: Mapping[str, Any]) -> dict[str, PropertyValue]:
    return {key: to_property_value(value) for key, value in values.items()}


def to_property_value(value: Any) -> PropertyValue:
    if isinstance(value, Mapping):
        return PropertyValue({key: to_property_value(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return PropertyValue([to_property_value(item) for item in value])
    if isinstance(value, int) and not isinstance(value, bool):
        return PropertyValue(float(value))
    return PropertyValue(value)


class ClusterChoice:
    """Which cluster a stopped app's reaper talks to (component inputs, else the package's setting)."""

    def __init__(self, inputs: Inputs) -> None:
        from pulumi.runtime import config as runtime_config

        kubeconfig = inputs.values.get(schema.INPUT_KUBECONFIG) or runtime_config.get_config(
            CONFIG_KUBECONFIG
        )
        context = inputs.values.get(schema.INPUT_CONTEXT) or runtime_config.get_config(CONFIG_CONTEXT)
        self.kubeconfig = _absolute(str(kubeconfig)) if kubeconfig else ""
        self.context = str(context) if context else ""

    @property
    def known(self) -> bool:
        return bool(self.kubeconfig or self.context)

    def reaper(self, timeout_nanos: int) -> ReaperFactory:
        def make(name: str, app: AppPlan, opts: pulumi.ResourceOptions) -> pulumi.Resource:
            props = {
                schema.REAPER_NAMESPACE: app.namespace,
                schema.REAPER_KSERVICE: app.kservice_name,
                schema.REAPER_SPEC_SHA: app.blob.sha,
                schema.REAPER_TIMEOUT: timeout_nanos / NANOS_PER_SECOND,
                # Secret in state: a kubeconfig's content may hold a token.
                schema.INPUT_KUBECONFIG: pulumi.Output.secret(self.kubeconfig),
                schema.INPUT_CONTEXT: self.context,
                schema.REAPER_DELETED: None,
                schema.REAPER_STOP_REVISION: None,
            }
            return pulumi.CustomResource(c.TYPE_PACKAGE_REVISION_REAPER, name, props, opts)

        return make


def _absolute(kubeconfig: str) -> str:
    """A kubeconfig path made absolute (the reaper runs in another process); content as it is."""
    path = Path(kubeconfig).expanduser()
    if is_kubeconfig_path(kubeconfig, is_file=lambda value: Path(value).expanduser().is_file()):
        return str(path.resolve())
    return kubeconfig


def stopped_without_cluster(plan: StackPlan, cluster: ClusterChoice, *, listed: bool) -> ConfigError | None:
    """Every stopped app, by its input path, when no cluster is named to stop it in: ``stopped`` of a
    FlyteApp, ``apps[i].stopped`` of a FlyteApps (``listed``)."""
    if cluster.known:
        return None
    problems = [
        ConfigProblem(f"{schema.INPUT_APPS}[{index}].stopped" if listed else "stopped", NO_CLUSTER_MESSAGE)
        for index, app in enumerate(plan.apps)
        if app.config.input.stopped
    ]
    return ConfigError(problems) if problems else None


class FlyteAppsProvider(Provider):
    """The package's provider (``pulumi.provider.experimental``'s interface)."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.schema_text = schema_text(version)
        self.kubeconfig = ""
        self.context = ""

    async def get_schema(self, request: GetSchemaRequest) -> GetSchemaResponse:  # noqa: ARG002
        return GetSchemaResponse(schema=self.schema_text)

    async def configure(self, request: ConfigureRequest) -> ConfigureResponse:
        """The package's settings, for the reapers this provider serves: ``args`` (typed), else the
        older ``variables`` spelling (``flyte:config:kubeconfig``)."""
        settings = to_inputs(request.args).values
        for key in (schema.INPUT_KUBECONFIG, schema.INPUT_CONTEXT):
            value = settings.get(key) or request.variables.get(f"{c.PACKAGE_NAME}:config:{key}") or ""
            setattr(self, key, str(value))
        return ConfigureResponse(accept_secrets=True, supports_preview=True, accept_resources=True)

    async def construct(self, request: ConstructRequest) -> ConstructResponse:
        inputs = to_inputs(request.inputs)
        if request.resource_type == c.TYPE_FLYTE_APP:
            return await self._construct_app(request, inputs)
        if request.resource_type == c.TYPE_FLYTE_APPS:
            return await self._construct_apps(request, inputs)
        msg = f"unknown component type {request.resource_type!r}"
        raise PackageError(msg)

    async def _construct_app(self, request: ConstructRequest, inputs: Inputs) -> ConstructResponse:
        kind = "FlyteApp"
        cluster = ClusterChoice(inputs)
        try:
            planned = plan_app_inputs(inputs, app_keys=schema.app_keys())
            if planned.plan is not None:
                refused = stopped_without_cluster(planned.plan, cluster, listed=False)
                if refused is not None:
                    raise refused
        except ConfigError as exc:
            raise invalid_inputs(kind, request.name, exc) from None
        if planned.plan is None:
            component = pulumi.ComponentResource(c.TYPE_FLYTE_APP, request.name, None, request.options)
            _unknown_kservice(request.name, component)
            component.register_outputs({})
            state = {key: PropertyValue.computed() for key in c.APP_OUTPUTS}
            return await _response(component, state)
        plan = planned.plan
        for warning in plan.warnings:
            pulumi.log.warn(f"{kind} {request.name!r}: {warning}")
        app = plan.apps[0]
        reaper = cluster.reaper(plan.platform.settings.reaper_timeout)
        component = FlyteApp(request.name, FlyteAppArgs(plan=app, reaper=reaper), opts=request.options)
        # Inside the component (a consumer's one resource), waiting for the KService, not the parent.
        register_custom_domains(
            app.domains, component.kservice, app.kservice_name, pulumi.ResourceOptions(parent=component)
        )
        return await _response(component, plain_state(app.exports()))

    async def _construct_apps(self, request: ConstructRequest, inputs: Inputs) -> ConstructResponse:
        kind = "FlyteApps"
        cluster = ClusterChoice(inputs)
        planned: PackagePlan
        try:
            planned = plan_stack_inputs(inputs)
            if planned.plan is not None:
                refused = stopped_without_cluster(planned.plan, cluster, listed=True)
                if refused is not None:
                    raise refused
        except ConfigError as exc:
            raise invalid_inputs(kind, request.name, exc) from None
        component = pulumi.ComponentResource(c.TYPE_FLYTE_APPS, request.name, None, request.options)
        if planned.plan is None:
            component.register_outputs({})
            state = {
                c.OUTPUT_NAMESPACE: PropertyValue.computed(),
                schema.OUTPUT_APPS: PropertyValue.computed(),
            }
            return await _response(component, state)
        plan = planned.plan
        for warning in plan.warnings:
            pulumi.log.warn(f"{kind} {request.name!r}: {warning}")
        register_stack(
            plan,
            pulumi.ResourceOptions(parent=component),
            reaper=cluster.reaper(plan.platform.settings.reaper_timeout),
        )
        exports = {
            c.OUTPUT_NAMESPACE: plan.platform.settings.namespace,
            schema.OUTPUT_APPS: {app.key: app.exports() for app in plan.apps},
        }
        component.register_outputs(exports)
        return await _response(component, plain_state(exports))

    # -- the RevisionReaper custom resource ------------------------------------------------------

    async def check(self, request: CheckRequest) -> CheckResponse:
        return CheckResponse(inputs=request.new_inputs)

    async def diff(self, request: DiffRequest) -> DiffResponse:
        """Offline: a new stopped spec (its sha) means a new stop revision to wait for."""
        diff = diff_stop(REAPER_KEYS, request.old_state, request.new_inputs)
        return DiffResponse(
            changes=bool(diff.changed), replaces=list(diff.replaces), diffs=list(diff.changed)
        )

    async def create(self, request: CreateRequest) -> CreateResponse:
        resource_id = REAPER_KEYS.where(to_inputs(request.properties).values)
        if request.preview:
            return CreateResponse(resource_id=resource_id, properties=request.properties)
        # Off the provider's event loop: a stop waits for Knative, and the other reapers (and every
        # other call the engine makes meanwhile) must not wait behind it.
        return CreateResponse(
            resource_id=resource_id, properties=await asyncio.to_thread(self._reap, request.properties)
        )

    async def update(self, request: UpdateRequest) -> UpdateResponse:
        if request.preview:
            return UpdateResponse(properties=request.news)
        return UpdateResponse(properties=await asyncio.to_thread(self._reap, request.news))

    async def delete(self, request: DeleteRequest) -> None:
        """Nothing to undo: starting the app again is the KService update itself."""

    def _reap(self, properties: Mapping[str, PropertyValue]) -> dict[str, PropertyValue]:
        """The stop, in the cluster the resource names (else the package's setting; never KUBECONFIG)."""
        from flyte_apps.kube.reaper import stop
        from flyte_apps.kube.target import KubeTarget

        props = to_inputs(properties).values
        kubeconfig = str(props.get(schema.INPUT_KUBECONFIG) or self.kubeconfig)
        context = str(props.get(schema.INPUT_CONTEXT) or self.context)
        if not (kubeconfig or context):
            where = REAPER_KEYS.where(props)
            msg = f"stopping {where}: no cluster named ({NO_CLUSTER_MESSAGE.split(': ', 1)[1]})"
            raise PackageError(msg)
        try:
            result = stop(
                KubeTarget(kubeconfig=kubeconfig or None, context=context or None), REAPER_KEYS.inputs(props)
            )
        except StopFailed as exc:
            raise PackageError(str(exc)) from None
        outs = dict(properties)
        outs[schema.REAPER_DELETED] = to_property_value(list(result.deleted))
        outs[schema.REAPER_STOP_REVISION] = PropertyValue(result.stop_revision or "")
        return outs


def _unknown_kservice(name: str, parent: pulumi.Resource) -> None:
    """While an input is unknown (a preview): the KService, its content unknown until ``up``."""
    unknown: pulumi.Output[Any] = pulumi.Output.from_input(UNKNOWN)
    CustomResource(
        f"{name}-kservice",
        api_version=c.KNATIVE_API_VERSION,
        kind=c.KSERVICE_KIND,
        metadata=unknown,
        spec=unknown,
        opts=pulumi.ResourceOptions(parent=parent),
    )


async def _response(component: pulumi.Resource, state: dict[str, PropertyValue]) -> ConstructResponse:
    urn = await component.urn.future()
    return ConstructResponse(urn=str(urn), state=state, state_dependencies={})


def schema_text(version: str) -> str:
    """The schema as ``GetSchema`` serves it and ``components/plugin/schema.json`` holds it."""
    return json.dumps(schema.package_schema(version), indent=2) + "\n"


def package_version() -> str:
    """The installed flyte-apps' version: the package's (a tag of the repository)."""
    from importlib.metadata import version

    return version(c.PROJECT_NAME)
