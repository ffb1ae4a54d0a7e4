"""The platform and app sections of the stack config as written (pydantic models), and the validated
results the rest of the core works with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, StrictStr

from flyte_apps.core import constants as c
from flyte_apps.core.config.kit import (
    MAX_PORT,
    MAX_UINT32,
    MAX_WATCH_BUFFER_SIZE,
    Bool,
    ConfigModel,
    GoDuration,
    Int,
    LowerCase,
    Number,
    Quantity,
    RawEnv,
)
from flyte_apps.core.durations import NANOS_PER_SECOND
from flyte_apps.core.objects import Manifest

ResourceName = Literal["cpu", "memory", "gpu", "ephemeral-storage"]
"""Resource keys of ``container.resources``: Kubernetes' names, plus ``gpu`` (a whole number of
devices, rendered as ``platform.gpuResourceName``). Kubernetes accepts no ``storage`` for a container."""
DeviceClass = Literal["NVIDIA_GPU", "GOOGLE_TPU", "AMAZON_NEURON", "AMD_GPU", "HABANA_GAUDI", "APPLE_SILICON"]
"""``flyteidl2.core.GPUAccelerator.DeviceClass`` by name (a test keeps the two in step)."""
RuntimeType = Literal["OTHER", "FLYTE_SDK", "UNION_SDK"]
"""``flyteidl2.common.RuntimeMetadata.RuntimeType`` by name (a test keeps the two in step)."""


class Platform(ConfigModel):
    """Flyte's ``internalApps`` settings plus how this program manages the namespace."""

    namespace: str = "flyte"
    base_domain: LowerCase = ""
    scheme: Literal["http", "https"] = "https"
    ingress_apps_port: Int = Field(default=0, ge=0, le=MAX_PORT)
    default_request_timeout: GoDuration = 300 * NANOS_PER_SECOND
    max_request_timeout: GoDuration = 3600 * NANOS_PER_SECOND
    activator_termination_grace_period: GoDuration | None = None
    """The cluster's Knative activator ``terminationGracePeriodSeconds``, when it was raised: requests
    longer than it are cut when an activator pod shuts down. Declaring it silences that warning."""
    namespaced_name_suffix_template: str = c.DEFAULT_SUFFIX_TEMPLATE
    default_env_vars: RawEnv = None
    default_service_account: str = ""
    watch_buffer_size: Int = Field(default=100, ge=1, le=MAX_WATCH_BUFFER_SIZE)
    adopt_namespace: Bool = False
    retain_namespace: Bool = True
    render_yaml_to_directory: str = ""
    reaper_timeout: GoDuration = 30 * NANOS_PER_SECOND
    apply_pod_metadata: Bool = False
    """Put an app's ``pod.metadata`` on its revision template (Flyte's app service ignores it)."""
    gpu_resource_name: str = c.DEFAULT_GPU_RESOURCE_NAME
    gpu_device_node_label: str = c.DEFAULT_GPU_DEVICE_NODE_LABEL
    gpu_partition_size_node_label: str = c.DEFAULT_GPU_PARTITION_SIZE_NODE_LABEL
    domain_claims: Bool = True
    """With custom domains: a ``ClusterDomainClaim`` per host, so Knative lets the apps' namespace map
    it (false: the cluster claims domains itself, e.g. ``autocreate-cluster-domain-claims``)."""


class Port(ConfigModel):
    container_port: Int = Field(ge=1, le=MAX_PORT)
    name: str = ""


class Resources(ConfigModel):
    requests: dict[ResourceName, Quantity] = Field(default_factory=dict)
    limits: dict[ResourceName, Quantity] = Field(default_factory=dict)


class Container(ConfigModel):
    image: str | None = None
    """Required, unless the app's pod template gives the primary container an image."""
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: RawEnv = None
    ports: tuple[Port, ...] = ()
    resources: Resources | None = None


class Autoscaling(ConfigModel):
    min_replicas: Int | None = Field(default=None, ge=0, le=MAX_UINT32)
    max_replicas: Int | None = Field(default=None, ge=0, le=MAX_UINT32)
    metric: Literal["concurrency", "rps"] | None = None
    target: Int | None = Field(default=None, le=MAX_UINT32)
    scaledown_period: GoDuration | None = None


