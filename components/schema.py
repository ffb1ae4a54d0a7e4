"""The component package's Pulumi schema, translated from the JSON schema pydantic makes of the stack
config's models.

The package's inputs are the stack config's keys, spelled and nested the same way (``container.image``,
``autoscaling.minReplicas``): each object type is one config model, each property one of its fields,
its description the field's docstring. So the two front doors cannot drift: a field added to a model is
a property of every language's SDK, and a field without a docstring stops the schema. What a schema
cannot say (ranges, the DNS rules of names, the pod template's PodSpec) the core checks, with the same
key-path messages as for a stack file.

The translation, from pydantic's JSON schema (``by_alias``, validation mode) to Pulumi's:

- ``$ref`` to a model -> a ``#/types/flyte:apps:<Name>`` object type; ``X | None`` -> ``X``;
- ``integer``/``number``/``boolean``/``string`` as they are (Go durations say ``string`` in
  ``core.config.kit``, as a stack file writes them); an ``enum`` -> a string whose description lists
  the values (the core refuses others by key path);
- ``array`` -> an array of its items; an object with ``additionalProperties`` -> a map of them (``true``
  or ``{}``: ``pulumi.json#/Any``, the pod template's PodSpec); an inline object with a ``title`` -> an
  object type of that name (an env block's ``EnvVar``).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any, Final

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema
from pydantic_core import core_schema

from flyte_apps.core import constants as c
from flyte_apps.core.config.models import AppInput, Platform
from flyte_apps.core.knative_settings import KnativeInput

ANY_REF: Final = "pulumi.json#/Any"
STRING: Final = {"type": "string"}
SCALAR_TYPES: Final = frozenset({"integer", "number", "boolean", "string"})

APP_FIELDS_LEFT_OUT: Final = frozenset({"adopt"})
"""Stack-config keys the package does not offer: adoption imports into the stack-config program's state
(``flyte-apps import`` writes its stack file); a package consumer imports with Pulumi's own ``import``."""
PLATFORM_FIELDS_LEFT_OUT: Final = frozenset({"renderYamlToDirectory", "clusterIdentifier"})
"""Settings of the program's own Kubernetes provider; a package consumer passes its own provider
(``renderYamlToDirectory`` and ``clusterIdentifier`` are options of pulumi-kubernetes' ``Provider``)."""
LEFT_OUT: Final[Mapping[str, frozenset[str]]] = {
    AppInput.__name__: APP_FIELDS_LEFT_OUT,
    Platform.__name__: PLATFORM_FIELDS_LEFT_OUT,
}
TYPE_NAMES: Final[Mapping[str, str]] = {
    AppInput.__name__: "App",
    KnativeInput.__name__: "KnativeSettings",
    "SecretInput": "Secret",
}
"""Models whose class name is not the name an SDK user should see."""

# Inputs of the package's own resources, by their schema names (outputs: ``core.constants.OUTPUT_*``).
INPUT_PLATFORM: Final = "platform"
INPUT_PROJECT: Final = "project"
INPUT_DOMAIN: Final = "domain"
INPUT_KNATIVE: Final = "knative"
INPUT_APPS: Final = "apps"
INPUT_KUBECONFIG: Final = "kubeconfig"
INPUT_CONTEXT: Final = "context"
OUTPUT_APPS: Final = "apps"
REAPER_NAMESPACE: Final = "namespace"
REAPER_KSERVICE: Final = "kserviceName"
REAPER_SPEC_SHA: Final = "specSha"
REAPER_TIMEOUT: Final = "timeoutSeconds"
REAPER_DELETED: Final = "deletedRevisions"
REAPER_STOP_REVISION: Final = "stopRevision"

CLUSTER_INPUTS: Final[dict[str, dict[str, Any]]] = {
    INPUT_KUBECONFIG: {
        **STRING,
        "secret": True,
        "description": (
            "The cluster that stopping a stopped app deletes old revisions in: a kubeconfig file path or "
            "its content, as pulumi-kubernetes' `kubeconfig`. Falls back to the package's provider "
            "setting `flyte:kubeconfig`; with neither (nor `context`) a stopped app is refused rather "
            "than stopped in whatever cluster KUBECONFIG names. The Kubernetes objects themselves go "
            "through the Kubernetes provider the resource is given."
        ),
    },
    INPUT_CONTEXT: {
        **STRING,
        "description": "The kubeconfig context for stopping (falls back to `flyte:context`).",
    },
}


