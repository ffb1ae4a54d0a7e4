"""KServices as Flyte's Go app service builds them (reference (c)4-5, and (c)7's stop patch), from a
``flyte.org/spec`` and the data plane's settings: written from the reference, not with our renderer,
so that ``flyte-apps import`` is judged against what a Flyte cluster really holds.

Go's JSON drops empty slices (``omitempty``) and writes a Struct's whole numbers as integers (they
are decoded into typed PodSpec fields). The secret annotations use ``encode_secret``, itself checked
against upstream's vectors in ``tests/core``.

Upstream does not store the bytes it was given: it decodes the spec and marshals it again with
protobuf-go (``proto.Marshal``), whose field order is not Python's. ``go_bytes`` takes those bytes from
what protobuf-go itself wrote for the same message (``tests/fixtures/go_spec_corpus.json``, made by
the Go judge), never from our encoder; a spec missing there is an error saying how to add it."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from flyteidl2.app import app_definition_pb2 as app_pb
from flyteidl2.core import tasks_pb2
from google.protobuf import text_format
from google.protobuf.json_format import MessageToDict

from flyte_apps.core.secrets import encode_secret
from tests.support.spec_judge import CORPUS, SPEC, corpus

NAMESPACE: Final = "flyte"
SUFFIX_TEMPLATE: Final = "{{ project }}-{{ domain }}"
_RESOURCES: Final = {
    tasks_pb2.Resources.CPU: "cpu",
    tasks_pb2.Resources.MEMORY: "memory",
    tasks_pb2.Resources.STORAGE: "storage",
    tasks_pb2.Resources.EPHEMERAL_STORAGE: "ephemeral-storage",
}
"""(c)4: GPU and UNKNOWN entries are silently dropped."""


@dataclass(frozen=True)
class DataPlane:
    """``internalApps`` settings."""

    namespace: str = NAMESPACE
    default_env: tuple[tuple[str, str], ...] = ()
    default_timeout_seconds: int = 300
    suffix_template: str = SUFFIX_TEMPLATE
    default_service_account: str = ""


def _whole(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: _whole(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_whole(value) for value in node]
    if isinstance(node, float) and node.is_integer():
        return int(node)
    return node


def _pod_spec(spec: app_pb.Spec) -> dict[str, Any]:
    if spec.HasField("pod"):
        pod: dict[str, Any] = _whole(MessageToDict(spec.pod.pod_spec))
        pod.setdefault("enableServiceLinks", False)
        return pod
    given = spec.container
    container: dict[str, Any] = {"name": "app", "image": given.image}
    if given.command:
        container["command"] = list(given.command)
    if given.args:
        container["args"] = list(given.args)
    if given.env:
        container["env"] = [{"name": var.key, "value": var.value} for var in given.env]
    if given.ports:
        container["ports"] = [
            {"containerPort": port.container_port, **({"name": port.name} if port.name else {})}
            for port in given.ports
        ]
    resources: dict[str, Any] = {}
    for key, entries in (("requests", given.resources.requests), ("limits", given.resources.limits)):
        named = {_RESOURCES[entry.name]: entry.value for entry in entries if entry.name in _RESOURCES}
        if named:
            resources[key] = named
    container["resources"] = resources
    return {"containers": [container], "enableServiceLinks": False}


def _duration(seconds: int) -> str:
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes}m{rest}s"
    return f"{minutes}m{rest}s" if minutes else f"{rest}s"


@cache
def _go_corpus() -> dict[bytes, bytes]:
    """Python's field-number-order bytes -> protobuf-go's, for every ``Spec`` of the Go judge's corpus."""
    return {
        base64.b64decode(case["input"]): base64.b64decode(case["go"])
        for case in corpus()
        if case["message"] == SPEC
    }


def go_bytes(spec: app_pb.Spec) -> bytes:
    """``proto.Marshal(spec)`` as protobuf-go wrote it (for a spec with maps: sorted, one of Go's orders)."""
    try:
        return _go_corpus()[spec.SerializeToString(deterministic=True)]
    except KeyError:
        raise LookupError(
            f"protobuf-go's bytes for this spec are not in {CORPUS.name}: add it to "
            f"tests/vectors/go_specs.py and run `make vectors`\n{text_format.MessageToString(spec)}"
        ) from None


