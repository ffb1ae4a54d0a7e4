"""``read_yaml`` builds a clean document in one walk and leaves anything else to the full checks; both
must give the same values, issues, lines and errors, with libyaml and with PyYAML's pure-Python
reader alike. The line of each key is worked out only when asked for, and must be what the full
checks record."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.stacks import write_stack_file
from flyte_apps.core import yamlin
from flyte_apps.core.bounds import MAX_NESTING, MAX_NUMBER_CHARS
from flyte_apps.core.errors import ConfigError
from flyte_apps.core.stackfile import StackInput, merge_inputs, parse_project_file, parse_stack_file
from tests.core.test_yamlcompat import READINGS

SOURCE = "Pulumi.test.yaml"
REPO = Path(__file__).resolve().parents[2]
LOADERS = [yaml.SafeLoader, *([yaml.CSafeLoader] if yaml.__with_libyaml__ else [])]
TEXTS = [row[0] for row in READINGS]
DOCUMENTS = [
    "",
    "config:\n",
    "just text\n",
    "- 1\n- two\n- 3.5\n",
    "config:\n  flyte-apps:project: proj\n  flyte-apps:apps:\n    - name: a\n      port: 8080\n",
    "a: 'quoted'\nb: \"double\"\nc: |\n  block\nd: >\n  folded\n",
    "a: ~\nb: null\nc:\nd: true\ne: false\nf: 0x1F\ng: 017\nh: 1_000\n",
    "a: .nan\nb: .inf\nc: -.inf\nd: 1.0e+3\ne: .5\n",
    "a: &x 1\nb: 2\n",
    "a: &x {k: v}\nb: *x\n",
    "a: &x 5\nb: *x\n",
    "a: '*not an alias'\nb: c*d\n",
    "a: {k: v}\n<<: {m: n}\n",
    "a: 1\na: 2\n",
    "a:\n  b: 1\n  c:\n    b: 2\n    b: 3\n",
    "? [a, b]\n: 1\n",
    "? {a: b}\n: 1\n",
    "1: one\n",
    "true: yes\n",
    "'1': one\n",
    "=: value\n",
    "a: !!str 5\n",
    "a: !!int '5'\n",
    "a: !!str y\n",
    "a: !!float 1\n",
    "a: !!binary aGVsbG8=\n",
    "a: !!set {x, y}\n",
    "a: !!omap [x: 1]\n",
    "a: !custom thing\n",
    "a: 2001-12-14\n",
    "a: 1:20\n",
    "a: " + "9" * (MAX_NUMBER_CHARS + 1) + "\n",
    "a: '" + "9" * (MAX_NUMBER_CHARS + 1) + "'\n",
    "a: [" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1) + "\n",
    "a: [" * MAX_NESTING + "]" * MAX_NESTING + "\n",
    "a: 5\nb: '5'\nc: 5\n5: c\n",
    "a: y\nb: 'y'\n",
    "a: yes\nb: [yes, 'yes']\n",
    "a: 1\n---\nb: 2\n",
    "a: [1, 2\n",
    "a: b: c\n",
    *(f"key: {text}\n" for text in TEXTS if text),
    *(f"{text}: value\n" for text in TEXTS if text),
    *(f"list:\n  - {text}\n  - {text}\n" for text in TEXTS if text),
]


@pytest.fixture(params=LOADERS, ids=lambda loader: loader.__name__)
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setattr(yamlin, "_LOADER", request.param)
    yield request.param


def outcome(text: str) -> tuple[str, Any]:
    """What reading ``text`` gives: the values, issues and lines, or the error lines."""
    try:
        data, issues, lines = yamlin.read_yaml(text, SOURCE)
    except ConfigError as exc:
        return "error", [str(problem) for problem in exc.problems]
    return "read", (comparable(data), issues, dict(lines))


def comparable(value: Any) -> Any:
    """``value`` with NaN (not equal to itself) replaced, so two readings compare."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {key: comparable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [comparable(item) for item in value]
    return value


def full_checks_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlin, "_clean_values", lambda *_args, **_kwargs: None)


@pytest.mark.parametrize("text", DOCUMENTS)
def test_the_one_walk_reads_what_the_full_checks_read(
    text: str, loader: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = outcome(text)
    full_checks_only(monkeypatch)
    assert ours == outcome(text)


def test_a_generated_stack_and_the_project_files_read_alike_both_ways(
    loader: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    texts = [
        write_stack_file(60, tmp_path / "Pulumi.gen.yaml").read_text(encoding="utf-8"),
        *((REPO / name).read_text(encoding="utf-8") for name in ("Pulumi.yaml", "Pulumi.dev.yaml")),
    ]
    ours = [outcome(text) for text in texts]
    full_checks_only(monkeypatch)
    assert ours == [outcome(text) for text in texts]


def test_a_clean_document_takes_the_one_walk(loader: Any) -> None:
    node = loader("a: [1, 'b', {c: ~}]\n").get_single_node()
    assert yamlin._clean_values(loader(""), node, shared=False) == ({"a": [1, "b", {"c": None}]},)


@pytest.mark.parametrize(
    "text",
    ["a: &x {k: v}\nb: *x\n", "a: 1\na: 2\n", "<<: {m: n}\n", "a: y\n", "1: one\n", "a: !!str 5\n"],
)
def test_anything_the_full_checks_would_report_leaves_the_one_walk(text: str, loader: Any) -> None:
    node = loader(text).get_single_node()
    assert yamlin._clean_values(loader(""), node, shared="*" in text) is None


def test_key_lines_are_found_when_asked_for_and_match_the_full_checks(
    loader: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "config:\n  flyte-apps:apps:\n    - name: a\n\n      env:\n        K: v\n    - name: b\n"
    _, _, lines = yamlin.read_yaml(text, SOURCE)
    assert isinstance(lines, yamlin.LaterMap)
    found = dict(lines)
    assert found[("config", "flyte-apps:apps", 1)] == 7
    assert found[("config", "flyte-apps:apps", 0, "env", "K")] == 6
    full_checks_only(monkeypatch)
    assert found == yamlin.read_yaml(text, SOURCE)[2]


def test_stack_input_key_lines_stay_the_same_and_compare_as_maps() -> None:
    project = parse_project_file("config:\n  flyte-apps:project: p\n", "Pulumi.yaml")
    stack = parse_stack_file("config:\n  flyte-apps:project: q\n  flyte-apps:apps: []\n", SOURCE)
    merged = merge_inputs([project, stack])
    assert merged.key_lines == {
        "flyte-apps:project": (SOURCE, 2),
        "flyte-apps:apps": (SOURCE, 3),
    }
    assert merged.where("flyte-apps:apps[0].name") == (SOURCE, 3)
    assert merged == StackInput(
        values={"flyte-apps:project": "q", "flyte-apps:apps": []},
        key_lines={"flyte-apps:project": (SOURCE, 2), "flyte-apps:apps": (SOURCE, 3)},
    )


@pytest.mark.parametrize("enabled", [True, False])
def test_reading_leaves_the_garbage_collector_as_it_found_it(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        yamlin.read_yaml("a: [1, 2]\n", SOURCE)
        with pytest.raises(ConfigError):
            yamlin.read_yaml("a: [1, 2\n", SOURCE)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_reading_a_clean_document_leaves_no_cyclic_garbage() -> None:
    gc.collect()
    yamlin.read_yaml("a: [1, 'b', {c: ~}]\nd: e\n", SOURCE)
    assert gc.collect() == 0
