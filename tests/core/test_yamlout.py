"""YAML we write: block style, keys in the given order, non-ASCII text as it is, and read back by PyYAML
as exactly the data it was given, whatever the strings hold. Which strings are quoted for Go's YAML
readers is tested in ``tests/core/test_yamlcompat.py``, and by kubectl and kustomize themselves in
``tests/cli/test_go_readers.py``; render's bytes in ``tests/cli/test_render_golden.py``."""

from __future__ import annotations

import math
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


def read_back(text: str) -> Any:
    return yaml.safe_load(text)


@pytest.mark.parametrize("text", TRICKY, ids=range(len(TRICKY)))
def test_a_string_reads_back_as_itself_as_a_value_a_key_and_a_list_item(text: str) -> None:
    data = {"value": text, text or "empty": [text, {"key": text}]}
    assert read_back(yamlout.dump_yaml(data)) == data


@pytest.mark.parametrize(
    "value",
    [0, 1, -1, 8080, 2**70, 1.5, 0.1, 1e20, 1e-7, -0.0, float("inf"), float("-inf"), True, False, None],
    ids=repr,
)
def test_other_scalars_read_back_as_themselves(value: object) -> None:
    data = {"value": value, "list": [value, value], "nested": {"value": value}}
    assert read_back(yamlout.dump_yaml(data)) == data


def test_nan_reads_back_as_nan() -> None:
    assert yamlout.dump_yaml({"value": float("nan")}) == "value: .nan\n"
    assert math.isnan(read_back(yamlout.dump_yaml({"value": float("nan")}))["value"])


def test_maps_and_lists_are_written_in_block_style_in_the_given_key_order() -> None:
    data = {"zeta": [1, {"name": "x", "env": []}], "alpha": {}, "mid": {"b": "two", "a": None}}
    assert yamlout.dump_yaml(data) == (
        "zeta:\n- 1\n- name: x\n  env: []\nalpha: {}\nmid:\n  b: two\n  a: null\n"
    )


def test_sort_keys_sorts_every_map() -> None:
    assert yamlout.dump_yaml({"b": 1, "a": {"d": 2, "c": 3}}, sort_keys=True) == "a:\n  c: 3\n  d: 2\nb: 1\n"


def test_non_ascii_text_is_written_as_it_is() -> None:
    assert yamlout.dump_yaml({"name": "ünïcödé ✓"}) == "name: ünïcödé ✓\n"


def test_random_documents_read_back_as_themselves() -> None:
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
        assert read_back(yamlout.dump_yaml(data)) == data


def test_rendered_objects_are_one_document_each_and_a_patch_says_so(example_config: dict[str, Any]) -> None:
    objects = plan_stack(example_config).objects()
    text = yamlout.to_yaml(objects)
    assert list(yaml.safe_load_all(text)) == [obj.manifest for obj in objects]
    assert text == "".join(f"---\n{yamlout.document(obj)}" for obj in objects)
    plain = RenderedObject(objects[0].manifest)
    patched = RenderedObject(objects[0].manifest, patch=True)
    assert yamlout.document(plain) == yamlout.dump_yaml(objects[0].manifest)
    assert yamlout.document(patched) == f"{yamlout.PATCH_COMMENT}\n{yamlout.document(plain)}"
    assert yamlout.to_yaml([patched, plain]).splitlines()[:2] == ["---", yamlout.PATCH_COMMENT]


def test_a_file_name_numbers_the_object_and_names_its_kind_and_name() -> None:
    obj = RenderedObject({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config-features"}})
    assert yamlout.file_name(7, obj) == "007-configmap-config-features.yaml"
