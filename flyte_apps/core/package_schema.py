"""The component package's Pulumi schema, generated from the stack config's pydantic models.

The package's inputs are the stack config's keys, spelled and nested the same way (``container.image``,
``autoscaling.minReplicas``): each object type of the schema is one config model, each property one of
its fields, its description the field's docstring. So the two front doors cannot drift: a field added to
a model is a property of every language's SDK, and a field without a docstring fails
``tests/core/test_package_schema.py``. What the schema cannot say (ranges, the DNS rules of names, the
pod template's PodSpec) the core checks, with the same key-path messages as for a stack file.

Mapping of the config's value types:

- ``Int``/``Number``/``Bool``/``str`` -> ``integer``/``number``/``boolean``/``string``; Go durations and
  quantities are strings (``90s``, ``500m``), as in a stack file;
- ``Literal`` -> a string whose description lists the values (the core refuses others by key path);
- ``tuple[Model, ...]`` -> an array of the model's type; ``dict[str, V]`` -> a map of ``V``;
- env blocks -> an array of ``{name, value}`` (order is part of the spec's bytes, and a map's order does
  not survive every language);
- the pod template's ``spec`` -> a map of ``pulumi.json#/Any``: a Kubernetes PodSpec in a Pod manifest's
  camelCase (the schema cannot reference Kubernetes' object types).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel

from flyte_apps.core.config.kit import Bool, GoDuration, Int, LowerCase, Number, Quantity, RawEnv
from flyte_apps.core.config.models import AppInput, Platform
from flyte_apps.core.knative_settings import KnativeInput

PACKAGE: Final = "flyte"
"""The package name: its type tokens are the program's (``flyte:apps:FlyteApp``), so a component from
the package and one from the stack-config program have the same types."""
MODULE: Final = "apps"
TOKEN_PREFIX: Final = f"{PACKAGE}:{MODULE}:"
TYPE_FLYTE_APP: Final = f"{TOKEN_PREFIX}FlyteApp"
TYPE_FLYTE_APPS: Final = f"{TOKEN_PREFIX}FlyteApps"
TYPE_REVISION_REAPER: Final = f"{TOKEN_PREFIX}RevisionReaper"
TYPE_ENV_VAR: Final = f"{TOKEN_PREFIX}EnvVar"
ANY_REF: Final = "pulumi.json#/Any"

APP_FIELDS_LEFT_OUT: Final = frozenset({"adopt"})
"""Stack-config keys the package does not offer: adoption imports into the stack-config program's state
(``flyte-apps import`` writes its stack file); a package consumer imports with Pulumi's own ``import``."""
PLATFORM_FIELDS_LEFT_OUT: Final = frozenset({"renderYamlToDirectory"})
"""A setting of the program's own Kubernetes provider; a package consumer passes its own provider
(``renderYamlToDirectory`` is an option of pulumi-kubernetes' ``Provider``)."""

# Inputs and outputs of the package's own resources, by their schema names.
INPUT_PLATFORM: Final = "platform"
INPUT_PROJECT: Final = "project"
INPUT_DOMAIN: Final = "domain"
INPUT_KNATIVE: Final = "knative"
INPUT_APPS: Final = "apps"
INPUT_KUBECONFIG: Final = "kubeconfig"
INPUT_CONTEXT: Final = "context"
OUTPUT_KSERVICE_NAME: Final = "kserviceName"
OUTPUT_NAMESPACE: Final = "namespace"
OUTPUT_PUBLIC_URL: Final = "publicUrl"
OUTPUT_INTERNAL_URL: Final = "internalUrl"
OUTPUT_SPEC_SHA: Final = "specSha"
OUTPUT_CUSTOM_URLS: Final = "customUrls"
OUTPUT_APPS: Final = "apps"
REAPER_NAMESPACE: Final = "namespace"
REAPER_KSERVICE: Final = "kserviceName"
REAPER_SPEC_SHA: Final = "specSha"
REAPER_TIMEOUT: Final = "timeoutSeconds"
REAPER_DELETED: Final = "deletedRevisions"
REAPER_STOP_REVISION: Final = "stopRevision"

