"""Fixtures shared by every test package (helpers live in ``tests/support``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from flyte_apps.cli.stackfile import read_stack_config
from tests.fakes.kube_api import kube_server as kube_server  # the fake API server, one per test
from tests.support.config import REPO_ROOT


@pytest.fixture
def example_config() -> dict[str, Any]:
    """The dev stack's config exactly as `flyte-apps render --stack dev` reads it."""
    return read_stack_config(project_dir=REPO_ROOT, stack="dev")


CALLER_ENVIRONMENT: Final = (
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR_FORCE",
    "KUBECONFIG",
    "COLUMNS",
    "LINES",
    "PYTHONUNBUFFERED",
)
"""Settings of the caller's shell that change what the commands print, which cluster they reach, or
when a child Python process's output reaches the test (most shells leave ``PYTHONUNBUFFERED`` unset;
a shell that sets it hid a host whose port never arrived, issue 36)."""
TERMINAL_COLUMNS: Final = "80"


@pytest.fixture(autouse=True)
def neutral_environment(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Every test starts from the same environment, whatever the user's shell holds: no colour
    settings, no ``KUBECONFIG``, no ``PYTHONUNBUFFERED``, an empty home (so no ``~/.kube/config``),
    80 columns. A test that needs one of them sets it itself."""
    for name in CALLER_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", TERMINAL_COLUMNS)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KUBECONFIG", str(Path(home) / "no-kubeconfig"))
    yield
