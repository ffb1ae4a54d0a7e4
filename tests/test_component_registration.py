"""Every Pulumi component ends its constructor with exactly one ``register_outputs`` (STYLE.md 4):
without it the component never completes in the engine's view and its outputs are not recorded."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

RESOURCES = REPO_ROOT / "components" / "resources"


def component_classes() -> list[tuple[Path, ast.ClassDef]]:
    found = []
    for path in sorted(RESOURCES.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Attribute) and base.attr == "ComponentResource" for base in node.bases
            ):
                found.append((path, node))
    return found


def test_resources_define_components() -> None:
    names = sorted(node.name for _, node in component_classes())
    assert names == ["FlyteApp", "FlyteManager"]


@pytest.mark.parametrize(("path", "cls"), component_classes(), ids=lambda item: getattr(item, "name", ""))
def test_component_constructor_ends_with_one_register_outputs(path: Path, cls: ast.ClassDef) -> None:
    (init,) = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    calls = [
        node
        for node in ast.walk(init)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "register_outputs"
    ]
    assert len(calls) == 1, f"{path.name}:{cls.name} calls register_outputs {len(calls)} times"
    last = init.body[-1]
    assert isinstance(last, ast.Expr) and last.value is calls[0], f"{path.name}:{cls.name} must end with it"
    assert isinstance(calls[0].args[0], ast.Dict) and calls[0].args[0].keys, "register real outputs, not {}"
