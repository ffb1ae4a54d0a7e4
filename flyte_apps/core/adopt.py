"""Pure: a live app's ``flyteidl2.app.Spec`` -> its entry under ``flyte-apps:apps`` (the inverse of
``flyte_apps.core.spec.build_spec``, key by key as docs/config.md's table maps them).

Presence is kept: a message the spec has but leaves empty is written as an empty key (``profile: {}``,
``inputs: []``, ``timeouts: {}``...), so the entry renders the same bytes whenever the config can say
them. What the config cannot say (a ``creator``, an IAM role, an unknown field, a ``storage``
resource...) and env vars that look like credentials are refusals, each with its key path."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from flyteidl2.app import app_definition_pb2 as app_pb
from flyteidl2.core import security_pb2, tasks_pb2
from google.protobuf.json_format import MessageToDict
from google.protobuf.unknown_fields import UnknownFieldSet

from flyte_apps.core.bounds import shown
from flyte_apps.core.credentials import looks_like_credential, value_looks_like_credential
from flyte_apps.core.durations import NANOS_PER_SECOND, format_duration
from flyte_apps.core.errors import ConfigProblem

ADOPT_KEY: Final = "adopt"
ADOPT_IMPORT: Final = True
"""``adopt: true``: the KService is registered with Pulumi's ``import`` option (nothing changes)."""
ADOPT_UPSERT: Final = "upsert"
"""``adopt: upsert``: the KService goes through a provider that updates the existing object in place."""
SECRET_FIX: Final = "move it to a Flyte secret and list it under the app's `secrets:`"
_TOKENS_FIELD: Final = "tokens"
"""``SecurityContext.tokens``, read through ``ListFields`` (the generated class hides its accessor)."""
_RESOURCE_NAMES: Final = {
    tasks_pb2.Resources.CPU: "cpu",
    tasks_pb2.Resources.MEMORY: "memory",
    tasks_pb2.Resources.GPU: "gpu",
    tasks_pb2.Resources.EPHEMERAL_STORAGE: "ephemeral-storage",
}


@dataclass(frozen=True)
class LiveApp:
    """What identifies a live app besides its spec: the KService's labels and annotations."""

    name: str
    project: str
    domain: str
    org: str = ""
    stopped: bool = False


@dataclass
class Adoption:
    """The stack-config entry for one live app, or why it cannot be written."""

    entry: dict[str, Any] = field(default_factory=dict)
    refusals: list[ConfigProblem] = field(default_factory=list)


def adopt_entry(spec: app_pb.Spec, live: LiveApp, *, mode: bool | str = ADOPT_IMPORT) -> Adoption:
    """The app's entry (``adopt`` set to ``mode``), or the refusals: every one, with its key path."""
    result = Adoption()
    refuse = _Refuser(result.refusals, f"apps[{live.name}]")
    entry: dict[str, Any] = {"name": live.name, "project": live.project, "domain": live.domain}
    if live.org:
        entry["org"] = live.org
    if len(UnknownFieldSet(spec)):
        refuse("spec", "has fields this version of Flyte's app spec does not know")
    payload = spec.WhichOneof("app_payload")
    if payload == "container":
        entry["container"] = _container(spec.container, refuse)
    elif payload == "pod":
        entry["pod"] = _pod(spec.pod, refuse)
    if spec.HasField("extended_resources"):
        _extended(spec.extended_resources, entry, refuse)
    if spec.HasField("autoscaling"):
        entry["autoscaling"] = _autoscaling(spec.autoscaling, refuse)
    if spec.HasField("ingress"):
        if spec.ingress.private:
            entry["visibility"] = "cluster-local"
        if spec.ingress.subdomain or spec.ingress.cname:
            entry["ingress"] = _non_empty(subdomain=spec.ingress.subdomain, cname=spec.ingress.cname)
    if spec.cluster_pool:
        entry["clusterPool"] = spec.cluster_pool
    if spec.cluster:
        entry["cluster"] = spec.cluster
    if spec.HasField("images"):
        entry["images"] = [
            _non_empty(tag=image.tag, buildJobUrl=image.build_job_url) for image in spec.images.images
        ]
    if spec.HasField("security_context"):
        _security(spec.security_context, entry, refuse)
    if spec.HasField("runtime_metadata"):
        runtime = spec.runtime_metadata
        entry["runtimeMetadata"] = _non_empty(
            type=type(runtime).RuntimeType.Name(runtime.type), version=runtime.version, flavor=runtime.flavor
        )
    if spec.HasField("profile"):
        profile = spec.profile
        entry["profile"] = _non_empty(
            type=profile.type,
            name=profile.name,
            description=profile.short_description,
            iconUrl=profile.icon_url,
        )
    if spec.HasField("creator"):
        refuse("creator", "is filled in by Flyte's identity enrichment; stack config cannot write it")
    if spec.HasField("inputs"):
        entry["inputs"] = [_input(item, index, refuse) for index, item in enumerate(spec.inputs.items)]
    if spec.links:
        entry["links"] = [
            {
                "path": link.path,
                **_non_empty(title=link.title),
                **({"isRelative": True} if link.is_relative else {}),
            }
            for link in spec.links
        ]
    if spec.HasField("timeouts"):
        entry["timeouts"] = (
            {"request": _duration(spec.timeouts.request_timeout)}
            if spec.timeouts.HasField("request_timeout")
            else {}
        )
    if live.stopped:
        entry["stopped"] = True
    entry[ADOPT_KEY] = mode
    if result.refusals:
        result.entry = {}
    else:
        result.entry = entry
    return result


