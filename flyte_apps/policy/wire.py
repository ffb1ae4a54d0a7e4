"""Resources in Pulumi's wire form: what a policy sees, how unknown values look, and how a rendered
object becomes the resource the pack would see (type token, logical name, camelCase props).

During ``pulumi preview`` some inputs are not known yet. pulumi-policy hands rules its props wrapped
in a proxy whose item access raises ``UnknownValueError`` for such a value (and the raw gRPC form
carries sentinel strings). ``plain`` turns either form into plain dicts and lists in which every
unknown value is the ``UNKNOWN`` marker, so a rule can skip what it cannot judge yet instead of
failing (the engine re-runs every policy at ``pulumi up``, when the values are known).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from flyte_apps.core import constants as c
from flyte_apps.core.constants import LABEL_NAME
from flyte_apps.core.manager.layout import MANAGER_NAME
from flyte_apps.core.objects import RenderedObject

Report = Callable[[str, str | None], None]
"""pulumi-policy's ``ReportViolation``: a message and, for stack policies, the offending URN."""

NAMESPACE_LOGICAL_NAME: Final = "apps-namespace"
"""The Pulumi name of the apps' namespace (``components.program.NAMESPACE_NAME``; a test
keeps the two equal, this module may not import the Pulumi layer)."""
KSERVICE_LOGICAL_SUFFIX: Final = "-kservice"
"""``FlyteApp`` names its KService child ``<kservice name>-kservice``."""
MANAGER_COMPONENT_NAME: Final = "flyte-manager"
"""The Pulumi name of the ``FlyteManager`` component (``components.program.MANAGER_NAME``),
which names each child ``<component>-<kind>-<object name>``."""
PROJECT_TOKEN_PREFIX: Final = "kubernetes"

# Pulumi's unknown-value sentinels (pulumi/sdk/go/common/resource/properties.go; pulumi-policy's
# proxy.py) as they arrive over gRPC when a value is not known during preview.
UNKNOWN_SENTINELS: Final = frozenset(
    {
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",  # boolean
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",  # number
        "04da6b54-80e4-46f7-96ec-b56ff0331ba9",  # string
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",  # array
        "030794c1-ac77-496b-92df-f27374a8bd58",  # asset
        "e48ece36-62e2-4504-bad9-02848725956a",  # archive
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",  # object
    }
)


class _Unknown:
    """A value that is not known during preview."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Final = _Unknown()


# --------------------------------------------------------------------------------------------------
# What a rule is given (pulumi-policy's argument classes satisfy these structurally)
# --------------------------------------------------------------------------------------------------


class ResourceArgs(Protocol):
    """The part of ``pulumi_policy.ResourceValidationArgs`` the rules read."""

    @property
    def resource_type(self) -> str: ...
    @property
    def props(self) -> Mapping[str, Any]: ...
    @property
    def urn(self) -> str: ...
    @property
    def name(self) -> str: ...
    def get_config(self) -> Mapping[str, Any]: ...


class StackResource(Protocol):
    """The part of ``pulumi_policy.PolicyResource`` the rules read."""

    @property
    def resource_type(self) -> str: ...
    @property
    def props(self) -> Mapping[str, Any]: ...
    @property
    def urn(self) -> str: ...
    @property
    def name(self) -> str: ...


class StackArgs(Protocol):
    """The part of ``pulumi_policy.StackValidationArgs`` the rules read."""

    @property
    def resources(self) -> Sequence[StackResource]: ...
    def get_config(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class WireResource:
    """One resource as the policy pack sees it; satisfies ``StackResource``."""

    resource_type: str
    name: str
    props: Mapping[str, Any]
    urn: str = ""


@dataclass(frozen=True)
class OfflineResourceArgs:
    """``ResourceArgs`` for running a rule outside the Pulumi engine."""

    resource: WireResource
    config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def resource_type(self) -> str:
        return self.resource.resource_type

    @property
    def props(self) -> Mapping[str, Any]:
        return self.resource.props

    @property
    def urn(self) -> str:
        return self.resource.urn

    @property
    def name(self) -> str:
        return self.resource.name

    def get_config(self) -> Mapping[str, Any]:
        return self.config


@dataclass(frozen=True)
class OfflineStackArgs:
    """``StackArgs`` for running a stack rule outside the Pulumi engine."""

    resources: Sequence[WireResource]
    config: Mapping[str, Any] = field(default_factory=dict)

    def get_config(self) -> Mapping[str, Any]:
        return self.config


# --------------------------------------------------------------------------------------------------
# Reading props
# --------------------------------------------------------------------------------------------------


def plain(value: object) -> Any:
    """``value`` as plain dicts and lists, every unknown value replaced by ``UNKNOWN``."""
    if isinstance(value, str):
        return UNKNOWN if value in UNKNOWN_SENTINELS else value
    if isinstance(value, Mapping):
        return {str(key): plain(_item(value, key)) for key in list(value)}
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [plain(_item(value, index)) for index in range(len(value))]
    return value


def _item(container: Mapping[Any, Any] | Sequence[Any], key: Any) -> Any:
    try:
        return container[key]
    except Exception as exc:
        # pulumi_policy.proxy.UnknownValueError carries the sentinel; matched by attribute so that
        # the rules stay importable without the policy SDK.
        if hasattr(exc, "unknown_type_sentinel"):
            return UNKNOWN
        raise


def props_of(resource: ResourceArgs | StackResource) -> dict[str, Any]:
    props = plain(resource.props)
    return props if isinstance(props, dict) else {}


def dig(value: object, *path: str) -> Any:
    """``value[path[0]][path[1]]…``; None where a key is missing, ``UNKNOWN`` where a step is unknown."""
    for key in path:
        if value is UNKNOWN:
            return UNKNOWN
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def section(value: object) -> dict[str, Any] | None:
    """A dict; ``{}`` when missing or not a map; None when unknown (skip what depends on it)."""
    if value is UNKNOWN:
        return None
    return value if isinstance(value, dict) else {}


def items(value: object) -> list[Any]:
    """A list, or an empty one for anything else (missing or unknown)."""
    return value if isinstance(value, list) else []


def whole_number(value: object) -> int | None:
    """An integer from the wire (numbers arrive as floats, ConfigMap values as text), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def shown(value: object) -> str:
    """A value as messages print it: integral floats without ``.0``, text quoted."""
    number = whole_number(value) if not isinstance(value, str) else None
    if number is not None:
        return str(number)
    return repr(value) if isinstance(value, str) else str(value)


