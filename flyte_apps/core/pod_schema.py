"""An app's pod template checked against the two schemas that will judge it, in the order they do:
Knative's Service CRD first (made strict: unknown fields rejected, because Knative refuses some PodSpec
fields Kubernetes accepts, such as ``restartPolicy``), then Kubernetes' own PodSpec schema (strict, as
``kubernetes-validate`` ships it), which also checks what Knative's CRD leaves open (``affinity``,
``tolerations``, volume sources...).

Knative's CRD ships as product data beside this module (``knative-serving-v1-service-crd.yaml``,
compared with ``tests/fixtures/schemas`` by ``tests/core/test_pod_schema.py``); reading package data is
the one read this module does. The validators are built on first use by ``PodSpecSchemas`` and kept
for one plan only: Kubernetes' definitions take a noticeable part of a second to load, and most
stacks have no pod template at all.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from importlib import resources
from typing import Any, Final

import yaml

from flyte_apps.core.bounds import shown

KNATIVE_CRD_FILE: Final = "knative-serving-v1-service-crd.yaml"
KNATIVE_CRD_VERSION: Final = "v1"
KUBERNETES_SCHEMA_VERSION: Final = "1.37.0"
"""The Kubernetes version whose PodSpec schema applies: the newest kubernetes-validate 1.37 ships."""
KNATIVE_SCHEMA: Final = "Knative's Service schema"
KUBERNETES_SCHEMA: Final = f"Kubernetes' PodSpec schema, v{KUBERNETES_SCHEMA_VERSION.rsplit('.', 1)[0]}"
YAML_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
QUANTITY_PATTERN_MARK: Final = "[KMGTPE]i"
"""Part of the regular expression Knative's CRD gives resource quantities (its message would quote it)."""

Path = tuple[str | int, ...]
"""A place inside a pod spec: keys and list indexes (``("containers", 0, "image")``)."""
Validator = Any
"""A jsonschema validator (the package ships no type information)."""


@dataclass(frozen=True)
class SchemaError:
    """One violation, at its place in the pod spec. ``unknown`` names a field the schema does not
    have (``allowed`` lists the ones it has there, for a did-you-mean); ``kubernetes_field`` says
    Kubernetes' PodSpec has it (Knative refuses some PodSpec fields, such as ``restartPolicy``), and
    ``knative_field`` that it is one of Knative's own revision fields (``containerConcurrency``)."""

    path: Path
    message: str
    schema: str
    unknown: str | None = None
    allowed: tuple[str, ...] = ()
    kubernetes_field: bool = False
    knative_field: bool = False


def load_knative_crd() -> dict[str, Any]:
    """Knative's Service CRD as shipped with the package (a fresh object on each call)."""
    text = resources.files(__package__).joinpath(KNATIVE_CRD_FILE).read_text(encoding="utf-8")
    crd: dict[str, Any] = yaml.load(text, Loader=YAML_LOADER)
    return crd


def service_schema(crd: Mapping[str, Any]) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of the CRD's v1 version."""
    for version in crd["spec"]["versions"]:
        if version["name"] == KNATIVE_CRD_VERSION:
            schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
            return schema
    msg = f"Knative's Service CRD has no version {KNATIVE_CRD_VERSION}"
    raise LookupError(msg)


