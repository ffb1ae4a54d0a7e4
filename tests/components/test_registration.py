"""Every Pulumi component ends its constructor with exactly one ``register_outputs`` (STYLE.md 4):
without it the component never completes in the engine's view and its outputs are not recorded."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.config import REPO_ROOT

COMPONENTS = REPO_ROOT / "components"
STATE_COMPATIBILITY = COMPONENTS / "resources"
"""Re-exports for Pulumi state written by 0.1.0; they define nothing."""
PACKAGE_VENV = COMPONENTS / "plugin" / "venv"
"""The component package's virtualenv (made by the CLI, ignored by git)."""


def pulumi_modules() -> list[Path]:
    return sorted(
        path
        for path in COMPONENTS.rglob("*.py")
        if path.name != "__init__.py"
        and STATE_COMPATIBILITY not in path.parents
        and PACKAGE_VENV not in path.parents
    )


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)  # a module imported by name
    return found


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)


def imports_pulumi(path: Path) -> bool:
    return any(name == "pulumi" or name.startswith("pulumi.") for name in imported_modules(path))


@pytest.mark.parametrize("path", pulumi_modules(), ids=lambda path: path.name)
def test_every_module_of_the_pulumi_layer_is_pulumi_or_serves_only_modules_that_are(path: Path) -> None:
    """``components/`` is the Pulumi layer and nothing else: a module that needs no Pulumi belongs in
    the library package ``flyte_apps``, unless it is Pulumi knowledge used by the layer alone (the
    package schema is Pulumi's format, made for the package's provider)."""
    if imports_pulumi(path):
        return
    name = module_name(path)
    users = [other for other in pulumi_modules() if other != path and name in imported_modules(other)]
    assert users, f"{name} imports no Pulumi and serves no module of the Pulumi layer: move it to flyte_apps"
    assert all(imports_pulumi(user) for user in users), f"{name} serves {users}, not all of them Pulumi"
    library = [other for other in (REPO_ROOT / "flyte_apps").rglob("*.py") if name in imported_modules(other)]
    assert library == [], f"{name} is used by the library package: it belongs there"


def component_classes() -> list[tuple[Path, ast.ClassDef]]:
    found = []
    for path in pulumi_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Attribute) and base.attr == "ComponentResource" for base in node.bases
            ):
                found.append((path, node))
    return found


def test_resources_define_components() -> None:
    names = sorted(node.name for _, node in component_classes())
    assert names == ["CustomDomains", "FlyteApp", "FlyteManager"]


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