# --------------------------------------------------------------------------------------------------
# Type tokens
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KubeType:
    """A pulumi-kubernetes type token taken apart: ``kubernetes:<group>/<version>:<Kind>[Patch]``."""

    group: str
    """``core`` for the core API group, as in the token."""
    version: str
    kind: str
    patch: bool


def kube_type(token: str) -> KubeType | None:
    parts = token.split(":")
    if len(parts) != 3 or parts[0] != PROJECT_TOKEN_PREFIX or "/" not in parts[1]:
        return None
    group, _, version = parts[1].rpartition("/")
    kind = parts[2]
    patch = kind.endswith("Patch") and len(kind) > len("Patch")
    return KubeType(
        group=group, version=version, kind=kind.removesuffix("Patch") if patch else kind, patch=patch
    )


def is_kind(token: str, group: str, kind: str, *, patch: bool = False) -> bool:
    found = kube_type(token)
    return found is not None and (found.group, found.kind, found.patch) == (group, kind, patch)


def is_kservice(token: str) -> bool:
    return token == c.TYPE_KSERVICE


def type_token(api_version: str, kind: str, *, patch: bool = False) -> str:
    """The pulumi-kubernetes type token of ``apiVersion``/``kind`` (core group -> ``core/v1``)."""
    group, _, version = api_version.rpartition("/")
    return f"{PROJECT_TOKEN_PREFIX}:{group or 'core'}/{version}:{kind}{'Patch' if patch else ''}"


# --------------------------------------------------------------------------------------------------
# Rendered objects as the pack would see them
# --------------------------------------------------------------------------------------------------


def logical_name(obj: RenderedObject) -> str:
    """The Pulumi resource name the program gives ``obj``: ``<ksvc>-kservice`` for a KService,
    ``apps-namespace`` for the apps' namespace, ``<namespace>-<name>`` for a ConfigMap patch (the
    Knative config), ``flyte-manager-<kind>-<name>`` for an object of the manager (labelled
    ``app.kubernetes.io/name: flyte-manager``), and the object's own name otherwise."""
    api_version = str(obj.manifest.get("apiVersion", ""))
    labels = obj.manifest.get("metadata", {}).get("labels") or {}
    if api_version == c.KNATIVE_API_VERSION and obj.kind == c.KSERVICE_KIND:
        return f"{obj.name}{KSERVICE_LOGICAL_SUFFIX}"
    if api_version == "v1" and obj.kind == "Namespace":
        return NAMESPACE_LOGICAL_NAME
    if obj.patch and api_version == "v1" and obj.kind == "ConfigMap":
        return f"{obj.namespace}-{obj.name}"
    if not obj.patch and labels.get(LABEL_NAME) == MANAGER_NAME:
        return f"{MANAGER_COMPONENT_NAME}-{obj.kind.lower()}-{obj.name}"
    return obj.name


def offline_urn(stack: str, resource_type: str, name: str) -> str:
    """A URN of the shape the engine uses (without parent types, which no rule reads)."""
    return f"urn:pulumi:{stack}::{c.PROJECT_NAME}::{resource_type}::{name}"


def to_wire(obj: RenderedObject, *, stack: str) -> WireResource:
    """``obj`` as the pack receives it: the token of its kind (``…Patch`` for a patch), the program's
    logical name, and the manifest itself as props (pulumi-kubernetes sends it unchanged)."""
    token = type_token(str(obj.manifest["apiVersion"]), obj.kind, patch=obj.patch)
    name = logical_name(obj)
    return WireResource(
        resource_type=token, name=name, props=obj.manifest, urn=offline_urn(stack, token, name)
    )
