"""The walls between the layers hold: ``lint-imports`` passes on the project, and fails as soon as a
probe import goes through a wall or closes a cycle (so the contracts are not vacuous)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.config import REPO_ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
PROBED_MODULE = Path("flyte_apps") / "core" / "naming.py"
"""The module that computes KService names: the heart of the pure core."""

LAYERS = "Layers: the CLI on top"
PURE_CORE = "The pure core imports neither Pulumi nor Kubernetes"
ACYCLIC = "No import cycles among the sibling modules of any package"


def lint_copy(tmp_path: Path, probe: str | None) -> str:
    """Run ``lint-imports`` on a copy of the project with ``probe`` appended to the probed module."""
    for name in ("flyte_apps", "components"):
        # Not the component package's virtualenv (components/plugin/venv): it is no part of the code.
        ignore = shutil.ignore_patterns("__pycache__", "venv")
        shutil.copytree(REPO_ROOT / name, tmp_path / name, ignore=ignore)
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    if probe is not None:
        with (tmp_path / PROBED_MODULE).open("a", encoding="utf-8") as module:
            module.write(f"\n{probe}\n")
    # The copy comes first on the path, ahead of the editable install of the real tree.
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return f"exit {done.returncode}\n{done.stdout}{done.stderr}"


def broken_contracts(report: str) -> list[str]:
    section = report.split("Broken contracts", 1)[-1] if "Broken contracts" in report else ""
    return [name for name in (LAYERS, PURE_CORE, ACYCLIC) if name in section]


def test_the_project_keeps_every_import_contract(tmp_path: Path) -> None:
    report = lint_copy(tmp_path, probe=None)
    assert report.startswith("exit 0"), report
    assert "0 broken" in report, report


@pytest.mark.parametrize(
    ("probe", "broken"),
    [
        pytest.param("import flyte_apps.cli.main", [LAYERS, PURE_CORE, ACYCLIC], id="cli-into-the-core"),
        pytest.param("import kubernetes.client", [PURE_CORE], id="kubernetes-client-into-the-core"),
        pytest.param(
            "def _probe() -> None:\n    from flyte_apps.kube import reaper",
            [LAYERS, PURE_CORE, ACYCLIC],
            id="function-level-import-of-the-kube-layer",
        ),
        pytest.param("from flyte_apps.core import plan", [ACYCLIC], id="cycle-inside-the-core"),
    ],
)
def test_a_probe_import_through_a_wall_breaks_a_contract(
    tmp_path: Path, probe: str, broken: list[str]
) -> None:
    report = lint_copy(tmp_path, probe)
    assert report.startswith("exit 1"), report
    assert broken_contracts(report) == broken, report