class _Refuser:
    """Collects refusals under one app's key path."""

    def __init__(self, found: list[ConfigProblem], prefix: str) -> None:
        self._found = found
        self._prefix = prefix

    def __call__(self, path: str, message: str) -> None:
        self._found.append(ConfigProblem(f"{self._prefix}.{path}", message))


def _non_empty(**values: str) -> dict[str, str]:
    return {key: value for key, value in values.items() if value}


def _duration(value: Any) -> str:
    return format_duration(int(value.seconds) * NANOS_PER_SECOND + int(value.nanos))


def _env_refusals(env: list[tuple[str, str]], path: str, refuse: _Refuser) -> None:
    for index, (name, value) in enumerate(env):
        if looks_like_credential(name) or value_looks_like_credential(value):
            refuse(
                f"{path}[{index}]",
                f"env var {shown(name)} looks like a credential and is never written in plain text; "
                f"{SECRET_FIX}",
            )


def _container(container: tasks_pb2.Container, refuse: _Refuser) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if container.image:
        result["image"] = container.image
    if container.command:
        result["command"] = list(container.command)
    if container.args:
        result["args"] = list(container.args)
    env = [(var.key, var.value) for var in container.env]
    _env_refusals(env, "container.env", refuse)
    if env:
        result["env"] = [{"name": name, "value": value} for name, value in env]
    if container.ports:
        result["ports"] = [
            {"containerPort": port.container_port, **_non_empty(name=port.name)} for port in container.ports
        ]
    if container.HasField("resources"):
        resources: dict[str, Any] = {}
        for key, entries in (
            ("requests", container.resources.requests),
            ("limits", container.resources.limits),
        ):
            named: dict[str, str] = {}
            for index, resource in enumerate(entries):
                name = _RESOURCE_NAMES.get(resource.name)
                if name is None:
                    refuse(
                        f"container.resources.{key}[{index}]",
                        f"resource {tasks_pb2.Resources.ResourceName.Name(resource.name)} has no config key "
                        "(Kubernetes accepts none for a container)",
                    )
                elif name in named:
                    refuse(f"container.resources.{key}[{index}]", f"{name} is given twice")
                else:
                    named[name] = resource.value
            if named:
                resources[key] = named
        result["resources"] = resources
    if container.HasField("data_config") or container.config or container.architecture:
        refuse("container", "has data_config, config or architecture, which have no config key")
    return result


def _pod(pod: tasks_pb2.K8sPod, refuse: _Refuser) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if pod.HasField("metadata"):
        result["metadata"] = {
            key: dict(values)
            for key, values in (("labels", pod.metadata.labels), ("annotations", pod.metadata.annotations))
            if values
        }
    spec = _whole_numbers(MessageToDict(pod.pod_spec)) if pod.HasField("pod_spec") else {}
    for index, container in enumerate(spec.get("containers") or []):
        env = [(str(var.get("name")), str(var.get("value", ""))) for var in container.get("env") or []]
        _env_refusals(env, f"pod.spec.containers[{index}].env", refuse)
    result["spec"] = spec
    if pod.primary_container_name:
        result["primaryContainerName"] = pod.primary_container_name
    if pod.HasField("data_config"):
        refuse("pod.dataConfig", "has no config key")
    return result


