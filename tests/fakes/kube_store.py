"""The fake API server's object storage: what etcd plus the generic registry do.

Objects are keyed by (resource, namespace, name).  Every write bumps one global
resourceVersion and is kept as a watch event until history is compacted; ``generation``
follows ``spec``; a write that changes nothing is not persisted.  Callers hold the server's
lock (a ``threading.Condition``) around every call; the store calls ``notify`` after each
write so watches and log followers wake up.
"""

from __future__ import annotations

import copy
import itertools
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .kube_semantics import (
    NAMESPACES,
    PODS,
    ResourceType,
    api_error,
    decode_continue,
    encode_continue,
    merge_patch,
    not_found,
    parse_field_selector,
    parse_label_selector,
    rfc3339,
    utc_now,
)

Key = tuple[ResourceType, str, str]


@dataclass(frozen=True)
class WatchEvent:
    """One write as a watch sees it: a snapshot of the object at resourceVersion ``rv``."""

    rv: int
    resource: ResourceType
    namespace: str
    type: str
    obj: dict[str, Any]


class ObjectStore:
    """Objects with resourceVersion, uid, generation and an event history."""

    def __init__(self, notify: Callable[[], None]) -> None:
        self._notify = notify
        self._names = itertools.count(1)
        self.objects: dict[Key, dict[str, Any]] = {}
        self.events: list[WatchEvent] = []
        self.rv = 1
        self.compacted = 0

    def find(self, resource: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        """The stored object (not a copy) or None."""
        return self.objects.get((resource, namespace if resource.namespaced else "", name))

    def compact(self) -> int:
        """Forget history up to now; watches from older resourceVersions get 410 Gone."""
        self.compacted = self.rv
        self.events = [e for e in self.events if e.rv > self.compacted]
        return self.compacted

    def delete(self, resource: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        """Remove one object (no cascading; the server decides what else goes)."""
        namespace = namespace if resource.namespaced else ""
        obj = copy.deepcopy(self.get(resource, namespace, name))
        self._write(resource, namespace, obj, "DELETED")
        return obj

    def get(self, resource: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        """The stored object (not a copy); 404 if absent."""
        obj = self.find(resource, namespace, name)
        if obj is None:
            raise not_found(resource, name)
        return obj

    def _write(self, resource: ResourceType, namespace: str, obj: dict[str, Any], event: str) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        key = (resource, namespace, obj["metadata"]["name"])
        if event == "DELETED":
            self.objects.pop(key, None)
        else:
            self.objects[key] = obj
        self.events.append(WatchEvent(self.rv, resource, namespace, event, copy.deepcopy(obj)))
        self._notify()

    def create(self, resource: ResourceType, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST semantics: defaults, generateName, namespace must exist, 409 on duplicates."""
        obj = copy.deepcopy(body)
        metadata = obj.setdefault("metadata", {})
        if not isinstance(metadata, dict):
            raise api_error(400, "metadata must be an object")
        for key, expected in (("apiVersion", resource.api_version), ("kind", resource.kind)):
            if obj.setdefault(key, expected) != expected:
                raise api_error(400, f"{key} {obj[key]!r} does not match the request path ({expected!r})")
        if not metadata.get("name"):
            if not metadata.get("generateName"):
                raise api_error(422, "name or generateName is required", reason="Invalid")
            metadata["name"] = f"{metadata['generateName']}{next(self._names):05x}"
        name = metadata["name"]
        if resource.namespaced:
            if metadata.setdefault("namespace", namespace) != namespace:
                raise api_error(
                    400,
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            if (NAMESPACES, "", namespace) not in self.objects:
                raise not_found(NAMESPACES, namespace)
        else:
            metadata.pop("namespace", None)
        if (resource, namespace, name) in self.objects:
            raise api_error(
                409,
                f'{resource.qualified} "{name}" already exists',
                reason="AlreadyExists",
                name=name,
                resource=resource,
            )
        metadata.update(uid=str(uuid.uuid4()), creationTimestamp=rfc3339(utc_now()), generation=1)
        if resource == PODS:
            obj.setdefault("status", {}).setdefault("phase", "Pending")
        if resource == NAMESPACES:
            obj.setdefault("status", {"phase": "Active"})
        self._write(resource, namespace, obj, "ADDED")
        return obj

    def update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        body: dict[str, Any],
        *,
        patch: bool,
        status: bool,
    ) -> dict[str, Any]:
        """PUT (``patch`` False) or merge PATCH of the object or of its status subresource."""
        current = self.get(resource, namespace, name)
        meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        assert isinstance(meta, dict)
        wanted_rv = meta.get("resourceVersion")
        if not patch and meta.get("name", name) != name:
            raise api_error(400, "the name of the object does not match the name on the URL")
        if wanted_rv is not None and str(wanted_rv) != current["metadata"]["resourceVersion"]:
            raise api_error(
                409,
                f'Operation cannot be fulfilled on {resource.qualified} "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again",
                name=name,
                resource=resource,
            )
        if not patch and wanted_rv is None and resource.is_custom:
            raise api_error(
                422,
                "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
                reason="Invalid",
            )
        merged = merge_patch(current, body) if patch else copy.deepcopy(body)
        if not isinstance(merged, dict):
            raise api_error(422, "the patch must be a JSON object", reason="Invalid")
        updated = copy.deepcopy(current) if status else merged
        if status:
            updated["status"] = copy.deepcopy(merged.get("status", {}))
        else:
            # Main-endpoint writes never change status (all these resources have /status).
            updated.pop("status", None)
            if "status" in current:
                updated["status"] = copy.deepcopy(current["status"])
        metadata = updated.setdefault("metadata", {})
        for key in ("name", "namespace", "uid", "creationTimestamp", "generation", "resourceVersion"):
            if key in current["metadata"]:
                metadata[key] = current["metadata"][key]
        updated["apiVersion"], updated["kind"] = resource.api_version, resource.kind
        if not status and updated.get("spec") != current.get("spec"):
            metadata["generation"] = current["metadata"]["generation"] + 1
        if updated == current:
            return current  # a no-op write is not persisted and does not bump resourceVersion
        self._write(resource, namespace if resource.namespaced else "", updated, "MODIFIED")
        return updated

    def list(self, resource: ResourceType, namespace: str | None, query: Mapping[str, str]) -> dict[str, Any]:
        """A ``*List`` answer honouring label/field selectors, ``limit`` and ``continue``."""
        try:
            labels = parse_label_selector(query.get("labelSelector"))
            fields = parse_field_selector(query.get("fieldSelector"))
        except ValueError as exc:
            raise api_error(400, str(exc)) from exc
        after: tuple[str, str] | None = None
        if token := query.get("continue"):
            try:
                after, _ = decode_continue(token)
            except ValueError as exc:
                raise api_error(400, str(exc)) from exc
        matching = sorted(
            (ns, n)
            for (r, ns, n), obj in self.objects.items()
            if r == resource
            and namespace in (None, ns)
            and labels(obj["metadata"].get("labels", {}))
            and fields(obj)
            and (after is None or (ns, n) > after)
        )
        limit = int(query.get("limit") or 0)
        page = matching[:limit] if limit > 0 else matching
        metadata: dict[str, Any] = {"resourceVersion": str(self.rv)}
        if limit > 0 and len(matching) > limit:
            metadata["continue"] = encode_continue(page[-1], self.rv)
            metadata["remainingItemCount"] = len(matching) - limit
        return {
            "kind": f"{resource.kind}List",
            "apiVersion": resource.api_version,
            "metadata": metadata,
            "items": [copy.deepcopy(self.objects[(resource, ns, n)]) for ns, n in page],
        }
