"""An app's ``flyteidl2.app.Spec``: built from config, checked with protovalidate, serialized once.

The bytes are the real proto as Flyte's Go app service writes it (protobuf-go's field order,
``flyte_apps.core.goorder``), so ``flyte.org/spec`` and ``flyte.org/spec-sha`` are upstream's own for a
container payload. A pod template's ``google.protobuf.Struct`` is a map, which Go writes in random
order ((j)6): ours sorts its keys, so our sha is stable where upstream's is not.
Resource entries come in the order Flyte's SDK writes them, whatever order the config lists them in.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Final

import protovalidate
from flyteidl2.app import app_definition_pb2 as app_pb
from flyteidl2.common import runtime_version_pb2
from flyteidl2.core import artifact_id_pb2, literals_pb2, security_pb2, tasks_pb2
from google.protobuf.message import DecodeError, Message

from flyte_apps.core import constants as c
from flyte_apps.core import goorder
from flyte_apps.core.config.models import (
    Accelerator,
    AppConfig,
    Autoscaling,
    Container,
    Ingress,
    InputItem,
    PodTemplate,
    SharedMemory,
)
from flyte_apps.core.durations import NANOS_PER_SECOND
from flyte_apps.core.errors import ConfigProblem

RESOURCE_ORDER: Final = (
    ("cpu", tasks_pb2.Resources.CPU),
    ("memory", tasks_pb2.Resources.MEMORY),
    (c.GPU_RESOURCE_KEY, tasks_pb2.Resources.GPU),
    ("ephemeral-storage", tasks_pb2.Resources.EPHEMERAL_STORAGE),
    ("storage", tasks_pb2.Resources.STORAGE),
)
"""Resource entries in Flyte's SDK order (cpu, memory, gpu, ephemeral-storage), then storage."""
_SHA_BYTES = 8


@dataclass(frozen=True)
class SpecBlob:
    """The serialized spec and the two annotations derived from it."""

    data: bytes
    sha: str
    b64: str


def build_app(app: AppConfig) -> app_pb.App:
    """The ``flyteidl2.app.App`` (identity + spec) that Flyte's app service would store for ``app``."""
    message = app_pb.App()
    ident = message.metadata.id
    ident.org, ident.project, ident.domain, ident.name = (
        app.id.org,
        app.id.project,
        app.id.domain,
        app.id.name,
    )
    message.spec.CopyFrom(build_spec(app))
    return message


def build_spec(app: AppConfig) -> app_pb.Spec:
    """Map the app's config one to one onto proto fields (defaults and injected env are not in it).

    Presence is preserved: a message key given empty (``profile: {}``, ``inputs: []``,
    ``timeouts: {}``, ``serviceAccount: ""``) writes the message present but empty, so any spec a
    client wrote can be written again byte for byte. ``ingress`` is always present (Flyte's SDK
    asserts it on a stored spec); ``runtime_metadata`` only when the config gives it."""
    spec = app_pb.Spec()
    given = app.input
    if given.pod is not None:
        _set_pod(spec.pod, given.pod, app)
    elif given.container is not None:
        _set_container(spec.container, given.container, app)
    if given.accelerator is not None:
        _set_accelerator(spec.extended_resources.gpu_accelerator, given.accelerator)
    if given.shared_memory is not None:
        _set_shared_memory(spec.extended_resources.shared_memory, given.shared_memory)
    if given.autoscaling is not None:
        _set_autoscaling(spec.autoscaling, given.autoscaling)
    _set_ingress(spec.ingress, given.ingress, private=not app.public)
    spec.desired_state = app_pb.Spec.DESIRED_STATE_ACTIVE
    if given.cluster_pool is not None:
        spec.cluster_pool = given.cluster_pool
    if given.cluster is not None:
        spec.cluster = given.cluster
    if given.images is not None:
        spec.images.SetInParent()
        spec.images.images.extend(
            app_pb.ImageSpec(tag=image.tag, build_job_url=image.build_job_url) for image in given.images
        )
    _set_security_context(spec, app)
    if given.runtime_metadata is not None:
        runtime = given.runtime_metadata
        spec.runtime_metadata.SetInParent()
        spec.runtime_metadata.type = runtime_version_pb2.RuntimeMetadata.RuntimeType.Value(runtime.type)
        spec.runtime_metadata.version = runtime.version
        spec.runtime_metadata.flavor = runtime.flavor
    if given.profile is not None:
        profile = given.profile
        spec.profile.SetInParent()
        spec.profile.type = profile.type
        spec.profile.name = profile.name
        spec.profile.short_description = profile.description
        spec.profile.icon_url = profile.icon_url
    if given.inputs is not None:
        spec.inputs.SetInParent()
        spec.inputs.items.extend(_input(item) for item in given.inputs)
    spec.links.extend(
        app_pb.Link(path=link.path, title=link.title, is_relative=link.is_relative) for link in given.links
    )
    if given.timeouts is not None:
        spec.timeouts.SetInParent()
        if given.timeouts.request is not None:
            _set_duration(spec.timeouts.request_timeout, given.timeouts.request)
    return spec