STRING: Final = {"type": "string"}
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
    """A config model has a field the generator cannot map, or one without a docstring."""


@dataclass(frozen=True)
class Property:
    """One field of a config model, as the schema and the input normalization see it."""

    name: str
    """The camelCase key (the field's alias), the same in a stack file and in every SDK."""
    hint: Any
    """The field's annotation, ``Annotated`` extras kept, ``None`` removed."""
    required: bool
    description: str


def model_properties(model: type[BaseModel], left_out: frozenset[str] = frozenset()) -> Iterator[Property]:
    """The fields of ``model`` the package offers, in declaration order."""
    hints = typing.get_type_hints(model, include_extras=True)
    for field_name, info in model.model_fields.items():
        name = info.alias or field_name
        if name in left_out:
            continue
        if not info.description:
            msg = f"{model.__name__}.{field_name} has no docstring: it is the SDKs' documentation of `{name}`"
            raise SchemaGapError(msg)
        description = markdown(" ".join(info.description.split()))
        yield Property(name, _without_none(hints[field_name]), info.is_required(), description)


def _without_none(hint: Any) -> Any:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(members) == 1:
            return members[0]
    return hint


SCALARS: Final[tuple[tuple[Any, dict[str, str]], ...]] = (
    (Int, {"type": "integer"}),
    (Number, {"type": "number"}),
    (Bool, {"type": "boolean"}),
    (GoDuration, STRING),
    (Quantity, STRING),
    (LowerCase, STRING),
    (str, STRING),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
)


class SchemaBuilder:
    """Walks config models into Pulumi schema types (``types``), one object type per model."""

    def __init__(self, left_out: Mapping[type[BaseModel], frozenset[str]]) -> None:
        self.left_out = left_out
        self.types: dict[str, dict[str, Any]] = {
            TYPE_ENV_VAR: {
                "type": "object",
                "description": "An environment variable: the env blocks' `{name, value}` form.",
                "properties": {
                    "name": {**STRING, "description": "The variable's name."},
                    "value": {**STRING, "description": "Its value (plain text: never a credential)."},
                },
                "required": ["name", "value"],
            }
        }

    def object_type(self, model: type[BaseModel]) -> dict[str, Any]:
        """The model's properties and required names (also what a resource's inputs are made of)."""
        properties = {}
        required = []
        for prop in model_properties(model, self.left_out.get(model, frozenset())):
            properties[prop.name] = {**self.type_of(prop.hint, f"{model.__name__}.{prop.name}")}
            properties[prop.name]["description"] = _described(prop)
            if prop.required:
                required.append(prop.name)
        return {"properties": properties, "required": required}

    def ref(self, model: type[BaseModel]) -> dict[str, str]:
        token = type_token(model)
        if token not in self.types:
            self.types[token] = {}  # reserved first: a model that refers to itself stops here
            body = self.object_type(model)
            if not model.__doc__:
                msg = f"{model.__name__} has no docstring: it is the SDKs' documentation of {token}"
                raise SchemaGapError(msg)
            doc = markdown(" ".join(model.__doc__.split()))
            self.types[token] = {"type": "object", "description": doc, **_without_empty(body)}
        return {"$ref": f"#/types/{token}"}

    def type_of(self, hint: Any, where: str) -> dict[str, Any]:
        for scalar, schema in SCALARS:
            if hint == scalar:
                return dict(schema)
        if hint == RawEnv:
            return {"type": "array", "items": {"$ref": f"#/types/{TYPE_ENV_VAR}"}}
        if hint is Any:
            return {"$ref": ANY_REF}
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if origin is Annotated:
            return self.type_of(args[0], where)
        if origin is Literal:
            return dict(STRING)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": self.type_of(args[0], where)}
        if origin is dict:
            return {"type": "object", "additionalProperties": self.type_of(args[1], where)}
        if isinstance(hint, type) and issubclass(hint, BaseModel):
            return self.ref(hint)
        msg = f"{where}: no schema type for {hint!r}"
        raise SchemaGapError(msg)