def upstream_kservice(
    spec_b64: str, project: str, domain: str, name: str, org: str = "", plane: DataPlane | None = None
) -> dict[str, Any]:
    """``buildKService`` of (c)5 for the app with this spec (any serialization of it): Flyte decodes it
    and stores its own marshalling of it."""
    plane = plane or DataPlane()
    spec = app_pb.Spec()
    spec.ParseFromString(base64.b64decode(spec_b64))
    data = go_bytes(spec)
    pod = _pod_spec(spec)
    account = spec.security_context.run_as.k8s_service_account or plane.default_service_account
    if account:
        pod["serviceAccountName"] = account
    suffix = plane.suffix_template.replace("{{ project }}", project.lower()).replace(
        "{{ domain }}", domain.lower()
    )
    first = pod["containers"][0]
    first["env"] = [
        *({"name": key, "value": value} for key, value in plane.default_env),
        *(first.get("env") or []),
        {
            "name": "INTERNAL_APP_ENDPOINT_PATTERN",
            "value": f"http://{{app_fqdn}}-{suffix}.{plane.namespace}.svc.cluster.local",
        },
        {"name": "FLYTE_INTERNAL_EXECUTION_PROJECT", "value": project},
        {"name": "FLYTE_INTERNAL_EXECUTION_DOMAIN", "value": domain},
    ]
    annotations: dict[str, str] = {}
    scaling = spec.autoscaling
    if scaling.HasField("replicas"):
        annotations["autoscaling.knative.dev/min-scale"] = str(scaling.replicas.min)
        annotations["autoscaling.knative.dev/max-scale"] = str(scaling.replicas.max)
    metric = scaling.scaling_metric
    if metric.HasField("request_rate"):
        annotations["autoscaling.knative.dev/metric"] = "rps"
        annotations["autoscaling.knative.dev/target"] = str(metric.request_rate.target_value)
    elif metric.HasField("concurrency"):
        annotations["autoscaling.knative.dev/metric"] = "concurrency"
        annotations["autoscaling.knative.dev/target"] = str(metric.concurrency.target_value)
    if scaling.HasField("scaledown_period"):
        annotations["autoscaling.knative.dev/window"] = _duration(scaling.scaledown_period.seconds)
    template: dict[str, Any] = {}
    secrets = spec.security_context.secrets
    if secrets:
        template["labels"] = {
            "organization": "flyte",
            "project": project,
            "domain": domain,
            "inject-flyte-secrets": "true",
        }
        annotations.update(
            {f"flyte.secrets/s{index}": encode_secret(secret) for index, secret in enumerate(secrets)}
        )
    template["annotations"] = annotations
    timeout = plane.default_timeout_seconds
    if spec.timeouts.HasField("request_timeout"):
        timeout = spec.timeouts.request_timeout.seconds
    pod["timeoutSeconds"] = timeout
    return {
        "apiVersion": "serving.knative.dev/v1",
        "kind": "Service",
        "metadata": {
            "name": f"{name}-{project}-{domain}".lower(),
            "namespace": plane.namespace,
            "labels": {
                "flyte.org/app-managed": "true",
                "flyte.org/project": project,
                "flyte.org/domain": domain,
                "flyte.org/app-name": name,
            },
            "annotations": {
                "flyte.org/spec-sha": hashlib.sha256(data).digest()[:8].hex(),
                "flyte.org/app-id": f"{project}/{domain}/{name}",
                "flyte.org/app-org": org,
                "flyte.org/spec": base64.b64encode(data).decode("ascii"),
            },
        },
        "spec": {"template": {"metadata": template, "spec": pod}},
    }


def stop(kservice: dict[str, Any]) -> dict[str, Any]:
    """(c)7's merge patch: the app stopped through Flyte."""
    kservice["metadata"]["labels"].update(
        {"flyte.org/app-stopped": "true", "networking.knative.dev/visibility": "cluster-local"}
    )
    kservice["spec"]["template"]["metadata"].setdefault("annotations", {}).update(
        {"autoscaling.knative.dev/min-scale": "0", "autoscaling.knative.dev/initial-scale": "0"}
    )
    return kservice