def _set_autoscaling(target: app_pb.AutoscalingConfig, scaling: Autoscaling) -> None:
    target.SetInParent()
    if scaling.min_replicas is not None or scaling.max_replicas is not None:
        target.replicas.min = scaling.min_replicas or 0
        target.replicas.max = scaling.max_replicas or 0
    if scaling.metric == "concurrency" and scaling.target is not None:
        target.scaling_metric.concurrency.target_value = scaling.target
    elif scaling.metric == "rps" and scaling.target is not None:
        target.scaling_metric.request_rate.target_value = scaling.target
    if scaling.scaledown_period is not None:
        _set_duration(target.scaledown_period, scaling.scaledown_period)


def _set_ingress(target: app_pb.IngressConfig, given: Ingress | None, *, private: bool) -> None:
    """Always present, empty when nothing is set, as Flyte's SDK writes it (``IngressConfig()``)."""
    target.SetInParent()
    target.private = private
    if given is not None:
        target.subdomain = given.subdomain or ""
        target.cname = given.cname or ""


def _set_security_context(spec: app_pb.Spec, app: AppConfig) -> None:
    """``security_context`` only when something goes in it: a service account (``""`` writes an empty
    ``run_as``, as the SDK does for an app with secrets and no account), secrets, or
    ``requiresAuth: false``."""
    given = app.input
    if given.service_account is not None:
        spec.security_context.run_as.SetInParent()
        spec.security_context.run_as.k8s_service_account = given.service_account
    if given.secrets:  # extend() on an empty list would still mark security_context as set
        spec.security_context.secrets.extend(build_secrets(app))
    if given.requires_auth is False:
        spec.security_context.allow_anonymous = True


def _input(item: InputItem) -> app_pb.Input:
    """One ``Input``: ``value`` -> ``string_value``, ``app`` -> ``app_id``, ``artifact`` -> its id."""
    message = app_pb.Input(name=item.name)
    if item.value is not None:
        message.string_value = item.value
    elif item.app is not None:
        ref = item.app
        message.app_id.CopyFrom(
            app_pb.Identifier(org=ref.org, project=ref.project, domain=ref.domain, name=ref.name)
        )
    elif item.artifact is not None:
        artifact = item.artifact
        message.artifact_id.SetInParent()
        message.artifact_id.version = artifact.version
        if artifact.key is not None:
            key = artifact.key
            message.artifact_id.key.CopyFrom(
                artifact_id_pb2.ArtifactKey(
                    project=key.project, domain=key.domain, name=key.name, org=key.org
                )
            )
    return message


def _set_container(container: tasks_pb2.Container, given: Container, app: AppConfig) -> None:
    """The container payload; ``gpu`` is a ``GPU`` entry, as Flyte's SDK writes it."""
    container.image = given.image or ""
    container.command.extend(given.command)
    container.args.extend(given.args)
    container.env.extend(literals_pb2.KeyValuePair(key=var.name, value=var.value) for var in app.env)
    container.ports.extend(
        tasks_pb2.ContainerPort(container_port=port.container_port, name=port.name) for port in given.ports
    )
    if given.resources is not None:
        container.resources.SetInParent()
        for target, entries in (
            (container.resources.requests, given.resources.requests),
            (container.resources.limits, given.resources.limits),
        ):
            target.extend(
                tasks_pb2.Resources.ResourceEntry(name=proto_name, value=entries[name])
                for name, proto_name in RESOURCE_ORDER
                if name in entries
            )


def _set_pod(pod: tasks_pb2.K8sPod, given: PodTemplate, app: AppConfig) -> None:
    """The pod payload: the merged pod spec as a Struct, the metadata when the config has it (even
    empty), and the primary container's name only when the config sets it."""
    if given.metadata is not None:
        pod.metadata.SetInParent()
        pod.metadata.labels.update(given.metadata.labels)
        pod.metadata.annotations.update(given.metadata.annotations)
    pod.pod_spec.update(app.pod_spec)
    if given.primary_container_name is not None:
        pod.primary_container_name = given.primary_container_name


def _set_accelerator(target: tasks_pb2.GPUAccelerator, given: Accelerator) -> None:
    target.device = given.device
    if given.partition_size is not None:
        target.partition_size = given.partition_size
    elif given.unpartitioned is not None:
        target.unpartitioned = given.unpartitioned
    if given.device_class is not None:
        target.device_class = tasks_pb2.GPUAccelerator.DeviceClass.Value(given.device_class)


