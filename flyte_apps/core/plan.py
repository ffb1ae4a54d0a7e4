"""The render plan: every object a stack would apply, in one deterministic order.

Both the Pulumi program and ``flyte-apps render`` start from ``plan_stack``, so what ``pulumi up``
registers and what ``render`` prints cannot drift apart (decision 1 in DESIGN.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.accelerator_devices import is_known_device, nearest_devices
from flyte_apps.core.bounds import cost_problems
from flyte_apps.core.config.accelerators import class_settings, device_class_of, gpu_resource_name
from flyte_apps.core.config.keys import APP_KEY_POD, KEY_APPS, KEY_KNATIVE, KEY_PLATFORM, PREFIX
from flyte_apps.core.config.knative_rules import startup_probe_warnings
from flyte_apps.core.config.models import AppConfig, Platform, PlatformConfig
from flyte_apps.core.config.node_rules import memory_unit_warning, memory_warnings
from flyte_apps.core.config.pod_paths import CONTAINER_LISTS, dicts
from flyte_apps.core.config.spec_rules import input_app_warnings
from flyte_apps.core.domains import CustomDomains, build_custom_domains
from flyte_apps.core.durations import NANOS_PER_SECOND
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.knative_features import ENABLED_BY_DEFAULT, FlagUse, flags_used
from flyte_apps.core.knative_settings import build_knative_objects
from flyte_apps.core.kservice import build_kservice
from flyte_apps.core.limits import object_problems
from flyte_apps.core.namespace import build_namespace
from flyte_apps.core.naming import internal_url, is_hashed, kservice_name, public_url
from flyte_apps.core.objects import Manifest, RenderedObject
from flyte_apps.core.spec import SpecBlob, build_app, serialize, validate_app
from flyte_apps.core.stack import StackConfig, gather_stack_config


@dataclass(frozen=True)
class AppPlan:
    """Everything the program needs for one app: its config, spec and KService, and its outputs."""

    config: AppConfig
    blob: SpecBlob
    kservice: Manifest
    kservice_name: str
    namespace: str
    public_url: str | None
    internal_url: str
    feature_flags: tuple[FlagUse, ...] = ()
    """The Knative feature flags the revision's pod spec needs, and where."""
    domains: CustomDomains = field(default_factory=CustomDomains)
    """The app's custom domains: DomainMappings, ClusterDomainClaims and the URLs they serve."""

    @property
    def key(self) -> str:
        return str(self.config.id)

    def exports(self) -> dict[str, Any]:
        return {
            c.OUTPUT_KSERVICE_NAME: self.kservice_name,
            c.OUTPUT_NAMESPACE: self.namespace,
            c.OUTPUT_PUBLIC_URL: self.public_url,
            c.OUTPUT_INTERNAL_URL: self.internal_url,
            c.OUTPUT_SPEC_SHA: self.blob.sha,
            c.OUTPUT_CUSTOM_URLS: list(self.domains.urls),
        }


@dataclass(frozen=True)
class StackPlan:
    config: StackConfig
    namespace: RenderedObject
    apps: tuple[AppPlan, ...]
    warnings: tuple[str, ...] = field(default=())
    manager: tuple[RenderedObject, ...] = ()
    """The Flyte manager's objects (empty unless ``flyte-apps:manager`` enables it)."""
    knative: tuple[RenderedObject, ...] = ()
    """Patches of Knative Serving's ConfigMaps (empty unless ``manageConfig``)."""

    @property
    def platform(self) -> PlatformConfig:
        return self.config.platform

    def objects(self) -> list[RenderedObject]:
        """All objects in apply order: namespaces, CRDs, other cluster-scoped objects (domain claims
        among them), namespaced core objects, KServices by namespace and name, then DomainMappings."""
        items = [
            self.namespace,
            *self.manager,
            *self.knative,
            *(RenderedObject(app.kservice) for app in self.apps),
            *(RenderedObject(claim) for app in self.apps for claim in app.domains.claims),
            *(RenderedObject(mapping) for app in self.apps for mapping in app.domains.mappings),
        ]
        return sorted(items, key=_object_order)


