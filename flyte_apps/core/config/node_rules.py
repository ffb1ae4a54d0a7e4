"""What the API server or the node refuses in a pod that no schema says: tolerations (Kubernetes'
``ValidateTolerations``), node selectors (``ValidateLabels``), image references (the kubelet's
parser: ``InvalidImageName``) and NUL bytes in what becomes a process's environment or arguments
(the container runtime cannot pass them), and requests above their limits. Used for an app's merged
pod spec and for the manager's Deployment, so ``render`` and ``check`` refuse what the cluster would
refuse after ``pulumi up``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import shown
from flyte_apps.core.config.names import LABEL_VALUE, MAX_LABEL_LEN, image_problem, label_key_problem
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.quantities import quantity_value, suffix_of

TOLERATION_OPERATORS: Final = ("Equal", "Exists")
TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
NUL: Final = "\x00"


def label_value_message(value: str) -> str | None:
    """Why Kubernetes refuses ``value`` as a label value (``IsValidLabelValue``), or None."""
    if len(value) <= MAX_LABEL_LEN and LABEL_VALUE.fullmatch(value):
        return None
    return (
        f"{shown(value)} is not a valid label value (at most 63 letters, digits, '-', '_' or '.', "
        "starting and ending with a letter or digit; or empty)"
    )


def node_selector_problems(selector: object, path: str) -> list[ConfigProblem]:
    """Each key a label key and each value a label value, as the API server's ``ValidateLabels``."""
    if not isinstance(selector, Mapping):
        return []  # the schemas report a selector that is not a map
    found: list[ConfigProblem] = []
    for key, value in selector.items():
        where = f"{path}.{key}"
        problem = label_key_problem(str(key))
        if problem:
            found.append(ConfigProblem(where, f"not a valid node label key: {problem}"))
        if isinstance(value, str) and (message := label_value_message(value)):
            found.append(ConfigProblem(where, message))
    return found


def toleration_problems(tolerations: object, path: str) -> list[ConfigProblem]:
    """Each toleration as the API server's ``ValidateTolerations`` (Kubernetes 1.34) reads it: a key
    that is a label key, ``Exists`` when the key is empty, ``tolerationSeconds`` only with
    ``NoExecute``, a value that is a label value (``Equal``) or empty (``Exists``), a known operator
    and effect."""
    if not isinstance(tolerations, list):
        return []
    found: list[ConfigProblem] = []
    for index, toleration in enumerate(tolerations):
        if isinstance(toleration, Mapping):
            found.extend(_toleration(toleration, f"{path}[{index}]"))
    return found


def _toleration(toleration: Mapping[str, Any], where: str) -> Iterator[ConfigProblem]:
    key = _text(toleration.get("key"))
    operator = _text(toleration.get("operator"))
    value = _text(toleration.get("value"))
    effect = _text(toleration.get("effect"))
    if key and (problem := label_key_problem(key)):
        yield ConfigProblem(f"{where}.key", f"not a valid label key: {problem}")
    if not key and operator != "Exists":
        yield ConfigProblem(
            f"{where}.operator", "must be Exists when the key is empty (which tolerates every taint)"
        )
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        yield ConfigProblem(f"{where}.effect", "must be NoExecute when tolerationSeconds is set")
    if operator in ("", "Equal"):
        if message := label_value_message(value):
            yield ConfigProblem(f"{where}.value", message)
    elif operator == "Exists":
        if value:
            yield ConfigProblem(f"{where}.value", "must be empty when the operator is Exists")
    else:
        yield ConfigProblem(
            f"{where}.operator", f"{shown(operator)} is not one of {', '.join(TOLERATION_OPERATORS)}"
        )
    if effect and effect not in TAINT_EFFECTS:
        yield ConfigProblem(
            f"{where}.effect",
            f"{shown(effect)} is not one of {', '.join(TAINT_EFFECTS)} (or empty: every effect)",
        )


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def image_problems(image: object, path: str) -> list[ConfigProblem]:
    """The kubelet's verdict on an image reference (an empty or missing one is reported elsewhere)."""
    if not isinstance(image, str) or not image.strip():
        return []
    problem = image_problem(image)
    return [] if problem is None else [ConfigProblem(path, f"not an image the kubelet can pull: {problem}")]