def _set_shared_memory(target: tasks_pb2.SharedMemory, given: SharedMemory) -> None:
    """Flyte's SDK writes the mount path and name always, the size unless it is ``auto``."""
    target.mount_path = given.mount_path
    target.mount_name = given.mount_name
    if given.size_limit != c.SHARED_MEMORY_AUTO:
        target.size_limit = given.size_limit


def build_secrets(app: AppConfig) -> list[security_pb2.Secret]:
    """The app's ``security_context.secrets``, in config order."""
    return [
        security_pb2.Secret(
            group=secret.group,
            group_version=secret.group_version,
            key=secret.key,
            mount_requirement=security_pb2.Secret.MountType.Value(secret.mount_requirement),
            env_var=secret.env_var,
        )
        for secret in app.input.secrets
    ]


def validate_app(message: app_pb.App, path: str) -> list[ConfigProblem]:
    """Run the proto's own ``buf.validate`` rules, which upstream never enforces ((j)11)."""
    return [
        ConfigProblem(path, f"Flyte's app spec rejects {_field_path(violation)}: {violation.proto.message}")
        for violation in protovalidate.collect_violations(message)
    ]


def serialize(spec: app_pb.Spec) -> SpecBlob:
    """Go's bytes; sha = first 8 bytes of SHA-256 as hex; b64 = standard padded base64."""
    data = goorder.marshal(spec)
    return SpecBlob(
        data=data,
        sha=hashlib.sha256(data).digest()[:_SHA_BYTES].hex(),
        b64=base64.b64encode(data).decode("ascii"),
    )


@dataclass(frozen=True)
class SpecComparison:
    """A live ``flyte.org/spec`` against ours. ``same_spec``: they decode to one message (its bytes may
    still differ: ``reason`` says why); ``fields``: the top-level fields that differ otherwise."""

    same_bytes: bool
    same_spec: bool
    reason: str
    fields: tuple[str, ...] = ()


SPEC_GO_MAP_ORDER: Final = (
    "same spec, Go's map order (Flyte's app service writes a pod payload's maps in random order, so its "
    "bytes and spec-sha change from one Deploy to the next: (j)6)"
)
SPEC_OTHER_ORDER: Final = (
    "same spec in another field order than protobuf-go's (written by another client, or by flyte-apps "
    "0.2.0 and earlier)"
)
SPEC_UNDECODABLE: Final = "the live value does not decode"
SPEC_MISSING: Final = "the live KService has none"


def compare_specs(live_b64: object, ours_b64: str) -> SpecComparison:
    """How a live spec annotation compares with ours, decoding both where the bytes differ."""
    if live_b64 == ours_b64:
        return SpecComparison(same_bytes=True, same_spec=True, reason="")
    if not isinstance(live_b64, str) or not live_b64:
        return SpecComparison(same_bytes=False, same_spec=False, reason=SPEC_MISSING)
    try:
        live = decode_spec(live_b64)
    except (ValueError, DecodeError):
        return SpecComparison(same_bytes=False, same_spec=False, reason=SPEC_UNDECODABLE)
    ours = decode_spec(ours_b64)
    if live == ours:
        return SpecComparison(
            same_bytes=False,
            same_spec=True,
            reason=SPEC_GO_MAP_ORDER if _holds_a_map(ours) else SPEC_OTHER_ORDER,
        )
    names = {described.name for message in (live, ours) for described, _ in message.ListFields()}
    fields = tuple(sorted(name for name in names if _field(live, name) != _field(ours, name)))
    return SpecComparison(same_bytes=False, same_spec=False, reason="", fields=fields)


def _field(message: Message, name: str) -> tuple[bool, object]:
    """A field's presence and value (``HasField`` only where the field has presence)."""
    described = message.DESCRIPTOR.fields_by_name[name]
    present = message.HasField(name) if described.has_presence else True
    return present, getattr(message, name)


def _holds_a_map(message: Message) -> bool:
    """Whether any map field in ``message`` or below it has an entry (Go writes those in random order)."""
    for described, value in message.ListFields():
        if described.message_type is None:
            continue
        if described.message_type.GetOptions().map_entry:
            return True
        items = value if described.label == described.LABEL_REPEATED else (value,)
        if any(_holds_a_map(item) for item in items):
            return True
    return False


def decode_spec(b64: str) -> app_pb.Spec:
    """Inverse of ``serialize(...).b64`` (what Flyte does when it reads the annotation)."""
    spec = app_pb.Spec()
    spec.ParseFromString(base64.b64decode(b64, validate=True))
    return spec


def _set_duration(target: object, nanos: int) -> None:
    seconds, rest = divmod(nanos, NANOS_PER_SECOND)
    target.seconds = seconds  # type: ignore[attr-defined]
    target.nanos = rest  # type: ignore[attr-defined]


def _field_path(violation: object) -> str:
    elements = getattr(getattr(violation, "proto", None), "field", None)
    names = [element.field_name for element in getattr(elements, "elements", [])]
    return ".".join(names) or "the app"