def plan_stack(
    raw: Mapping[str, Any],
    *,
    problems: Sequence[ConfigProblem] = (),
    warnings: Sequence[str] = (),
    app_paths: Sequence[str] | None = None,
) -> StackPlan:
    """Validate the config and build every object; raises ``ConfigError`` listing every problem.

    ``problems`` and ``warnings`` come from reading the stack files (``flyte_apps.core.stackfile``):
    they are reported together with the config's own, so one run shows everything that is wrong.
    ``app_paths`` names each app when apps files were appended to ``apps`` (``StackInput.app_paths``)."""
    found = list(problems)
    too_costly = cost_problems(raw, PREFIX + KEY_APPS, APP_KEY_POD)
    if too_costly:
        raise ConfigError([*found, *too_costly])
    config = gather_stack_config(raw, found, app_paths=app_paths)
    apps: list[AppPlan] = []
    if config is not None:
        for app in config.apps:
            message = build_app(app)
            found.extend(validate_app(message, app.path))
            plan = _plan_app(app, config.platform, serialize(message.spec))
            found.extend(object_problems(plan.kservice, app.path))
            apps.append(plan)
    if found or config is None or not config.platform.valid:
        raise ConfigError(found)
    namespace = RenderedObject(
        build_namespace(config.platform), patch=config.platform.settings.adopt_namespace
    )
    manager: tuple[RenderedObject, ...] = ()
    if config.manager is not None:
        # Imported only when used: the manager's objects cost the program time and memory to load.
        from flyte_apps.core.manager.objects import build_manager_objects

        manager = tuple(build_manager_objects(config.manager, config.platform))
    knative: tuple[RenderedObject, ...] = ()
    if config.knative is not None:
        flags = [use.flag for app in apps for use in app.feature_flags]
        knative = tuple(build_knative_objects(config.knative, config.platform, features=flags))
    return StackPlan(
        config=config,
        namespace=namespace,
        apps=tuple(apps),
        warnings=(*warnings, *_warnings(config), *_pod_warnings(config, apps)),
        manager=manager,
        knative=knative,
    )


def _plan_app(app: AppConfig, platform: PlatformConfig, blob: SpecBlob) -> AppPlan:
    settings = platform.settings
    name = kservice_name(project=app.id.project, domain=app.id.domain, name=app.id.name)
    url = None
    if app.public and not app.input.stopped:  # a stopped app is cluster-local (upstream's stop patch)
        url = public_url(
            ksvc=name,
            base_domain=settings.base_domain,
            scheme=settings.scheme,
            ingress_apps_port=settings.ingress_apps_port,
        )
    kservice = build_kservice(app, platform, blob)
    return AppPlan(
        config=app,
        blob=blob,
        kservice=kservice,
        kservice_name=name,
        namespace=settings.namespace,
        public_url=url,
        internal_url=internal_url(ksvc=name, namespace=settings.namespace),
        feature_flags=flags_used(kservice["spec"]["template"]["spec"]),
        domains=build_custom_domains(app, platform, name),
    )