TYPE_NAMES: Final[Mapping[str, str]] = {
    "AppInput": "App",
    "KnativeInput": "KnativeSettings",
    "SecretInput": "Secret",
}
"""Models whose class name is not the name an SDK user should see."""


def type_token(model: type[BaseModel]) -> str:
    return TOKEN_PREFIX + TYPE_NAMES.get(model.__name__, model.__name__)


def markdown(text: str) -> str:
    """Docstrings quote code reST's way (double backticks); the SDKs' docs read Markdown."""
    return text.replace("``", "`")


def _without_empty(body: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if value}


def literal_values(hint: Any) -> tuple[str, ...]:
    """The values of a ``Literal`` hint (inside ``Annotated`` too), else ()."""
    if typing.get_origin(hint) is Annotated:
        return literal_values(typing.get_args(hint)[0])
    if typing.get_origin(hint) is Literal:
        return tuple(str(value) for value in typing.get_args(hint))
    return ()


def _described(prop: Property) -> str:
    values = literal_values(prop.hint)
    if not values:
        return prop.description
    return f"{prop.description} One of: {', '.join(f'`{value}`' for value in values)}."


LEFT_OUT: Final[Mapping[type[BaseModel], frozenset[str]]] = {
    AppInput: APP_FIELDS_LEFT_OUT,
    Platform: PLATFORM_FIELDS_LEFT_OUT,
}


def package_schema(version: str) -> dict[str, Any]:
    """The whole schema of the package at ``version`` (the repository's tag; what the SDKs are made from)."""
    builder = SchemaBuilder(LEFT_OUT)
    app = builder.object_type(AppInput)
    app_ref = builder.ref(AppInput)
    platform_input = {
        **builder.ref(Platform),
        "description": "The platform settings (`flyte-apps:platform` of a stack file); every key optional.",
    }
    knative_ref = builder.ref(KnativeInput)
    app_outputs = {
        OUTPUT_KSERVICE_NAME: {**STRING, "description": "The KService's name (Flyte's KServiceName)."},
        OUTPUT_NAMESPACE: {**STRING, "description": "The namespace the KService is in."},
        OUTPUT_PUBLIC_URL: {**STRING, "description": "The public URL; absent for a cluster-local app."},
        OUTPUT_INTERNAL_URL: {**STRING, "description": "The URL inside the cluster."},
        OUTPUT_SPEC_SHA: {**STRING, "description": "`flyte.org/spec-sha`: the sha of the app's spec."},
        OUTPUT_CUSTOM_URLS: {
            "type": "array",
            "items": dict(STRING),
            "description": "The URLs of the app's custom domains (empty while it is stopped).",
        },
    }
    return {
        "name": PACKAGE,
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
        "types": dict(sorted(builder.types.items())),
        "resources": {
            TYPE_FLYTE_APP: {
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
                "requiredInputs": app["required"],
                "properties": app_outputs,
                "required": [OUTPUT_KSERVICE_NAME, OUTPUT_NAMESPACE, OUTPUT_INTERNAL_URL, OUTPUT_SPEC_SHA],
            },
            TYPE_FLYTE_APPS: {
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
                    OUTPUT_NAMESPACE: {**STRING, "description": "The apps' namespace."},
                    OUTPUT_APPS: {
                        "type": "object",
                        "additionalProperties": {"$ref": ANY_REF},
                        "description": (
                            "`project/domain/name` -> the app's kserviceName, namespace, publicUrl, "
                            "internalUrl, specSha and customUrls (the stack-config program's `apps` export)."
                        ),
                    },
                },
                "required": [OUTPUT_NAMESPACE, OUTPUT_APPS],
            },
            TYPE_REVISION_REAPER: {
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