class KnativeRevision(ConfigModel):
    """``knative``: settings of the app's Knative revision that are not in Flyte's app spec (so
    Flyte's app service, rebuilding a KService, drops them; ``flyte-apps status`` reports that as
    drift). Each is an annotation or field of the revision template, validated as Knative does."""

    progress_deadline: GoDuration | None = None
    """``serving.knative.dev/progress-deadline``: how long the first pod may take to become ready."""
    scale_down_delay: GoDuration | None = None
    """``autoscaling.knative.dev/scale-down-delay``: how long to keep a replica after traffic drops."""
    scale_to_zero_pod_retention_period: GoDuration | None = None
    """``autoscaling.knative.dev/scale-to-zero-pod-retention-period``: the last replica's minimum life."""
    initial_scale: Int | None = None
    """``autoscaling.knative.dev/initial-scale``: replicas a new revision starts with (a running app's)."""
    target_utilization_percentage: Number | None = None
    """``autoscaling.knative.dev/target-utilization-percentage``: 1..100."""
    target_burst_capacity: Number | None = None
    """``autoscaling.knative.dev/target-burst-capacity``: >= 0, or -1 (always through the activator)."""
    activation_scale: Int | None = None
    """``autoscaling.knative.dev/activation-scale``: replicas to start with from zero (>= 2)."""
    container_concurrency: Int | None = None
    """``spec.template.spec.containerConcurrency``: requests a replica serves at once (0: unlimited)."""


class Timeouts(ConfigModel):
    request: GoDuration | None = None


class SecretInput(ConfigModel):
    """A Flyte secret the pod webhook injects: ``security_context.secrets`` of the app spec."""

    group: str = ""
    key: str
    group_version: str = ""
    mount_requirement: Literal["ANY", "ENV_VAR", "FILE"] = "ANY"
    env_var: str = ""


class PodMetadata(ConfigModel):
    """``pod.metadata``: stored in the spec (``K8sPod.metadata``); put on the revision template only
    with ``platform.applyPodMetadata``."""

    labels: dict[str, StrictStr] = Field(default_factory=dict)
    annotations: dict[str, StrictStr] = Field(default_factory=dict)


class PodTemplate(ConfigModel):
    """``pod``: a Kubernetes pod template, merged with ``container`` as Flyte's SDK merges them."""

    metadata: PodMetadata | None = None
    spec: dict[str, Any] = Field(default_factory=dict)
    """A PodSpec, camelCase as in a Pod manifest; checked against Knative's and Kubernetes' schemas."""
    primary_container_name: str | None = None
    """The container ``container`` is merged into (default ``app``); written to the spec only when set."""


class Accelerator(ConfigModel):
    """``accelerator``: the GPU model (and partition) to place the app on, as Flyte places task pods."""

    device: str
    partition_size: str | None = None
    unpartitioned: Bool | None = None
    device_class: DeviceClass | None = None


class SharedMemory(ConfigModel):
    """``sharedMemory`` in its long form: a RAM-backed emptyDir mounted into the primary container."""

    size_limit: str = c.SHARED_MEMORY_AUTO
    """A quantity, or ``auto`` for no limit."""
    mount_path: str = c.SHARED_MEMORY_MOUNT_PATH
    mount_name: str = c.SHARED_MEMORY_MOUNT_NAME


class Ingress(ConfigModel):
    """``ingress``: the spec's ``IngressConfig`` (``private`` comes from ``visibility``), and the TLS
    secret of the custom domains it asks for (not in the spec)."""

    subdomain: str | None = None
    """A custom host ``<subdomain>.<platform.baseDomain>``."""
    cname: str | None = None
    """A custom host of its own (``churn.acme.dev``)."""
    tls_secret: str | None = None
    """A TLS Secret in the apps' namespace for the custom hosts (``DomainMapping.spec.tls``)."""


class Profile(ConfigModel):
    """``profile``: how Flyte's UI shows the app (stored in the spec only)."""

    type: str = ""
    name: str = ""
    description: str = ""
    """``Profile.short_description``: at most 100 characters."""
    icon_url: str = ""


class Link(ConfigModel):
    """One of ``links``: a link Flyte's UI shows next to the app (stored in the spec only)."""

    path: str
    title: str = ""
    is_relative: Bool = False
    """True: ``path`` is relative to the app's URL."""


class AppRef(ConfigModel):
    """``inputs[].app``: another app (``Input.app_id``)."""

    project: str
    domain: str
    name: str
    org: str = ""


