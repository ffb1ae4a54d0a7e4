"""``dump_yaml`` writes plain data through libyaml without PyYAML's representer; the text must be the
very text ``yaml.dump`` with the project's dumper writes, for every kind of value (render's output
is golden, and Go's readers must read it as we do)."""

from __future__ import annotations

import gc
import random
import string
from typing import Any

import pytest
import yaml

from flyte_apps.core import yamlout
from flyte_apps.core.objects import RenderedObject
from flyte_apps.core.plan import plan_stack
from tests.core.test_yamlcompat import READINGS

TRICKY = [
    *(row[0] for row in READINGS),
    "",
    " leading space",
    "trailing space ",
    "two\nlines",
    "tab\there",
    "colon: inside",
    "# not a comment",
    "- not a list",
    "{not: a map}",
    "[not, a, list]",
    "quote ' single",
    'quote " double',
    "back\\slash",
    "ünïcödé ✓",
    "emoji 🚀",
    "x" * 200,
    "word " * 40,
    "24127358e9245281",
    "0123456789abcdef",
    "@at",
    "`tick",
    "%percent",
    "!bang",
    "&anchor",
    "*alias",
    "|pipe",
    ">fold",
    "?question",
    "NaN",
    "-.inf",
    "0.",
    "+1",
    "1e-3",
    "\x00nul",
    "bell\x07",
    "\u2028line sep",
    "\ufeffbom",
]


def reference(data: Any, *, sort_keys: bool = False) -> str:
    """PyYAML's own path: representer, resolver (with the project's rule) and libyaml's emitter."""
    return yaml.dump(
        data, Dumper=yamlout.YAML_DUMPER, sort_keys=sort_keys, default_flow_style=False, allow_unicode=True
    )


@pytest.mark.parametrize("text", TRICKY, ids=range(len(TRICKY)))
def test_a_string_is_written_as_pyyaml_writes_it(text: str) -> None:
    data = {"value": text, text or "empty": [text, {"key": text}]}
    assert yamlout.dump_yaml(data) == reference(data)


@pytest.mark.parametrize(
    "value",
    [0, 1, -1, 8080, 2**70, 1.5, 0.1, 1e20, 1e-7, -0.0, float("inf"), float("-inf"), True, False, None],
    ids=repr,
)
def test_other_scalars_are_written_as_pyyaml_writes_them(value: object) -> None:
    data = {"value": value, "list": [value, value], "nested": {"value": value}}
    assert yamlout.dump_yaml(data) == reference(data)


def test_nan_is_written_as_pyyaml_writes_it() -> None:
    data = {"value": float("nan")}
    assert yamlout.dump_yaml(data) == reference(data)


def test_empty_collections_and_odd_keys_are_written_as_pyyaml_writes_them() -> None:
    data: dict[Any, Any] = {
        "empty map": {},
        "empty list": [],
        "nested empty": [[], {}, [[]], {"a": {}}],
        1: "int key",
        None: "null key",
        False: "bool key",
        "1.5": "quoted key",
    }
    assert yamlout.dump_yaml(data) == reference(data)


def test_an_object_that_appears_twice_is_written_with_an_anchor_as_pyyaml_does() -> None:
    shared = {"name": "x"}
    data = {"first": shared, "second": shared, "list": [shared]}
    assert yamlout.dump_yaml(data) == reference(data)
    assert "&id001" in yamlout.dump_yaml(data)


def test_other_types_take_pyyaml_s_path() -> None:
    data = {"tuple": (1, 2), "bytes": b"raw", "set": {1}}
    assert yamlout.dump_yaml(data) == reference(data)


def test_sorted_keys_take_pyyaml_s_path() -> None:
    data = {"b": 1, "a": {"d": 2, "c": 3}}
    assert yamlout.dump_yaml(data, sort_keys=True) == reference(data, sort_keys=True)


def test_random_documents_are_written_as_pyyaml_writes_them() -> None:
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + " :-_.'\"#{}[],&*!|>%@`\n\t+eE~ü"

    def scalar() -> object:
        choice = rng.random()
        if choice < 0.5:
            return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        if choice < 0.6:
            return rng.choice(TRICKY)
        if choice < 0.75:
            return rng.randint(-(10**6), 10**6)
        if choice < 0.85:
            return rng.choice([True, False, None])
        return rng.uniform(-1e6, 1e6)

    def node(depth: int) -> object:
        if depth > 3 or rng.random() < 0.4:
            return scalar()
        if rng.random() < 0.5:
            return [node(depth + 1) for _ in range(rng.randint(0, 4))]
        return {str(scalar()): node(depth + 1) for _ in range(rng.randint(0, 4))}

    for _ in range(300):
        data = {"root": node(0), "other": node(1)}
        assert yamlout.dump_yaml(data) == reference(data)


def test_rendered_objects_are_written_as_pyyaml_writes_them(example_config: dict[str, Any]) -> None:
    objects = plan_stack(example_config).objects()
    expected = "".join(
        f"---\n{yamlout.PATCH_COMMENT}\n{reference(obj.manifest)}"
        if obj.patch
        else f"---\n{reference(obj.manifest)}"
        for obj in objects
    )
    assert yamlout.to_yaml(objects) == expected
    assert [yamlout.document(obj) for obj in objects] == [
        f"{yamlout.PATCH_COMMENT}\n{reference(obj.manifest)}" if obj.patch else reference(obj.manifest)
        for obj in objects
    ]
    patched = RenderedObject(objects[0].manifest, patch=True)
    assert yamlout.document(patched).startswith(f"{yamlout.PATCH_COMMENT}\n")


def test_writing_leaves_no_cyclic_garbage() -> None:
    """Each document's events are freed when it is written, not kept until a collection (at 10,000
    objects, collections over them cost a fifth of the writing)."""
    manifest = {"a": [1, "b", {"c": None, "d": 1.5, "e": True}], "f": "0x1F"}
    gc.collect()
    text = yamlout.dump_yaml(manifest)
    assert gc.collect() == 0
    assert text == yaml.dump(
        manifest, Dumper=yamlout.YAML_DUMPER, sort_keys=False, default_flow_style=False, allow_unicode=True
    )