def revision_spec_schema(service: Mapping[str, Any]) -> dict[str, Any]:
    """``spec.template.spec`` of a Service: the pod spec a revision runs (a PodSpec plus Knative's
    own fields such as ``timeoutSeconds``)."""
    schema: dict[str, Any] = service["properties"]["spec"]["properties"]["template"]["properties"]["spec"]
    return schema


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-Schema reading of a structural CRD schema that rejects unknown fields.

    ``x-kubernetes-int-or-string`` becomes ``anyOf: [integer, string]``; an object that lists
    ``properties`` and does not preserve unknown fields gets ``additionalProperties: false``.
    Recurses only through schema positions, so a field that happens to be called ``type`` or
    ``properties`` is never mistaken for a keyword.
    """
    result = copy.deepcopy(dict(schema))
    if result.get("x-kubernetes-int-or-string"):
        result["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if "properties" in result:
        result["properties"] = {name: strict_schema(child) for name, child in result["properties"].items()}
        if not result.get("x-kubernetes-preserve-unknown-fields"):
            result.setdefault("additionalProperties", False)
    if isinstance(result.get("additionalProperties"), Mapping):
        result["additionalProperties"] = strict_schema(result["additionalProperties"])
    if isinstance(result.get("items"), Mapping):
        result["items"] = strict_schema(result["items"])
    for keyword in ("allOf", "anyOf", "oneOf"):
        if isinstance(result.get(keyword), list):
            result[keyword] = [strict_schema(child) for child in result[keyword]]
    if isinstance(result.get("not"), Mapping):
        result["not"] = strict_schema(result["not"])
    return result


class PodSpecSchemas:
    """Both validators, each built the first time it is needed."""

    @cached_property
    def knative(self) -> Validator:
        import jsonschema  # imported here: only stacks with pod templates need it

        schema = strict_schema(revision_spec_schema(service_schema(load_knative_crd())))
        return jsonschema.Draft202012Validator(schema)

    @cached_property
    def kubernetes(self) -> Validator:
        import jsonschema
        import kubernetes_validate
        from referencing import Registry, Resource

        folder = f"kubernetes-json-schema/v{KUBERNETES_SCHEMA_VERSION}-local-strict"
        read = kubernetes_validate.utils.schema_contents
        pod_spec = read(f"{folder}/podspec-v1.json", KUBERNETES_SCHEMA_VERSION)
        definitions = read(f"{folder}/_definitions.json", KUBERNETES_SCHEMA_VERSION)
        registry = Resource.from_contents(definitions) @ (Resource.from_contents(pod_spec) @ Registry())
        return jsonschema.Draft202012Validator(pod_spec, registry=registry)

    def errors(self, pod_spec: Mapping[str, Any]) -> list[SchemaError]:
        """Knative's violations, then Kubernetes' at places Knative found nothing wrong with (a field
        unknown to both is one mistake, not two). Knative's own revision fields (``timeoutSeconds``,
        ``containerConcurrency``) are not PodSpec fields, so Kubernetes' schema refuses them: Flyte
        reads the pod template as a Kubernetes PodSpec and would drop them."""
        knative = sorted(_violations(self.knative, pod_spec, KNATIVE_SCHEMA), key=_order)
        kubernetes = sorted(_violations(self.kubernetes, pod_spec, KUBERNETES_SCHEMA), key=_order)
        unknown_to_kubernetes = {error.path for error in kubernetes if error.unknown is not None}
        found = [
            replace(error, kubernetes_field=error.path not in unknown_to_kubernetes)
            if error.unknown
            else error
            for error in knative
        ]
        reported = [error.path for error in knative]
        revision_fields = set(self.knative.schema["properties"])
        found.extend(
            replace(error, knative_field=len(error.path) == 1 and error.unknown in revision_fields)
            for error in kubernetes
            if not any(error.path[: len(place)] == place for place in reported)
        )
        return found


def _violations(validator: Validator, instance: Mapping[str, Any], schema_name: str) -> Iterator[SchemaError]:
    for error in validator.iter_errors(instance):
        path: Path = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
            allowed = tuple(sorted(error.schema.get("properties", {})))
            for key in sorted(set(error.instance) - set(allowed), key=str):
                yield SchemaError(
                    path=(*path, str(key)),
                    message=f"unknown field {shown(key)}: {schema_name} has no such field here",
                    schema=schema_name,
                    unknown=str(key),
                    allowed=allowed,
                )
        elif error.validator == "required" and isinstance(error.instance, Mapping):
            for key in error.validator_value:
                if key not in error.instance:
                    yield SchemaError((*path, key), f"is required ({schema_name})", schema_name)
        elif error.validator == "pattern" and QUANTITY_PATTERN_MARK in str(error.validator_value):
            yield SchemaError(path, f"{shown(error.instance)} is not a Kubernetes quantity", schema_name)
        else:
            yield SchemaError(path, f"{error.message} ({schema_name})", schema_name)


def _order(error: SchemaError) -> tuple[tuple[str, ...], str]:
    return tuple(str(part) for part in error.path), error.message