def request_limit_problems(
    container: Mapping[str, Any], path_of: Any, *, skip: frozenset[str] = frozenset()
) -> list[ConfigProblem]:
    """A request above its limit, decided exactly (``1001m`` > ``1``, ``1Gi`` = ``1073741824``): the
    API server refuses the revision's pod template (``ValidateResourceRequirements``). ``skip``: the
    resource names a rule of their own checks (the GPU, whose request must equal its limit)."""
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return []
    requests, limits = resources.get("requests"), resources.get("limits")
    if not isinstance(requests, Mapping) or not isinstance(limits, Mapping):
        return []
    found: list[ConfigProblem] = []
    for name, requested in requests.items():
        if name not in limits or name in skip:
            continue
        request, limit = _quantity(requested), _quantity(limits[name])
        if request is not None and limit is not None and request > limit:
            found.append(
                ConfigProblem(
                    path_of(("resources", "requests", name)),
                    f"{shown(str(requested))} is more than its limit {shown(str(limits[name]))}: "
                    "Kubernetes refuses a request above the limit",
                )
            )
    return found


def _quantity(value: object) -> Fraction | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return quantity_value(str(value))


def knative_reserved_env_message(name: str) -> str:
    return (
        f"{shown(name)} is set by Knative in the serving container; its webhook refuses a revision setting it"
    )


def reserved_env_problems(
    container: Mapping[str, Any], path_of: Any, *, serving: bool, env_from: int = 0
) -> list[ConfigProblem]:
    """Env names Knative reserves (:data:`~flyte_apps.core.constants.KNATIVE_RESERVED_ENV_VARS`; a
    sidecar or init container may set ``PORT``), from index ``env_from`` on."""
    reserved = set(c.KNATIVE_RESERVED_ENV_VARS) - (set() if serving else {c.KNATIVE_ENV_PORT})
    env = container.get("env")
    if not isinstance(env, list):
        return []
    return [
        ConfigProblem(path_of(("env", index, "name")), knative_reserved_env_message(var["name"]))
        for index, var in enumerate(env[env_from:], start=env_from)
        if isinstance(var, Mapping) and var.get("name") in reserved
    ]


def nul_in_env_message(name: object) -> str:
    return f"the value of {shown(name)} contains a NUL byte (\\0): an environment cannot hold one"


def nul_problems(container: Mapping[str, Any], path_of: Any, *, env_from: int = 0) -> list[ConfigProblem]:
    """NUL bytes in a container's ``command``, ``args`` or env values from index ``env_from`` on (the
    entries before it were checked where the app's env was read): a process cannot be given one.
    ``path_of(place)`` names a place in the container (``("env", 2, "value")``) as a config key."""
    found: list[ConfigProblem] = []
    for field in ("command", "args"):
        items = container.get(field)
        if isinstance(items, list):
            for index, item in enumerate(items):
                if isinstance(item, str) and NUL in item:
                    found.append(ConfigProblem(path_of((field, index)), "contains a NUL byte (\\0)"))
    env = container.get("env")
    if isinstance(env, list):
        for index, var in enumerate(env[env_from:], start=env_from):
            if isinstance(var, Mapping) and isinstance(var.get("value"), str) and NUL in var["value"]:
                found.append(
                    ConfigProblem(path_of(("env", index, "value")), nul_in_env_message(var.get("name")))
                )
    return found


MEMORY: Final = "memory"
SMALLEST_LIKELY_MEMORY: Final = 2**20
"""A bare number of bytes below this (1 MiB) is surely a size in another unit: no container runs in it."""
DECIMAL_SUFFIXES: Final = frozenset("kMGTPE")


def memory_unit_warning(value: str, path: str) -> str | None:
    """A warning, naming ``path``, for a memory size that is surely not what was meant: a bare number
    under 1 MiB (``48`` is 48 bytes), or a decimal unit where binary is the usual one (``32G``)."""
    suffix, size = suffix_of(value), quantity_value(value)
    if suffix is None or size is None or size <= 0:
        return None
    if suffix == "" and size < SMALLEST_LIKELY_MEMORY:
        return (
            f"{path}: {value} is {value} bytes (a bare number counts bytes); "
            f"did you mean {value}Mi or {value}Gi?"
        )
    if suffix in DECIMAL_SUFFIXES:
        binary = f"{value[: -len(suffix)]}{'Ki' if suffix == 'k' else f'{suffix}i'}"
        return (
            f"{path}: {value} is {int(size):,} bytes (a decimal unit); {binary} is "
            f"{int(quantity_value(binary) or 0):,} bytes, the binary unit memory is usually sized in"
        )
    return None


def memory_warnings(resources: object, path: str) -> list[str]:
    """:func:`memory_unit_warning` for the ``memory`` request and limit of a container's resources."""
    if not isinstance(resources, Mapping):
        return []
    found: list[str] = []
    for block in ("requests", "limits"):
        entries = resources.get(block)
        value = entries.get(MEMORY) if isinstance(entries, Mapping) else None
        if isinstance(value, str | int) and not isinstance(value, bool):
            warning = memory_unit_warning(str(value), f"{path}.{block}.{MEMORY}")
            if warning:
                found.append(warning)
    return found
