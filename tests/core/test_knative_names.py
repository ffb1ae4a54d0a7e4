"""The names Knative gives child objects (``kmeta.ChildName``), as knative.dev/pkg writes them: every
committed vector (tests/fixtures/knative_child_names.json, written by ``make vectors`` from Knative's own
code: tests/vectors/childname)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flyte_apps.core.naming import knative_child_name, revision_name
from tests.support.config import REPO_ROOT

VECTORS: list[dict[str, Any]] = json.loads(
    (REPO_ROOT / "tests" / "fixtures" / "knative_child_names.json").read_text(encoding="utf-8")
)


def test_child_names_match_knatives_own_on_every_vector() -> None:
    differ = [
        (v["parent"], v["suffix"], v["name"], knative_child_name(v["parent"], v["suffix"]))
        for v in VECTORS
        if knative_child_name(v["parent"], v["suffix"]) != v["name"]
    ]
    assert not differ, f"{len(differ)} of {len(VECTORS)} differ, first: {differ[:3]}"


def test_the_vectors_reach_every_branch_of_child_name() -> None:
    """Names that fit, parents shortened with their hash, and long suffixes cut and stripped."""
    fits = [v for v in VECTORS if len(v["parent"]) + len(v["suffix"]) <= 63]
    long_suffix = [v for v in VECTORS if len(v["suffix"]) >= 31 and v not in fits]
    hashed = [v for v in VECTORS if v not in fits and v not in long_suffix]
    stripped = [v for v in long_suffix if len(v["name"]) < 63]
    assert min(len(fits), len(hashed), len(long_suffix), len(stripped)) >= 1


@pytest.mark.parametrize(
    ("configuration", "generation", "expected"),
    [
        ("notebook-flytesnacks-development", 1, "notebook-flytesnacks-development-00001"),
        ("app", 123456, "app-123456"),
        ("x" * 57, 1, "x" * 57 + "-00001"),
    ],
)
def test_a_revision_is_named_after_its_configuration_and_generation(
    configuration: str, generation: int, expected: str
) -> None:
    assert revision_name(configuration, generation) == expected


def test_a_long_configuration_names_its_revision_by_hash_within_63_characters() -> None:
    name = revision_name("x" * 58, 1)
    expected = next(v["name"] for v in VECTORS if v["parent"] == "x" * 58 and v["suffix"] == "-00001")
    assert (name, len(name)) == (expected, 63)
