"""The component package's schema: the committed copy is what the plugin serves over gRPC, as the engine
starts and asks it, and every field of the config models is a documented property of it."""

from __future__ import annotations

import json
import os
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import grpc  # type: ignore[import-untyped]
import pytest
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc
from pydantic import BaseModel

from components import schema
from flyte_apps.core import constants as c
from flyte_apps.core.config.models import AppInput, Platform
from flyte_apps.core.knative_settings import KnativeInput
from flyte_apps.core.plan import plan_stack
from tests.support.config import REPO_ROOT
from tests.support.hosts import component_plugin_command, running_host

PLUGIN_DIR: Final = REPO_ROOT / "components" / "plugin"
COMMITTED: Final = PLUGIN_DIR / "schema.json"
CALL_TIMEOUT_S: Final = 30.0


@pytest.fixture
def plugin() -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    """The plugin started as the engine starts it: ``python <plugin dir> <engine address>``, in its
    directory, speaking gRPC on the port it prints."""
    command = component_plugin_command(PLUGIN_DIR)
    with (
        running_host(command, cwd=PLUGIN_DIR, env=os.environ) as host,
        grpc.insecure_channel(host.address) as channel,
    ):
        yield provider_pb2_grpc.ResourceProviderStub(channel)


def test_the_committed_schema_is_what_the_plugin_serves(
    plugin: provider_pb2_grpc.ResourceProviderStub,
) -> None:
    served = plugin.GetSchema(provider_pb2.GetSchemaRequest(), timeout=CALL_TIMEOUT_S).schema
    assert served == COMMITTED.read_text(encoding="utf-8"), (
        "the package's schema changed: review the change to every language's API, then `make package-schema`"
    )


def test_every_config_field_is_a_documented_property_of_the_same_name() -> None:
    document = json.loads(COMMITTED.read_text(encoding="utf-8"))
    app = document["resources"][c.TYPE_FLYTE_APP]["inputProperties"]
    expected_app = {
        info.alias or name for name, info in AppInput.model_fields.items()
    } - schema.APP_FIELDS_LEFT_OUT
    assert expected_app <= set(app)
    checked: list[tuple[type[BaseModel], frozenset[str]]] = [
        (AppInput, schema.APP_FIELDS_LEFT_OUT),
        (Platform, schema.PLATFORM_FIELDS_LEFT_OUT),
        (KnativeInput, frozenset()),
        *((nested, frozenset[str]()) for nested in nested_models(AppInput)),
    ]
    for model, left_out in checked:
        declared = document["types"][schema.type_token(model.__name__)]
        fields = {info.alias or name for name, info in model.model_fields.items()} - left_out
        assert set(declared["properties"]) == fields, model.__name__
        assert set(declared.get("required", [])) == {
            info.alias or name for name, info in model.model_fields.items() if info.is_required()
        }, model.__name__
        for name, prop in declared["properties"].items():
            assert prop["description"], f"{model.__name__}.{name}"


def nested_models(model: type[BaseModel], seen: set[type[BaseModel]] | None = None) -> list[type[BaseModel]]:
    seen = set() if seen is None else seen
    for info in model.model_fields.values():
        for inner in models_in(info.annotation):
            if inner not in seen:
                seen.add(inner)
                nested_models(inner, seen)
    return list(seen)


def models_in(hint: Any) -> Iterator[type[BaseModel]]:
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        yield hint
    for arg in typing.get_args(hint):
        yield from models_in(arg)


class Documented(BaseModel):
    """A model whose fields all have docstrings."""

    count: int = 0
    """How many."""


class Undocumented(BaseModel):
    """A model with a field that has none."""

    documented: Documented
    """Documented."""
    stopped: bool = False


class Base(BaseModel):
    """A model others inherit from."""

    name: str = ""
    """The base's name."""


class Derived(Base):
    """A model that inherits a documented field and documents its own."""

    size: int = 0
    """The derived size."""


