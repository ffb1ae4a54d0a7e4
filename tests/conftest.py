"""Shared test fixtures: the repository root, the example stack's config, and config builders."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from components.stackfile import read_stack_config

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"


def minimal_config(**app: Any) -> dict[str, Any]:
    """A valid one-app config (proj/dev/myapp); keyword arguments override the app's keys."""
    entry: dict[str, Any] = {"name": "myapp", "container": {"image": "nginx:1.27"}}
    entry.update(copy.deepcopy(app))
    return {"flyte-apps:project": "proj", "flyte-apps:domain": "dev", "flyte-apps:apps": [entry]}


@pytest.fixture
def example_config() -> dict[str, Any]:
    """The dev stack's config exactly as `flyte-apps render --stack dev` reads it."""
    return read_stack_config(project_dir=REPO_ROOT, stack="dev")


# The fake Kubernetes API server, one per test (see tests/fakes/kube_api.py).
from tests.fakes.kube_api import kube_server as kube_server  # noqa: E402
