"""The platform and app sections of the stack config as written (pydantic models), and the validated
results the rest of the core works with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

from pydantic import BeforeValidator, Field, StrictStr

from flyte_apps.core import constants as c
from flyte_apps.core.accelerator_devices import DEFAULT_DEVICE_CLASSES
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


class AcceleratorDeviceClass(ConfigModel):
    """One of ``platform.acceleratorDeviceClasses`` (Flyte's ``AcceleratorDeviceClassConfig``): how apps
    whose ``accelerator.deviceClass`` is its key are placed. A field left out (or empty) falls back to
    the platform's ``gpu*`` setting, as in Flyte."""

    resource_name: str = ""
    """The extended resource the class's devices are requested as (``google.com/tpu``)."""
    device_node_label: str = ""
    """The node label (and taint key) naming a node's device model."""
    partition_size_node_label: str = ""
    """The node label (and taint key) naming a node's partition size."""
    unpartitioned_node_selector_requirement: dict[str, Any] | None = None
    """For ``accelerator.unpartitioned: true``: instead of the partition label DoesNotExist."""
    unpartitioned_toleration: dict[str, Any] | None = None
    """For ``accelerator.unpartitioned: true``: a toleration to add."""


def _upper_case_keys(value: object) -> object:
    """Flyte upper-cases the classes' keys (viper lower-cases them), so ``nvidia_gpu`` is ``NVIDIA_GPU``."""
    if isinstance(value, dict):
        return {key.upper() if isinstance(key, str) else key: item for key, item in value.items()}
    return value


def _flyte_device_classes() -> dict[DeviceClass, AcceleratorDeviceClass]:
    return {
        cast(DeviceClass, name): AcceleratorDeviceClass.model_validate(dict(fields))
        for name, fields in DEFAULT_DEVICE_CLASSES.items()
    }


class Platform(ConfigModel):
    """Flyte's ``internalApps`` settings plus how this program manages the namespace."""

    namespace: str = "flyte"
    """The namespace of the apps' KServices (and of the manager)."""
    base_domain: LowerCase = ""
    """The apps' DNS domain: an app's public host is ``<kservice>.<baseDomain>`` (empty: no public URL)."""
    scheme: Literal["http", "https"] = "https"
    """The scheme of the apps' public URLs."""
    ingress_apps_port: Int = Field(default=0, ge=0, le=MAX_PORT)
    """The port of the public URLs (0: the scheme's default)."""
    default_request_timeout: GoDuration = 300 * NANOS_PER_SECOND
    """The request timeout of apps that set none (a Go duration)."""
    max_request_timeout: GoDuration = 3600 * NANOS_PER_SECOND
    """The longest request timeout an app may ask for; Knative's ``max-revision-timeout-seconds``."""
    activator_termination_grace_period: GoDuration | None = None
    """The cluster's Knative activator ``terminationGracePeriodSeconds``, when it was raised: requests
    longer than it are cut when an activator pod shuts down. Declaring it silences that warning."""
    namespaced_name_suffix_template: str = c.DEFAULT_SUFFIX_TEMPLATE
    """Flyte's suffix template of KService names (``{project}-{domain}``)."""
    default_env_vars: RawEnv = None
    """Env vars every app gets, before its own (an app's value wins)."""
    default_service_account: str = ""
    """The service account of apps that name none."""
    watch_buffer_size: Int = Field(default=100, ge=1, le=MAX_WATCH_BUFFER_SIZE)
    """Events buffered per watch subscriber in the manager."""
    adopt_namespace: Bool = False
    """The namespace exists already: patch its labels instead of creating it, never delete it."""
    retain_namespace: Bool = True
    """Keep the namespace when the stack is destroyed."""
    render_yaml_to_directory: str = ""
    """Write the objects as YAML to this directory instead of applying them (pulumi-kubernetes' option)."""
    cluster_identifier: str = Field(default=c.DEFAULT_CLUSTER_IDENTIFIER, min_length=1)
    """The cluster's identity for pulumi-kubernetes (its provider's ``clusterIdentifier``): a new kubeconfig
    or context (another address, other credentials, another machine's path) only updates the providers;
    changing this value replaces them, deleting every object from the cluster they reached and creating
    it again through the new settings: change it only to move the stack to another cluster."""
    reaper_timeout: GoDuration = 30 * NANOS_PER_SECOND
    """How long stopping an app waits for Knative's stop revision before failing."""
    apply_pod_metadata: Bool = False
    """Put an app's ``pod.metadata`` on its revision template (Flyte's app service ignores it)."""
    gpu_resource_name: str = c.DEFAULT_GPU_RESOURCE_NAME
    """The extended resource GPUs are requested as."""
    gpu_device_node_label: str = c.DEFAULT_GPU_DEVICE_NODE_LABEL
    """The node label (and taint key) naming a node's GPU model."""
    gpu_partition_size_node_label: str = c.DEFAULT_GPU_PARTITION_SIZE_NODE_LABEL
    """The node label (and taint key) naming a node's GPU partition size."""
    accelerator_device_classes: Annotated[
        dict[DeviceClass, AcceleratorDeviceClass], BeforeValidator(_upper_case_keys)
    ] = Field(default_factory=_flyte_device_classes)
    """Flyte's ``accelerator-device-classes``: per ``accelerator.deviceClass``, the resource name and
    node labels its apps are placed with, over the ``gpu*`` settings. Given, it replaces Flyte's
    default map (NVIDIA_GPU, GOOGLE_TPU, AMAZON_NEURON, AMD_GPU, HABANA_GAUDI) whole, as Flyte's config
    loader does."""
    resource_tolerations: dict[str, tuple[dict[str, Any], ...]] = Field(default_factory=dict)
    """Flyte's ``resource-tolerations``: tolerations every app whose containers request or limit the
    resource gets (keyed by its Kubernetes name, e.g. ``nvidia.com/gpu``), as task pods get them."""
    default_tolerations: tuple[dict[str, Any], ...] = ()
    """Flyte's ``default-tolerations``: tolerations every app's pods get, as task pods do."""
    gpu_unpartitioned_toleration: dict[str, Any] | None = None
    """Flyte's ``gpu-unpartitioned-toleration``: added for ``accelerator.unpartitioned: true``."""
    gpu_unpartitioned_node_selector_requirement: dict[str, Any] | None = None
    """Flyte's ``gpu-unpartitioned-node-selector-requirement``: for ``accelerator.unpartitioned: true``,
    instead of ``gpuPartitionSizeNodeLabel`` DoesNotExist."""
    add_tolerations_for_extended_resources: tuple[str, ...] = ()
    """Flyte's ``add-tolerations-for-extended-resources``: for each of these resources an app's containers
    request, a toleration ``{key: <resource>, operator: Exists, effect: NoSchedule}``."""
    default_node_selector: dict[str, StrictStr] = Field(default_factory=dict)
    """Flyte's ``default-node-selector``: node labels every app's pods need (the pod template's own win)."""
    scheduler_name: str = ""
    """Flyte's ``scheduler-name``: the scheduler of every app whose pod template names none."""
    domain_claims: Bool = True
    """With custom domains: a ``ClusterDomainClaim`` per host, so Knative lets the apps' namespace map
    it (false: the cluster claims domains itself, e.g. ``autocreate-cluster-domain-claims``)."""


class Port(ConfigModel):
    """One of ``container.ports``: the port the app serves on."""

    container_port: Int = Field(ge=1, le=MAX_PORT)
    """The port the container listens on (1..65535)."""
    name: str = ""
    """The port's name (``http1`` or ``h2c`` choose Knative's protocol)."""


class Resources(ConfigModel):
    """``container.resources``: requests and limits."""

    requests: dict[ResourceName, Quantity] = Field(default_factory=dict)
    """``cpu``, ``memory``, ``ephemeral-storage`` (quantities) and ``gpu`` (a whole number)."""
    limits: dict[ResourceName, Quantity] = Field(default_factory=dict)
    """The same keys as ``requests``; a request above its limit is refused."""


class Container(ConfigModel):
    """``container``: the app's one container (named ``app``), as Flyte's app spec holds it."""

    image: str | None = None
    """Required, unless the app's pod template gives the primary container an image."""
    command: tuple[str, ...] = ()
    """The container's entrypoint (Kubernetes' ``command``)."""
    args: tuple[str, ...] = ()
    """The entrypoint's arguments."""
    env: RawEnv = None
    """Environment variables, in order (plain values: credentials go in ``secrets``)."""
    ports: tuple[Port, ...] = ()
    """The port the app serves on (one: Knative serves one port)."""
    resources: Resources | None = None
    """CPU, memory, ephemeral storage and GPUs."""


class Autoscaling(ConfigModel):
    """``autoscaling``: replica bounds and what Knative's autoscaler scales on."""

    min_replicas: Int | None = Field(default=None, ge=0, le=MAX_UINT32)
    """The fewest replicas (0: scale to zero when idle)."""
    max_replicas: Int | None = Field(default=None, ge=0, le=MAX_UINT32)
    """The most replicas (0: no limit)."""
    metric: Literal["concurrency", "rps"] | None = None
    """What the autoscaler scales on."""
    target: Int | None = Field(default=None, le=MAX_UINT32)
    """The metric's target per replica."""
    scaledown_period: GoDuration | None = None
    """Knative's stable window: how long load is averaged before scaling down."""


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
    """``timeouts``: the request timeout."""

    request: GoDuration | None = None
    """The longest a request may take (a Go duration, at most ``platform.maxRequestTimeout``)."""


class SecretInput(ConfigModel):
    """A Flyte secret the pod webhook injects: ``security_context.secrets`` of the app spec."""

    group: str = ""
    """The secret's group (Flyte's secret store)."""
    key: str
    """The secret's key in its group."""
    group_version: str = ""
    """The group's version, when the store keeps versions."""
    mount_requirement: Literal["ANY", "ENV_VAR", "FILE"] = "ANY"
    """How the secret reaches the pod."""
    env_var: str = ""
    """The env var holding the secret (``ENV_VAR``); the default is the webhook's name for it."""


class PodMetadata(ConfigModel):
    """``pod.metadata``: stored in the spec (``K8sPod.metadata``); put on the revision template only
    with ``platform.applyPodMetadata``."""

    labels: dict[str, StrictStr] = Field(default_factory=dict)
    """Labels for the revision's pods."""
    annotations: dict[str, StrictStr] = Field(default_factory=dict)
    """Annotations for the revision's pods."""


class PodTemplate(ConfigModel):
    """``pod``: a Kubernetes pod template, merged with ``container`` as Flyte's SDK merges them."""

    metadata: PodMetadata | None = None
    """The pods' labels and annotations."""
    spec: dict[str, Any] = Field(default_factory=dict)
    """A PodSpec, camelCase as in a Pod manifest; checked against Knative's and Kubernetes' schemas."""
    primary_container_name: str | None = None
    """The container ``container`` is merged into (default ``app``); written to the spec only when set."""


class Accelerator(ConfigModel):
    """``accelerator``: the GPU model (and partition) to place the app on, as Flyte places task pods."""

    device: str
    """The GPU model: its node-label value (``nvidia-tesla-a100``) or an SDK name (``A100 80G``), which
    Flyte's default accelerator-devices map turns into the label value."""
    partition_size: str | None = None
    """A MIG partition size (``1g.5gb``); not with ``unpartitioned``."""
    unpartitioned: Bool | None = None
    """True: whole GPUs only (not with ``partitionSize``)."""
    device_class: DeviceClass | None = None
    """The accelerator class (default ``NVIDIA_GPU``): its entry of ``platform.acceleratorDeviceClasses``
    names the resource and node labels the app is placed with."""


class SharedMemory(ConfigModel):
    """``sharedMemory`` in its long form: a RAM-backed emptyDir mounted into the primary container."""

    size_limit: str = c.SHARED_MEMORY_AUTO
    """A quantity, or ``auto`` for no limit."""
    mount_path: str = c.SHARED_MEMORY_MOUNT_PATH
    """Where the volume is mounted."""
    mount_name: str = c.SHARED_MEMORY_MOUNT_NAME
    """The volume's name."""


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
    """The app's kind, as Flyte's UI groups apps."""
    name: str = ""
    """The app's display name."""
    description: str = ""
    """``Profile.short_description``: at most 100 characters."""
    icon_url: str = ""
    """An icon for Flyte's UI (``Profile.icon_url``)."""


class Link(ConfigModel):
    """One of ``links``: a link Flyte's UI shows next to the app (stored in the spec only)."""

    path: str
    """The link's target."""
    title: str = ""
    """The link's text."""
    is_relative: Bool = False
    """True: ``path`` is relative to the app's URL."""


class AppRef(ConfigModel):
    """``inputs[].app``: another app (``Input.app_id``)."""

    project: str
    """The app's Flyte project."""
    domain: str
    """The app's Flyte domain."""
    name: str
    """The app's name."""
    org: str = ""
    """The app's Flyte organization."""


class ArtifactKey(ConfigModel):
    """``inputs[].artifact.key``: which artifact."""

    project: str = ""
    """The artifact's Flyte project."""
    domain: str = ""
    """The artifact's Flyte domain."""
    name: str = ""
    """The artifact's name."""
    org: str = ""
    """The artifact's Flyte organization."""


class ArtifactRef(ConfigModel):
    """``inputs[].artifact``: an artifact version (``Input.artifact_id``, the proto's fields)."""

    key: ArtifactKey | None = None
    """Which artifact."""
    version: str = ""
    """Which version of it."""


class InputItem(ConfigModel):
    """One of ``inputs``: exactly one of ``value`` (a string), ``app`` or ``artifact``."""

    name: str
    """The input's name (unique among the app's inputs)."""
    value: str | None = None
    """A string value."""
    app: AppRef | None = None
    """Another app, by its identity."""
    artifact: ArtifactRef | None = None
    """An artifact version."""


class RuntimeMetadata(ConfigModel):
    """``runtimeMetadata``: which client wrote the spec; written only when given."""

    type: RuntimeType = "OTHER"
    """The client's kind."""
    version: str = ""
    """The client's version."""
    flavor: str = ""
    """The client's flavor."""


class ImageSpec(ConfigModel):
    """One of ``images`` (``ImageSpecSet.images``)."""

    tag: str = ""
    """The image's tag."""
    build_job_url: str = ""
    """Where the image's build can be seen."""


def _shared_memory_short_form(value: object) -> object:
    """``sharedMemory: 2Gi`` or ``auto`` is ``{sizeLimit: 2Gi}``; a map is the long form."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return {"sizeLimit": str(value)}
    return value


class AppInput(ConfigModel):
    """One app as written under ``flyte-apps:apps``."""

    name: str
    """The app's name in Flyte (a DNS-1123 label); its KService is ``<name>-<project>-<domain>``."""
    project: str | None = None
    """The app's Flyte project (FlyteApps: default ``project``)."""
    domain: str | None = None
    """The app's Flyte domain (FlyteApps: default ``domain``)."""
    org: str = ""
    """The app's Flyte organization."""
    container: Container | None = None
    """Required unless ``pod`` is given; with both, merged into the pod's primary container."""
    pod: PodTemplate | None = None
    """A pod template: a PodSpec for what ``container`` cannot say (sidecars, volumes, tolerations)."""
    accelerator: Accelerator | None = None
    """The GPU model (and partition) to place the app on."""
    shared_memory: Annotated[SharedMemory, BeforeValidator(_shared_memory_short_form)] | None = None
    """A RAM-backed ``/dev/shm`` for the primary container."""
    autoscaling: Autoscaling | None = None
    """Replica bounds and the autoscaler's metric and target."""
    knative: KnativeRevision | None = None
    """Knative revision settings that are not in Flyte's app spec."""
    timeouts: Timeouts | None = None
    """The request timeout."""
    service_account: str | None = None
    """The pods' service account (``""``: the platform's default, written as an empty ``run_as``)."""
    visibility: Literal["public", "cluster-local"] = "public"
    """``cluster-local``: no public URL."""
    stopped: Bool = False
    """Scale the app to zero and keep it there (Flyte's stop), its spec unchanged."""
    adopt: Bool | Literal["upsert"] = False
    """Take over a KService already running (``flyte-apps import`` writes it): ``true`` registers it with
    Pulumi's ``import`` option (the rendered object equals the live one), ``upsert`` through a provider
    that updates the existing object in place; needs ``platform.adoptNamespace``."""
    secrets: tuple[SecretInput, ...] = ()
    """Flyte secrets the pod webhook injects."""
    ingress: Ingress | None = None
    """``subdomain``/``cname`` (custom domains) and their ``tlsSecret``; the spec always has ``ingress``."""
    requires_auth: Bool | None = None
    """False: ``security_context.allow_anonymous``; true (the default) writes nothing."""
    cluster_pool: str | None = None
    """The cluster pool (stored in the spec only)."""
    cluster: str | None = None
    """The cluster (stored in the spec only)."""
    runtime_metadata: RuntimeMetadata | None = None
    """Never stamped by this program: written only when given (even ``{}``)."""
    profile: Profile | None = None
    """How Flyte's UI shows the app."""
    inputs: tuple[InputItem, ...] | None = None
    """None: no ``inputs``; ``[]``: ``inputs`` present and empty."""
    links: tuple[Link, ...] = ()
    """Links Flyte's UI shows next to the app."""
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