def test_fields_are_described_by_their_docstrings_inherited_ones_included() -> None:
    translation = schema.Translation([Derived])
    translation.ref(Derived.__name__)
    properties = translation.types[schema.type_token("Derived")]["properties"]
    assert properties["name"]["description"] == "The base's name."
    assert properties["size"]["description"] == "The derived size."


def test_the_config_models_do_not_read_their_sources_at_import() -> None:
    # Every run of the program imports them: reading each model's source there cost about 0.15 s of
    # CPU per run; only the package's schema needs the docstrings, and reads them itself.
    assert not AppInput.model_config.get("use_attribute_docstrings")
    assert all(field.description is None for field in AppInput.model_fields.values())


def test_a_field_without_a_docstring_stops_the_schema() -> None:
    with pytest.raises(schema.SchemaGapError, match=r"Undocumented\.stopped has no docstring"):
        schema.Translation([Undocumented]).ref(Undocumented.__name__)


def test_a_model_without_a_docstring_stops_the_schema() -> None:
    class Bare(BaseModel):
        name: str = ""
        """The name."""

    with pytest.raises(schema.SchemaGapError, match=r"Bare has no docstring"):
        schema.Translation([Bare]).ref(Bare.__name__)


def test_a_documented_model_becomes_an_object_type_with_its_nested_models() -> None:
    translation = schema.Translation([Documented])
    assert translation.ref(Documented.__name__) == {"$ref": f"#/types/{schema.type_token('Documented')}"}
    assert translation.types == {
        schema.type_token("Documented"): {
            "type": "object",
            "description": "A model whose fields all have docstrings.",
            "properties": {"count": {"type": "integer", "description": "How many."}},
        }
    }


def test_a_value_the_translation_cannot_map_is_named_with_its_field() -> None:
    class Pair(BaseModel):
        """Two numbers."""

        pair: tuple[int, int] = (0, 0)
        """A fixed pair: a JSON schema's prefixItems, which Pulumi's types cannot say."""

    with pytest.raises(schema.SchemaGapError, match=r"Pair\.pair: no Pulumi schema type"):
        schema.Translation([Pair]).ref(Pair.__name__)


def test_the_schema_is_byte_for_byte_the_committed_one() -> None:
    from components.package import package_version, schema_text

    assert schema_text(package_version()) == COMMITTED.read_text(encoding="utf-8"), (
        "the package's schema changed: review the change to every language's API, then `make package-schema`"
    )


def test_an_apps_outputs_are_the_same_in_the_schema_the_plan_and_the_package(
    example_config: dict[str, Any],
) -> None:
    document = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert tuple(document["resources"][c.TYPE_FLYTE_APP]["properties"]) == c.APP_OUTPUTS
    assert all(tuple(app.exports()) == c.APP_OUTPUTS for app in plan_stack(example_config).apps)


def test_integer_fields_are_integers_and_durations_strings_as_in_a_stack_file() -> None:
    document = json.loads(COMMITTED.read_text(encoding="utf-8"))
    autoscaling = document["types"][schema.type_token("Autoscaling")]["properties"]
    assert autoscaling["minReplicas"]["type"] == "integer"
    assert autoscaling["scaledownPeriod"]["type"] == "string"
    env = document["types"][schema.type_token("Container")]["properties"]["env"]
    assert env == {
        "type": "array",
        "items": {"$ref": f"#/types/{schema.type_token('EnvVar')}"},
        "description": env["description"],
    }
    pod = document["types"][schema.type_token("PodTemplate")]["properties"]["spec"]
    assert (pod["type"], pod["additionalProperties"]) == ("object", {"$ref": schema.ANY_REF})


def test_the_plugin_directory_is_what_pulumi_package_add_reads() -> None:
    assert (PLUGIN_DIR / "PulumiPlugin.yaml").is_file()
    requirements = (PLUGIN_DIR / "requirements.txt").read_text(encoding="utf-8").split()
    assert "-c" in requirements, "the repository's pins constrain the package's virtualenv"
    assert requirements[requirements.index("-c") + 1] == "../../requirements.lock"
    assert Path(PLUGIN_DIR / "../../pyproject.toml").resolve().is_file()
