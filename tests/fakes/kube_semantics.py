"""Pure pieces of Kubernetes API semantics used by the fake API server in ``kube_api``.

They live apart from the HTTP plumbing so each rule (label selectors, JSON merge patch,
``Status`` bodies, timestamp formats, continue tokens) can be read and checked on its own,
and so the fake server stays one readable module.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final


@dataclass(frozen=True)
class ResourceType:
    """One API resource the fake serves; its identity decides URLs, kinds and messages."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """``apiVersion`` as written in objects (``v1`` for the core group)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``plural.group`` the way the API server names a resource in errors and RBAC."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def is_custom(self) -> bool:
        """Custom resources get CRD behaviour (mandatory resourceVersion on PUT, Status on delete)."""
        return bool(self.group)


PODS: Final = ResourceType("", "v1", "pods", "Pod", namespaced=True)
NAMESPACES: Final = ResourceType("", "v1", "namespaces", "Namespace", namespaced=False)
KSERVICES: Final = ResourceType("serving.knative.dev", "v1", "services", "Service", namespaced=True)
REVISIONS: Final = ResourceType("serving.knative.dev", "v1", "revisions", "Revision", namespaced=True)
DOMAIN_MAPPINGS: Final = ResourceType(
    "serving.knative.dev", "v1beta1", "domainmappings", "DomainMapping", namespaced=True
)
CONFIG_MAPS: Final = ResourceType("", "v1", "configmaps", "ConfigMap", namespaced=True)
NODES: Final = ResourceType("", "v1", "nodes", "Node", namespaced=False)
RESOURCES: Final = (PODS, NAMESPACES, KSERVICES, REVISIONS, DOMAIN_MAPPINGS, CONFIG_MAPS, NODES)

_REASONS: Final = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Gone",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def reason_for(code: int) -> str:
    """The ``Status.reason`` a real API server uses for an HTTP code."""
    return _REASONS.get(code, "Unknown")


def status_body(
    code: int,
    message: str,
    *,
    reason: str | None = None,
    name: str | None = None,
    resource: ResourceType | None = None,
) -> dict[str, Any]:
    """A ``metav1.Status`` failure object, the body every real API error carries."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason or reason_for(code),
        "code": code,
    }
    if name is not None or resource is not None:
        details: dict[str, Any] = {}
        if name is not None:
            details["name"] = name
        if resource is not None:
            details["kind"] = resource.plural
            if resource.group:
                details["group"] = resource.group
        body["details"] = details
    return body


class ApiError(Exception):
    """Raised inside the fake to answer with a ``Status`` body instead of a result."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body["message"])
        self.body = body


def api_error(code: int, message: str, **kwargs: Any) -> ApiError:
    """An :class:`ApiError` carrying :func:`status_body` (same keyword arguments)."""
    return ApiError(status_body(code, message, **kwargs))


def not_found(resource: ResourceType, name: str) -> ApiError:
    """The API server's 404 for one object."""
    return api_error(404, f'{resource.qualified} "{name}" not found', name=name, resource=resource)


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch: objects merge, ``null`` deletes, the rest replaces."""
    if not isinstance(patch, dict):
        return patch
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --- label and field selectors ---------------------------------------------------------------

_SET_RE: Final = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s*\(([^)]*)\)\s*$")
_EQ_RE: Final = re.compile(r"^\s*([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$")
_EXISTS_RE: Final = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")

Matcher = Callable[[Mapping[str, str]], bool]


def _split_requirements(text: str) -> list[str]:
    """Split on commas that are not inside ``in (...)`` value sets."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part for part in parts if part.strip()]


def _requirement(text: str) -> Matcher:
    """Compile one requirement; raise ValueError the way the API server rejects bad syntax."""
    if match := _SET_RE.match(text):
        key, op, raw_values = match.groups()
        values = frozenset(v.strip() for v in raw_values.split(",") if v.strip())
        if op == "in":
            return lambda labels: labels.get(key) in values
        # ``notin`` also matches objects that do not carry the key at all.
        return lambda labels: labels.get(key) not in values
    if match := _EQ_RE.match(text):
        key, op, value = match.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if match := _EXISTS_RE.match(text):
        negate, key = match.groups()
        if negate:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise ValueError(f"unable to parse requirement: {text.strip()!r}")


def parse_label_selector(text: str | None) -> Matcher:
    """Compile a label selector (equality- and set-based, comma = AND) into a predicate."""
    if not text or not text.strip():
        return lambda labels: True
    requirements = [_requirement(part) for part in _split_requirements(text)]
    return lambda labels: all(req(labels) for req in requirements)


def parse_field_selector(text: str | None) -> Callable[[Mapping[str, Any]], bool]:
    """Field selectors on ``metadata.name``, ``metadata.namespace`` and ``status.phase``."""
    if not text or not text.strip():
        return lambda obj: True
    checks: list[tuple[tuple[str, ...], str, bool]] = []
    for part in text.split(","):
        match = _EQ_RE.match(part)
        if not match:
            raise ValueError(f"invalid field selector: {part!r}")
        key, op, value = match.groups()
        if key not in ("metadata.name", "metadata.namespace", "status.phase"):
            raise ValueError(f'field label not supported: "{key}"')
        checks.append((tuple(key.split(".")), value, op == "!="))

    def matches(obj: Mapping[str, Any]) -> bool:
        for path, value, negate in checks:
            current: Any = obj
            for step in path:
                current = current.get(step) if isinstance(current, Mapping) else None
            if (current == value) == negate:
                return False
        return True

    return matches


# --- time formats ----------------------------------------------------------------------------


def utc_now() -> datetime:
    """Timezone-aware "now"; all fake timestamps are UTC like the API server's."""
    return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    """``metav1.Time`` wire format: whole seconds with a ``Z`` suffix."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_nano(moment: datetime) -> str:
    """The kubelet's log timestamp: always nine fractional digits, then ``Z``."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond * 1000:09d}Z"


def parse_rfc3339(text: str) -> datetime:
    """Parse an RFC 3339 timestamp (``Z`` or offset, optional fraction) into aware UTC."""
    normalised = text.strip().replace("z", "Z")
    if normalised.endswith("Z"):
        normalised = normalised[:-1] + "+00:00"
    # Python's parser accepts at most microseconds; the kubelet may send nanoseconds.
    normalised = re.sub(r"(\.\d{6})\d+", r"\1", normalised)
    moment = datetime.fromisoformat(normalised)
    if moment.tzinfo is None:
        raise ValueError(f"timestamp {text!r} has no time zone")
    return moment.astimezone(UTC)


# --- list continuation -----------------------------------------------------------------------


def encode_continue(after_key: tuple[str, str], resource_version: int) -> str:
    """Opaque continue token: where the previous page stopped and at which list RV."""
    raw = json.dumps({"after": list(after_key), "rv": resource_version}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[tuple[str, str], int]:
    """Inverse of :func:`encode_continue`; ValueError for tokens this fake never issued."""
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        namespace, name = data["after"]
        return (str(namespace), str(name)), int(data["rv"])
    except (binascii.Error, ValueError, KeyError, TypeError) as exc:
        raise ValueError("continue key is not valid") from exc