def _whole_numbers(node: Any) -> Any:
    """A Struct's numbers are doubles: ``8080.0`` is written ``8080`` (the Struct stores the same)."""
    if isinstance(node, dict):
        return {key: _whole_numbers(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_whole_numbers(value) for value in node]
    if isinstance(node, float) and node.is_integer():
        return int(node)
    return node


def _extended(extended: tasks_pb2.ExtendedResources, entry: dict[str, Any], refuse: _Refuser) -> None:
    if extended.HasField("gpu_accelerator"):
        gpu = extended.gpu_accelerator
        accelerator: dict[str, Any] = {"device": gpu.device}
        which = gpu.WhichOneof("partition_size_value")
        if which == "partition_size":
            accelerator["partitionSize"] = gpu.partition_size
        elif which == "unpartitioned":
            accelerator["unpartitioned"] = gpu.unpartitioned
        if gpu.device_class:
            accelerator["deviceClass"] = tasks_pb2.GPUAccelerator.DeviceClass.Name(gpu.device_class)
        entry["accelerator"] = accelerator
    if extended.HasField("shared_memory"):
        memory = extended.shared_memory
        entry["sharedMemory"] = {
            "sizeLimit": memory.size_limit or "auto",
            "mountPath": memory.mount_path,
            "mountName": memory.mount_name,
        }
    if not extended.HasField("gpu_accelerator") and not extended.HasField("shared_memory"):
        refuse("extendedResources", "is present but empty, which stack config cannot write")


def _autoscaling(scaling: app_pb.AutoscalingConfig, refuse: _Refuser) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if scaling.HasField("replicas"):
        result["minReplicas"] = scaling.replicas.min
        result["maxReplicas"] = scaling.replicas.max
    metric = scaling.scaling_metric.WhichOneof("metric") if scaling.HasField("scaling_metric") else None
    if metric == "concurrency":
        result["metric"] = "concurrency"
        result["target"] = scaling.scaling_metric.concurrency.target_value
    elif metric == "request_rate":
        result["metric"] = "rps"
        result["target"] = scaling.scaling_metric.request_rate.target_value
    elif scaling.HasField("scaling_metric"):
        refuse("autoscaling.metric", "is present without a metric, which stack config cannot write")
    if scaling.HasField("scaledown_period"):
        result["scaledownPeriod"] = _duration(scaling.scaledown_period)
    return result


def _security(context: security_pb2.SecurityContext, entry: dict[str, Any], refuse: _Refuser) -> None:
    if context.HasField("run_as"):
        run_as = context.run_as
        if run_as.iam_role or run_as.HasField("oauth2_client") or run_as.execution_identity:
            refuse(
                "securityContext.runAs",
                "has an IAM role, OAuth2 client or execution identity: no config key (Flyte's app service "
                "ignores them)",
            )
        entry["serviceAccount"] = run_as.k8s_service_account
    if context.secrets:
        entry["secrets"] = [
            {
                "key": secret.key,
                **_non_empty(group=secret.group, groupVersion=secret.group_version),
                **(
                    {"mountRequirement": security_pb2.Secret.MountType.Name(secret.mount_requirement)}
                    if secret.mount_requirement
                    else {}
                ),
                **_non_empty(envVar=secret.env_var),
            }
            for secret in context.secrets
        ]
    if context.allow_anonymous:
        entry["requiresAuth"] = False
    has_tokens = any(described.name == _TOKENS_FIELD for described, _ in context.ListFields())
    if has_tokens:
        refuse("securityContext.tokens", "has no config key")
    if not (context.HasField("run_as") or context.secrets or context.allow_anonymous or has_tokens):
        refuse("securityContext", "is present but empty, which stack config cannot write")


def _input(item: app_pb.Input, index: int, refuse: _Refuser) -> dict[str, Any]:
    result: dict[str, Any] = {"name": item.name}
    which = item.WhichOneof("value")
    if which == "string_value":
        result["value"] = item.string_value
    elif which == "app_id":
        ref = item.app_id
        result["app"] = {
            "project": ref.project,
            "domain": ref.domain,
            "name": ref.name,
            **_non_empty(org=ref.org),
        }
    elif which == "artifact_id":
        artifact = item.artifact_id
        written: dict[str, Any] = {}
        if artifact.HasField("key"):
            key = artifact.key
            written["key"] = _non_empty(project=key.project, domain=key.domain, name=key.name, org=key.org)
        if artifact.version:
            written["version"] = artifact.version
        result["artifact"] = written
    else:
        refuse(f"inputs[{index}]", f"{shown(item.name)} has a value of a kind stack config cannot write")
    return result