class SchemaGapError(Exception):
    """A config model has a field the translation cannot map, or one without a docstring."""


def app_keys() -> tuple[str, ...]:
    """The keys of an app the package takes (a stack file's, but ``adopt``), in declaration order."""
    keys = (info.alias or name for name, info in AppInput.model_fields.items())
    return tuple(key for key in keys if key not in APP_FIELDS_LEFT_OUT)


def type_token(name: str) -> str:
    """The type token of the model (or inline object) named ``name`` in pydantic's JSON schema."""
    return c.TOKEN_PREFIX + TYPE_NAMES.get(name, name)


def markdown(text: str) -> str:
    """A docstring on one line, quoting code Markdown's way (docstrings quote reST's, double backticks)."""
    return " ".join(text.split()).replace("``", "`")


def attribute_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """Each field's docstring (the string statement right after its annotation) by field name, read
    from the source of ``model`` and of the models it inherits from (a subclass's own win)."""
    found: dict[str, str] = {}
    for owner in reversed(model.__mro__):
        if not (issubclass(owner, BaseModel) and owner is not BaseModel):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(owner))
        except (OSError, TypeError):  # no source (a class made at run time): nothing documented
            continue
        body = next(node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)).body
        for statement, following in pairwise(body):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                found[statement.target.id] = inspect.cleandoc(following.value.value)
    return found


class DescribedFields(GenerateJsonSchema):
    """pydantic's JSON schema, each property described by its field's docstring where the field has no
    description of its own. (pydantic's ``use_attribute_docstrings`` does the same at a model's import,
    reading every model's source in every run of the program: only this schema needs them.)"""

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        described = super().model_schema(schema)
        model = schema["cls"]
        properties = described.get("properties", {})
        docstrings = attribute_docstrings(model)
        for name, field in model.model_fields.items():
            key = field.alias or name
            if key in properties and name in docstrings:
                properties[key].setdefault("description", docstrings[name])
        return described


class Translation:
    """pydantic's JSON schema of some models, as Pulumi schema object types (``types``)."""

    def __init__(self, models: Sequence[type[BaseModel]]) -> None:
        _, document = models_json_schema(
            [(model, "validation") for model in models], by_alias=True, schema_generator=DescribedFields
        )
        self.definitions: Mapping[str, Any] = document.get("$defs", {})
        self.types: dict[str, dict[str, Any]] = {}

    def ref(self, name: str) -> dict[str, str]:
        """A reference to the object type of definition ``name``, defined on first use."""
        token = type_token(name)
        if token not in self.types:
            self.types[token] = {}  # reserved first: a model that refers to itself stops here
            self.types[token] = self.object_type(name, self.definitions[name])
        return {"$ref": f"#/types/{token}"}

    def object_type(self, name: str, node: Mapping[str, Any]) -> dict[str, Any]:
        if not node.get("description"):
            msg = f"{name} has no docstring: it is the SDKs' documentation of {type_token(name)}"
            raise SchemaGapError(msg)
        body = self.properties(name, node)
        described: dict[str, Any] = {"type": "object", "description": markdown(node["description"])}
        return described | {key: value for key, value in body.items() if value}

    def properties(self, name: str, node: Mapping[str, Any]) -> dict[str, Any]:
        """A definition's properties (in declaration order) and required names, fields left out apart."""
        left_out = LEFT_OUT.get(name, frozenset())
        properties: dict[str, Any] = {}
        for key, field in node.get("properties", {}).items():
            if key in left_out:
                continue
            if not field.get("description"):
                msg = f"{name}.{key} has no docstring: it is the SDKs' documentation of `{key}`"
                raise SchemaGapError(msg)
            description = markdown(field["description"])
            values = enum_values(field)
            if values:
                description += f" One of: {', '.join(f'`{value}`' for value in values)}."
            properties[key] = self.type_of(field, f"{name}.{key}") | {"description": description}
        required = [key for key in node.get("required", ()) if key not in left_out]
        return {"properties": properties, "required": required}

    def type_of(self, node: Mapping[str, Any], where: str) -> dict[str, Any]:
        if "$ref" in node:
            return self.ref(str(node["$ref"]).rsplit("/", 1)[-1])
        members = [member for member in node.get("anyOf", ()) if member != {"type": "null"}]
        if len(members) == 1:
            return self.type_of(members[0], where)
        kind = node.get("type")
        if "enum" in node or kind == "string":
            return dict(STRING)
        if kind in SCALAR_TYPES:
            return {"type": kind}
        if kind == "array" and "items" in node:
            return {"type": "array", "items": self.type_of(node["items"], where)}
        if kind == "object" and "properties" in node and "title" in node:
            token = type_token(node["title"])
            if token not in self.types:  # an inline object (an env block's) is translated once
                self.types[token] = self.object_type(node["title"], node)
            return {"$ref": f"#/types/{token}"}
        if kind == "object" and "additionalProperties" in node:
            values = node["additionalProperties"]
            return {"type": "object", "additionalProperties": self.value_type(values, where)}
        if not ({"type", "anyOf", "items", "properties"} & node.keys()):
            return {"$ref": ANY_REF}
        msg = f"{where}: no Pulumi schema type for the JSON schema {node!r}"
        raise SchemaGapError(msg)

    def value_type(self, node: object, where: str) -> dict[str, Any]:
        if node is True or node == {}:
            return {"$ref": ANY_REF}
        if isinstance(node, Mapping):
            return self.type_of(node, where)
        msg = f"{where}: a map whose values are {node!r} has no Pulumi schema type"
        raise SchemaGapError(msg)


