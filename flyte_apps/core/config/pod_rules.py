"""Rules for an app's payload: its parts one by one (``payload_part_problems``), and the merged pod
spec (``payload_problems``, on ``flyte_apps.core.config.payload``'s result): Knative's schema then
Kubernetes' (``flyte_apps.core.pod_schema``), then what neither schema says but Knative or Flyte's app
service needs of the containers — one serving container, the primary container first (Flyte puts its
env into ``containers[0]``), no container named like Knative's sidecar, an image for each after the
merge — and the volume, GPU and metadata rules of their own modules. Each problem is reported at the
config key where the user wrote the value (``flyte_apps.core.config.pod_paths``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import bounded, shown
from flyte_apps.core.config.accelerators import gpu_resource_name
from flyte_apps.core.config.gpu_rules import (
    accelerator_problems,
    container_resource_problems,
    gpu_count_problems,
    gpu_problems,
)
from flyte_apps.core.config.metadata_rules import pod_metadata_problems
from flyte_apps.core.config.models import (
    Accelerator,
    AppInput,
    Container,
    Platform,
    PodTemplate,
    SharedMemory,
)
from flyte_apps.core.config.names import DNS1123_LABEL, MAX_LABEL_LEN
from flyte_apps.core.config.node_rules import (
    image_problems,
    node_selector_problems,
    nul_problems,
    request_limit_problems,
    reserved_env_problems,
    toleration_problems,
)
from flyte_apps.core.config.payload import Payload, resource_maps
from flyte_apps.core.config.pod_paths import CONTAINER_LISTS, KeyPaths, Place, dicts
from flyte_apps.core.config.rules import KNATIVE_PORT_NAMES, KNATIVE_RESERVED_PORTS
from flyte_apps.core.config.volume_rules import shared_memory_clashes, shared_memory_problems, volume_problems
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.pod_schema import PodSpecSchemas, SchemaError

SUGGESTION_CUTOFF: Final = 0.75
"""How alike a misspelled field and a real one must be to suggest it (difflib's ratio): PodSpec field
names share long words, so the config kit's 0.6 would offer ``dnsPolicy`` for ``restartPolicy``."""


def payload_problems(
    app: AppInput, payload: Payload, settings: Platform, schemas: PodSpecSchemas, path: str
) -> list[ConfigProblem]:
    """Every problem of the merged pod spec of ``app`` (at ``path``)."""
    where = KeyPaths(payload, path)
    found: list[ConfigProblem] = []
    if app.pod is not None:
        found.extend(schema_problems(schemas.errors(payload.spec), where))
        # A value the schemas refused is one mistake: the rules below do not report it again.
        refused = {problem.path for problem in found}
        found.extend(
            problem
            for problem in (
                *container_problems(app, payload, where, gpu_resource_name(app.accelerator, settings)),
                *volume_problems(payload.spec, where),
                *primary_env_problems(payload, where),
            )
            if problem.path not in refused
        )
    refused = {problem.path for problem in found}
    found.extend(
        problem
        for problem in node_problems(app, payload, where, gpu_resource_name(app.accelerator, settings))
        if problem.path not in refused
    )
    found.extend(gpu_problems(app, payload, settings, where))
    found.extend(shared_memory_clashes(app, payload, path))
    return found


def node_problems(
    app: AppInput, payload: Payload, where: KeyPaths, gpu_resource_name: str
) -> list[ConfigProblem]:
    """What the API server or the node would refuse in the merged pod spec
    (``flyte_apps.core.config.node_rules``): images, NUL bytes, Knative's env names, tolerations, the
    node selector. The
    env the app resolved (platform defaults, the app's own) was checked where it was read."""
    spec = payload.spec
    found: list[ConfigProblem] = []
    for key in CONTAINER_LISTS:
        for index, container in dicts(spec.get(key)):
            env_from = _pod_env_start(app, payload, key, index, container)
            found.extend(image_problems(container.get("image"), where((key, index, "image"))))
            path_of = partial(_in_container, where, key, index)
            found.extend(nul_problems(container, path_of, env_from=env_from))
            serving = key == "containers" and _serves(spec["containers"], index)
            found.extend(reserved_env_problems(container, path_of, serving=serving, env_from=env_from))
            found.extend(request_limit_problems(container, path_of, skip=frozenset({gpu_resource_name})))
    found.extend(toleration_problems(spec.get("tolerations"), where(("tolerations",))))
    found.extend(node_selector_problems(spec.get("nodeSelector"), where(("nodeSelector",))))
    return found


def _in_container(where: KeyPaths, key: str, index: int, place: Place) -> str:
    return where((key, index, *place))


def _serves(containers: list[Any], index: int) -> bool:
    """Whether ``containers[index]`` is the one Knative routes to: the only one, or the one with a port."""
    if len(containers) == 1:
        return True
    container = containers[index]
    return isinstance(container, dict) and bool(container.get("ports"))


def _pod_env_start(
    app: AppInput, payload: Payload, key: str, index: int, container: Mapping[str, Any]
) -> int:
    """Where the env the pod template wrote itself starts in a merged container (after the app's)."""
    if app.pod is None:
        env = container.get("env")
        return len(env) if isinstance(env, list) else 0
    if key == "containers" and index < len(payload.origins):
        return payload.origins[index].env_offset
    return 0


# --------------------------------------------------------------------------------------------------
# Schemas
# --------------------------------------------------------------------------------------------------


def schema_problems(errors: Sequence[SchemaError], where: KeyPaths) -> list[ConfigProblem]:
    """The schemas' violations as problems; a schema's own message may quote a whole value, so it
    is bounded like any message quoting user input."""
    found: list[ConfigProblem] = []
    for error in errors:
        message = bounded(error.message)
        close = _close_match(error.unknown, error.allowed)
        if error.unknown is not None and error.knative_field:
            message = (
                f"'{error.unknown}' is a field of Knative's revision, not of a Kubernetes PodSpec: Flyte "
                f"reads the pod template as a PodSpec and would drop it ({error.schema})"
            )
        elif error.unknown is not None and error.kubernetes_field:
            message = (
                f"Knative does not allow '{error.unknown}' here, although Kubernetes' PodSpec has it "
                f"({error.schema})"
            )
        elif error.unknown is not None and close:
            message = f"unknown field {shown(error.unknown)}; did you mean '{close}'? ({error.schema})"
        found.append(ConfigProblem(where(error.path), message))
    return found


def _close_match(unknown: str | None, allowed: Sequence[str]) -> str | None:
    """The field ``unknown`` most likely meant; difflib is quadratic in the key's length, so a key far
    longer than any field is matched with none."""
    if unknown is None or len(unknown) > 2 * max((len(name) for name in allowed), default=0):
        return None
    close = difflib.get_close_matches(unknown, allowed, n=1, cutoff=SUGGESTION_CUTOFF)
    return close[0] if close else None


# --------------------------------------------------------------------------------------------------
# Containers: names, the primary one, images, ports, resources
# --------------------------------------------------------------------------------------------------


def container_problems(
    app: AppInput, payload: Payload, where: KeyPaths, gpu_resource_name: str
) -> list[ConfigProblem]:
    """What Knative, Kubernetes and Flyte's app service need of the containers that their schemas do
    not say: names, the primary container first, an image each, one serving port, valid resources."""
    spec = payload.spec
    containers = spec.get("containers")
    if not isinstance(containers, list):
        return []  # the schemas report a missing or malformed list
    if not containers:
        return [
            ConfigProblem(
                where(("containers",)), "must list at least one container (or give the app a container)"
            )
        ]
    found = _name_problems(spec, where)
    found.extend(_primary_problems(app, payload, where))
    for key in CONTAINER_LISTS:
        for index, container in dicts(spec.get(key)):
            image = container.get("image")
            if not isinstance(image, str) or not image.strip():
                hint = " (here or in container.image)" if (key, index) == ("containers", 0) else ""
                found.append(ConfigProblem(where((key, index, "image")), f"is required{hint}"))
    found.extend(_port_problems(payload, where))
    # The resources the app's container set are checked where it wrote them.
    given = resource_maps(app.container.resources, gpu_resource_name) if app.container is not None else {}
    written = frozenset((block, name) for block, entries in given.items() for name in entries)
    for key in CONTAINER_LISTS:
        for index, container in dicts(spec.get(key)):
            primary = key == "containers" and container.get("name") == payload.primary
            found.extend(
                container_resource_problems(
                    container.get("resources"),
                    where((key, index, "resources")),
                    gpu_resource_name,
                    skip=written if primary else frozenset(),
                )
            )
    return found


def _name_problems(spec: Mapping[str, Any], where: KeyPaths) -> list[ConfigProblem]:
    found: list[ConfigProblem] = []
    seen: dict[str, Place] = {}
    for key in CONTAINER_LISTS:
        for index, container in dicts(spec.get(key)):
            name = container.get("name")
            if not isinstance(name, str):
                continue  # Kubernetes' schema requires a string name
            place: Place = (key, index, "name")
            if name == c.QUEUE_PROXY_CONTAINER:
                found.append(
                    ConfigProblem(
                        where(place), f"'{name}' is Knative's own sidecar in every app pod; rename it"
                    )
                )
            elif len(name) > MAX_LABEL_LEN or not DNS1123_LABEL.fullmatch(name):
                found.append(
                    ConfigProblem(
                        where(place),
                        f"{shown(name)} is not a valid container name (a DNS-1123 label: lower-case letters, "
                        "digits and '-', at most 63 characters)",
                    )
                )
            if name in seen:
                found.append(
                    ConfigProblem(
                        where(place), f"duplicate container name '{name}' (also at {where(seen[name])})"
                    )
                )
            else:
                seen[name] = place
    return found


def _primary_problems(app: AppInput, payload: Payload, where: KeyPaths) -> list[ConfigProblem]:
    containers = payload.spec["containers"]
    index = next((i for i, item in dicts(containers) if item.get("name") == payload.primary), None)
    named = app.pod is not None and app.pod.primary_container_name is not None
    if index is None:
        return [
            ConfigProblem(
                f"{where.app_path}.pod.primaryContainerName" if named else where(("containers",)),
                f"no container is named '{payload.primary}', the primary container"
                + ("" if named else " (name it so, or set pod.primaryContainerName)"),
            )
        ]
    if index != 0:
        return [
            ConfigProblem(
                where(("containers", index, "name")),
                f"the primary container '{payload.primary}' must come first: Flyte's app service puts its "
                "environment variables into containers[0]",
            )
        ]
    return []


def _port_problems(payload: Payload, where: KeyPaths) -> list[ConfigProblem]:
    """Knative routes to exactly one container: one port at most, on at most one container; with
    several containers, one of them must have it. Ports the app's container wrote were checked there."""
    spec = payload.spec
    found: list[ConfigProblem] = []
    serving: list[int] = []
    containers = list(dicts(spec.get("containers")))
    for index, container in containers:
        ports = container.get("ports")
        if not isinstance(ports, list) or not ports:
            continue
        serving.append(index)
        offset = payload.origins[index].ports_offset
        seen: dict[int, int] = {}
        for number, port in dicts(ports):
            value = port.get("containerPort")
            if not isinstance(value, int) or isinstance(value, bool):
                continue  # the schemas report it
            place: Place = ("containers", index, "ports", number)
            first = seen.setdefault(value, number)
            if number < offset:
                continue
            if first != number:
                found.append(
                    ConfigProblem(
                        where((*place, "containerPort")),
                        f"duplicate port {value} (also at {where(('containers', index, 'ports', first))})",
                    )
                )
                continue
            if value in KNATIVE_RESERVED_PORTS:
                found.append(
                    ConfigProblem(
                        where((*place, "containerPort")),
                        f"port {value} is reserved by Knative's queue-proxy "
                        f"({', '.join(map(str, KNATIVE_RESERVED_PORTS))})",
                    )
                )
            name = port.get("name", "")
            if isinstance(name, str) and name not in KNATIVE_PORT_NAMES:
                found.append(
                    ConfigProblem(
                        where((*place, "name")),
                        f"Knative accepts only the port names 'http1' and 'h2c' (or none), not {shown(name)}",
                    )
                )
        if len(seen) > 1 and len(ports) > offset:
            found.append(
                ConfigProblem(
                    where(("containers", index, "ports")), "Knative allows at most one container port"
                )
            )
    for index in serving[1:]:
        found.append(
            ConfigProblem(
                where(("containers", index, "ports")),
                f"only one container may have a port: Knative serves one container (already "
                f"{where(('containers', serving[0], 'ports'))})",
            )
        )
    if len(containers) > 1 and not serving:
        found.append(
            ConfigProblem(
                where(("containers",)),
                "with several containers, one must have a port: Knative needs to know which one serves",
            )
        )
    return found


def primary_env_problems(payload: Payload, where: KeyPaths) -> list[ConfigProblem]:
    """In containers[0], where Flyte's env goes: no variable Flyte injects, no name twice."""
    containers = payload.spec.get("containers")
    if not isinstance(containers, list) or not containers or not isinstance(containers[0], dict):
        return []
    found: list[ConfigProblem] = []
    seen: dict[str, int] = {}
    for index, var in dicts(containers[0].get("env")):
        name = var.get("name")
        if not isinstance(name, str):
            continue
        place: Place = ("containers", 0, "env", index, "name")
        first = seen.setdefault(name, index)
        if index < payload.origins[0].env_offset:
            continue  # the app's own env, checked where it was written
        if name in c.INJECTED_ENV_VARS:
            found.append(
                ConfigProblem(
                    where(place), f"'{name}' is set by Flyte for every app and cannot be overridden"
                )
            )
        elif first != index:
            found.append(
                ConfigProblem(
                    where(place),
                    f"duplicate environment variable '{name}' (also at "
                    f"{where(('containers', 0, 'env', first, 'name'))})",
                )
            )
    return found


# --------------------------------------------------------------------------------------------------
# The payload's parts, one by one (they run even when other parts of the app are invalid)
# --------------------------------------------------------------------------------------------------


def payload_part_problems(
    fields: Mapping[str, Any], path: str, settings: Platform | None
) -> list[ConfigProblem]:
    """The rules of the payload's parts that are present (by field name; a part pydantic rejected is
    absent): a container or a pod template, an image, GPU counts, the accelerator, shared memory and
    the pod template's metadata and primary container name."""
    found: list[ConfigProblem] = []
    container, pod = fields.get("container"), fields.get("pod")
    if "container" in fields and "pod" in fields and container is None and pod is None:
        found.append(ConfigProblem(f"{path}.container", "is required (or a pod template: pod)"))
    if isinstance(container, Container):
        if container.image is None and "pod" in fields and pod is None:
            found.append(ConfigProblem(f"{path}.container.image", "is required"))
        elif container.image is not None and not container.image.strip():
            found.append(ConfigProblem(f"{path}.container.image", "must not be empty"))
        if container.resources is not None:
            found.extend(gpu_count_problems(container.resources, f"{path}.container.resources"))
    accelerator = fields.get("accelerator")
    if isinstance(accelerator, Accelerator):
        found.extend(accelerator_problems(accelerator, f"{path}.accelerator"))
    memory = fields.get("shared_memory")
    if isinstance(memory, SharedMemory):
        found.extend(shared_memory_problems(memory, f"{path}.sharedMemory"))
    if isinstance(pod, PodTemplate):
        if pod.metadata is not None:
            applied = settings is not None and settings.apply_pod_metadata
            found.extend(pod_metadata_problems(pod.metadata, applied=applied, path=f"{path}.pod.metadata"))
        name = pod.primary_container_name
        if name is not None and (len(name) > MAX_LABEL_LEN or not DNS1123_LABEL.fullmatch(name)):
            found.append(
                ConfigProblem(
                    f"{path}.pod.primaryContainerName",
                    f"{shown(name)} is not a valid container name (a DNS-1123 label: lower-case letters, "
                    "digits and '-', at most 63 characters)",
                )
            )
    return found