def _warnings(config: StackConfig) -> list[str]:
    """Apps that ``INTERNAL_APP_ENDPOINT_PATTERN`` cannot reach (upstream (j)3)."""
    found: list[str] = []
    template = config.platform.settings.namespaced_name_suffix_template
    if template != c.DEFAULT_SUFFIX_TEMPLATE:
        found.append(
            f"{c.PROJECT_NAME}:platform.namespacedNameSuffixTemplate is '{template}', not the default "
            f"'{c.DEFAULT_SUFFIX_TEMPLATE}': {c.ENV_ENDPOINT_PATTERN} will not match the apps' KService names"
        )
    if not config.apps:
        found.append(
            f"the stack declares no apps ({c.PROJECT_NAME}:{KEY_APPS} is missing or empty): "
            "it renders only the platform's objects"
        )
    for app in config.apps:
        if is_hashed(project=app.id.project, domain=app.id.domain, name=app.id.name):
            name = kservice_name(project=app.id.project, domain=app.id.domain, name=app.id.name)
            found.append(
                f"{app.path}: app {app.id} has the hashed KService name '{name}' (name-project-domain "
                f"is over 63 characters): other apps cannot reach it through {c.ENV_ENDPOINT_PATTERN}"
            )
    found.extend(input_app_warnings(config.apps))
    for app in config.apps:
        found.extend(_memory_warnings(app))
        found.extend(startup_probe_warnings(app.pod_spec, app.input.knative, app.path))
        found.extend(_accelerator_warnings(app))
        found.extend(_device_class_warnings(app, config.platform.settings))
    return found


def _accelerator_warnings(app: AppConfig) -> list[str]:
    """A device Flyte does not know is placed on a node label no node may carry: say so, and what is near."""
    accelerator = app.input.accelerator
    if accelerator is None or is_known_device(accelerator.device):
        return []
    nearest = nearest_devices(accelerator.device)
    hint = f"; nearest: {', '.join(nearest)}" if nearest else ""
    return [
        f"{app.path}.accelerator.device: {accelerator.device!r} is neither a GPU node label of Flyte's "
        "default accelerator-devices map nor one of its SDK names, so the app waits for a node labelled "
        f"exactly so (fine for a label of your own){hint}"
    ]


def _device_class_warnings(app: AppConfig, settings: Platform) -> list[str]:
    """An accelerator class the platform has no entry for, and a ``gpuResourceName`` its class's entry
    overrides: both are Flyte's rules, and both surprise."""
    accelerator = app.input.accelerator
    if accelerator is None:
        return []
    device_class = device_class_of(accelerator)
    where = f"{app.path}.accelerator"
    if class_settings(accelerator, settings) is None:
        return [
            f"{where}.deviceClass: {device_class} has no entry in "
            f"{PREFIX}{KEY_PLATFORM}.acceleratorDeviceClasses, so the app is placed with gpuResourceName "
            "and the gpu*NodeLabel settings, as Flyte places such a task (its plugin warns the same)"
        ]
    resource = gpu_resource_name(accelerator, settings)
    if settings.gpu_resource_name != c.DEFAULT_GPU_RESOURCE_NAME and resource != settings.gpu_resource_name:
        return [
            f"{where}: its GPUs are requested as {resource!r} (acceleratorDeviceClasses.{device_class}."
            f"resourceName), not gpuResourceName {settings.gpu_resource_name!r}: for an app with an "
            "accelerator the device class's setting wins, as in Flyte (gpu-resource-name is deprecated; "
            "set the class's resourceName)"
        ]
    return []


def _memory_warnings(app: AppConfig) -> list[str]:
    """Memory sizes that are surely not meant: in the app's container, its pod template's containers
    and its shared memory."""
    given = app.input
    found: list[str] = []
    if given.container is not None and given.container.resources is not None:
        resources = given.container.resources.model_dump(by_alias=True)
        found.extend(memory_warnings(resources, f"{app.path}.container.resources"))
    if given.pod is not None:
        for key in CONTAINER_LISTS:
            for index, container in dicts(given.pod.spec.get(key)):
                found.extend(
                    memory_warnings(
                        container.get("resources"), f"{app.path}.pod.spec.{key}[{index}].resources"
                    )
                )
    memory = given.shared_memory
    if memory is not None and memory.size_limit != c.SHARED_MEMORY_AUTO:
        warning = memory_unit_warning(memory.size_limit, f"{app.path}.sharedMemory")
        if warning:
            found.append(warning)
    return found


ACTIVATOR_GRACE_DEFAULT_S: Final = 600
"""Seconds Knative's activator pods are given to drain (its Deployment's default
``terminationGracePeriodSeconds``): a request through the activator that runs longer is cut when one
shuts down (an upgrade, a node drain)."""