def enum_values(node: Mapping[str, Any]) -> tuple[str, ...]:
    """The values of an ``enum`` (also inside ``X | None``), else ()."""
    if "enum" in node:
        return tuple(str(value) for value in node["enum"])
    for member in node.get("anyOf", ()):
        values = enum_values(member)
        if values:
            return values
    return ()


def package_schema(version: str) -> dict[str, Any]:
    """The whole schema of the package at ``version`` (the repository's tag; what the SDKs are made from)."""
    translation = Translation((AppInput, Platform, KnativeInput))
    app_ref = translation.ref(AppInput.__name__)
    platform_input = {
        **translation.ref(Platform.__name__),
        "description": "The platform settings (`flyte-apps:platform` of a stack file); every key optional.",
    }
    knative_ref = translation.ref(KnativeInput.__name__)
    app = translation.types[type_token(AppInput.__name__)]
    app_outputs = {
        c.OUTPUT_KSERVICE_NAME: {**STRING, "description": "The KService's name (Flyte's KServiceName)."},
        c.OUTPUT_NAMESPACE: {**STRING, "description": "The namespace the KService is in."},
        c.OUTPUT_PUBLIC_URL: {**STRING, "description": "The public URL; absent for a cluster-local app."},
        c.OUTPUT_INTERNAL_URL: {**STRING, "description": "The URL inside the cluster."},
        c.OUTPUT_SPEC_SHA: {**STRING, "description": "`flyte.org/spec-sha`: the sha of the app's spec."},
        c.OUTPUT_CUSTOM_URLS: {
            "type": "array",
            "items": dict(STRING),
            "description": "The URLs of the app's custom domains (empty while it is stopped).",
        },
    }
    return {
        "name": c.PACKAGE_NAME,
        "displayName": "Flyte apps",
        "version": version,
        "description": (
            "Flyte apps as Knative Services, deployed exactly as Flyte's app service deploys them: the "
            "component package of flyte-apps."
        ),
        "keywords": ["flyte", "knative", "kubernetes", "category/cloud", "kind/component"],
        "license": "Apache-2.0",
        "config": {"variables": dict(CLUSTER_INPUTS)},
        "provider": {"inputProperties": dict(CLUSTER_INPUTS)},
        "types": dict(sorted(translation.types.items())),
        "resources": {
            c.TYPE_FLYTE_APP: {
                "isComponent": True,
                "description": (
                    "One Flyte app: its Knative Service (and, while stopped, the deletion of its old "
                    "revisions; with custom hosts, its DomainMappings and ClusterDomainClaims). The "
                    "inputs are an app entry of a stack file's `flyte-apps:apps`, plus the platform "
                    "settings. Checked alone: names and hosts are not compared with other apps, and the "
                    "namespace and Knative's config are not managed (FlyteApps does both)."
                ),
                "inputProperties": {
                    **app["properties"],
                    INPUT_PLATFORM: platform_input,
                    **CLUSTER_INPUTS,
                },
                "requiredInputs": app.get("required", []),
                "properties": app_outputs,
                "required": [
                    c.OUTPUT_KSERVICE_NAME,
                    c.OUTPUT_NAMESPACE,
                    c.OUTPUT_INTERNAL_URL,
                    c.OUTPUT_SPEC_SHA,
                ],
            },
            c.TYPE_FLYTE_APPS: {
                "isComponent": True,
                "description": (
                    "A whole stack of Flyte apps, as the stack-config program deploys a stack file: the "
                    "namespace, Knative's config patches (`knative.manageConfig`), every app and their "
                    "custom domains, checked together (names, hosts and one owner per Knative key)."
                ),
                "inputProperties": {
                    INPUT_PLATFORM: platform_input,
                    INPUT_PROJECT: {**STRING, "description": "The Flyte project of apps that name none."},
                    INPUT_DOMAIN: {**STRING, "description": "The Flyte domain of apps that name none."},
                    INPUT_KNATIVE: {
                        **knative_ref,
                        "description": "Knative Serving's config (`flyte-apps:knative` of a stack file).",
                    },
                    INPUT_APPS: {
                        "type": "array",
                        "items": app_ref,
                        "description": "The apps (`flyte-apps:apps` of a stack file).",
                    },
                    **CLUSTER_INPUTS,
                },
                "requiredInputs": [INPUT_APPS],
                "properties": {
                    c.OUTPUT_NAMESPACE: {**STRING, "description": "The apps' namespace."},
                    OUTPUT_APPS: {
                        "type": "object",
                        "additionalProperties": {"$ref": ANY_REF},
                        "description": (
                            "`project/domain/name` -> the app's kserviceName, namespace, publicUrl, "
                            "internalUrl, specSha and customUrls (the stack-config program's `apps` export)."
                        ),
                    },
                },
                "required": [c.OUTPUT_NAMESPACE, OUTPUT_APPS],
            },
            c.TYPE_PACKAGE_REVISION_REAPER: {
                "description": (
                    "Stopping's imperative half, registered by FlyteApp for a stopped app: waits for the "
                    "stop revision to be ready, then deletes the older revisions that still hold pods. "
                    "Not meant to be declared by hand."
                ),
                "inputProperties": _reaper_inputs(),
                "requiredInputs": [REAPER_NAMESPACE, REAPER_KSERVICE, REAPER_SPEC_SHA, REAPER_TIMEOUT],
                "properties": {
                    **_reaper_inputs(),
                    REAPER_DELETED: {
                        "type": "array",
                        "items": dict(STRING),
                        "description": "The revisions deleted by the last stop.",
                    },
                    REAPER_STOP_REVISION: {**STRING, "description": "The stop revision waited for."},
                },
                "required": [
                    REAPER_NAMESPACE,
                    REAPER_KSERVICE,
                    REAPER_SPEC_SHA,
                    REAPER_TIMEOUT,
                    REAPER_DELETED,
                    REAPER_STOP_REVISION,
                ],
            },
        },
        "language": {
            "nodejs": {"respectSchemaVersion": True},
            "go": {"respectSchemaVersion": True, "generateResourceContainerTypes": False},
            "python": {"respectSchemaVersion": True},
            "csharp": {"respectSchemaVersion": True},
        },
    }


def _reaper_inputs() -> dict[str, Any]:
    return {
        REAPER_NAMESPACE: {**STRING, "description": "The KService's namespace."},
        REAPER_KSERVICE: {**STRING, "description": "The stopped app's KService."},
        REAPER_SPEC_SHA: {**STRING, "description": "The stopped spec's sha: a new one means a new stop."},
        REAPER_TIMEOUT: {"type": "number", "description": "How long to wait for Knative, in seconds."},
        **CLUSTER_INPUTS,
    }