class ArtifactKey(ConfigModel):
    project: str = ""
    domain: str = ""
    name: str = ""
    org: str = ""


class ArtifactRef(ConfigModel):
    """``inputs[].artifact``: an artifact version (``Input.artifact_id``, the proto's fields)."""

    key: ArtifactKey | None = None
    version: str = ""


class InputItem(ConfigModel):
    """One of ``inputs``: exactly one of ``value`` (a string), ``app`` or ``artifact``."""

    name: str
    value: str | None = None
    app: AppRef | None = None
    artifact: ArtifactRef | None = None


class RuntimeMetadata(ConfigModel):
    """``runtimeMetadata``: which client wrote the spec; written only when given."""

    type: RuntimeType = "OTHER"
    version: str = ""
    flavor: str = ""


class ImageSpec(ConfigModel):
    """One of ``images`` (``ImageSpecSet.images``)."""

    tag: str = ""
    build_job_url: str = ""


def _shared_memory_short_form(value: object) -> object:
    """``sharedMemory: 2Gi`` or ``auto`` is ``{sizeLimit: 2Gi}``; a map is the long form."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return {"sizeLimit": str(value)}
    return value


class AppInput(ConfigModel):
    """One app as written under ``flyte-apps:apps``."""

    name: str
    project: str | None = None
    domain: str | None = None
    org: str = ""
    container: Container | None = None
    """Required unless ``pod`` is given; with both, merged into the pod's primary container."""
    pod: PodTemplate | None = None
    accelerator: Accelerator | None = None
    shared_memory: Annotated[SharedMemory, BeforeValidator(_shared_memory_short_form)] | None = None
    autoscaling: Autoscaling | None = None
    knative: KnativeRevision | None = None
    timeouts: Timeouts | None = None
    service_account: str | None = None
    visibility: Literal["public", "cluster-local"] = "public"
    stopped: Bool = False
    adopt: Bool | Literal["upsert"] = False
    """Take over a KService already running (``flyte-apps import`` writes it): ``true`` registers it with
    Pulumi's ``import`` option (the rendered object equals the live one), ``upsert`` through a provider
    that updates the existing object in place; needs ``platform.adoptNamespace``."""
    secrets: tuple[SecretInput, ...] = ()
    ingress: Ingress | None = None
    """``subdomain``/``cname`` (custom domains) and their ``tlsSecret``; the spec always has ``ingress``."""
    requires_auth: Bool | None = None
    """False: ``security_context.allow_anonymous``; true (the default) writes nothing."""
    cluster_pool: str | None = None
    cluster: str | None = None
    runtime_metadata: RuntimeMetadata | None = None
    """Never stamped by this program: written only when given (even ``{}``)."""
    profile: Profile | None = None
    inputs: tuple[InputItem, ...] | None = None
    """None: no ``inputs``; ``[]``: ``inputs`` present and empty."""
    links: tuple[Link, ...] = ()
    images: tuple[ImageSpec, ...] | None = None
    """None: no ``images``; ``[]``: present and empty."""


def primary_container_name(app: AppInput) -> str:
    """The container the app's ``container`` is merged into, and shared memory is mounted in."""
    pod = app.pod
    return (pod.primary_container_name if pod is not None else None) or c.USER_CONTAINER_NAME


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str


@dataclass(frozen=True)
class AppId:
    org: str
    project: str
    domain: str
    name: str

    def __str__(self) -> str:
        return f"{self.project}/{self.domain}/{self.name}"


@dataclass(frozen=True)
class AppConfig:
    """A validated app: its input, resolved identity, env in render order, config key path, and its
    payload's pod spec (``flyte_apps.core.config.payload``; never mutated once built)."""

    input: AppInput
    id: AppId
    env: tuple[EnvVar, ...]
    path: str
    pod_spec: Manifest
    """The one-container pod spec of a ``container`` payload, or the pod template merged with
    ``container``: what ``spec.pod.pod_spec`` carries and what the revision's pod spec starts from."""

    @property
    def primary_container(self) -> str:
        return primary_container_name(self.input)

    @property
    def public(self) -> bool:
        return self.input.visibility == "public"


@dataclass(frozen=True)
class PlatformConfig:
    settings: Platform
    default_env: tuple[EnvVar, ...]
    valid: bool = True
    """False when a setting failed a cross-field check; its values still serve to check the apps."""