def _serving_warnings(plan: AppPlan, platform: PlatformConfig) -> list[str]:
    """What a running cluster would surprise a long-running or GPU app with."""
    found: list[str] = []
    spec = plan.kservice["spec"]["template"]["spec"]
    timeout = int(spec.get("timeoutSeconds") or 0)
    grace = platform.settings.activator_termination_grace_period
    grace_s = ACTIVATOR_GRACE_DEFAULT_S if grace is None else grace // NANOS_PER_SECOND
    if timeout > grace_s:
        found.append(
            f"{plan.config.path}.timeouts.request: requests may run {timeout}s, longer than the {grace_s}s "
            f"Knative's activator pods get to drain ({'the declared' if grace is not None else 'default'} "
            "terminationGracePeriodSeconds): one shutting down cuts them. Raise it through the Knative "
            f"operator or Helm, then declare it in {PREFIX}{KEY_PLATFORM}.activatorTerminationGracePeriod"
        )
    gpu = gpu_resource_name(plan.config.input.accelerator, platform.settings)
    containers = [container for container in spec.get("containers") or [] if isinstance(container, dict)]
    uses_gpu = any(gpu in (container.get("resources") or {}).get("limits", {}) for container in containers)
    probed = any("startupProbe" in container or "readinessProbe" in container for container in containers)
    if uses_gpu and not probed:
        found.append(
            f"{plan.config.path}: a GPU app without a startup or readiness probe of its own: Knative's "
            "default TCP readiness probe calls it ready once its port opens, before a model has loaded; "
            "give pod.spec.containers[] a startupProbe (docs/config.md, a model server)"
        )
    return found


def _pod_warnings(config: StackConfig, apps: Sequence[AppPlan]) -> list[str]:
    """Knative feature flags the cluster must have when this program does not manage Knative's config,
    pod metadata that stays in the spec because the platform does not apply it, and what a running
    cluster would surprise a long-running or GPU app with."""
    found: list[str] = []
    for plan in apps:
        found.extend(_serving_warnings(plan, config.platform))
        app = plan.config
        needed = [use for use in plan.feature_flags if use.flag not in ENABLED_BY_DEFAULT]
        if config.knative is None and needed:
            listed = "; ".join(f"{use.flag} ({', '.join(use.paths)})" for use in needed)
            found.append(
                f"{app.path}: app {app.id} uses pod-spec fields Knative accepts only behind feature flags: "
                f"{listed}. Knative's config-features must enable them, or set "
                f"{PREFIX}{KEY_KNATIVE}.manageConfig: true to have this program enable them"
            )
        pod = app.input.pod
        metadata = pod.metadata if pod is not None else None
        ignored = not config.platform.settings.apply_pod_metadata
        if ignored and metadata is not None and (metadata.labels or metadata.annotations):
            found.append(
                f"{app.path}.pod.metadata: kept in the app's spec but not put on its pods (as Flyte's "
                f"app service does); set {PREFIX}{KEY_PLATFORM}.applyPodMetadata: true to apply it"
            )
    return found


_CLUSTER_SCOPED_ORDER = {"Namespace": 0, "CustomResourceDefinition": 1}


def _object_order(obj: RenderedObject) -> tuple[int, str, str, str]:
    api_version = str(obj.manifest["apiVersion"])
    if not obj.namespace:
        rank = _CLUSTER_SCOPED_ORDER.get(obj.kind, 2)
    elif api_version == c.KNATIVE_API_VERSION and obj.kind == c.KSERVICE_KIND:
        rank = 4
    elif api_version == c.DOMAIN_MAPPING_API_VERSION and obj.kind == c.DOMAIN_MAPPING_KIND:
        rank = 5  # after the KServices they route to
    else:
        rank = 3
    return (rank, obj.namespace, obj.kind, obj.name)
