"""Fixtures shared by every test package (helpers live in ``tests/support``)."""

from __future__ import annotations

from typing import Any

import pytest

from flyte_apps.cli.stackfile import read_stack_config
from tests.fakes.kube_api import kube_server as kube_server  # the fake API server, one per test
from tests.support.config import REPO_ROOT


@pytest.fixture
def example_config() -> dict[str, Any]:
    """The dev stack's config exactly as `flyte-apps render --stack dev` reads it."""
    return read_stack_config(project_dir=REPO_ROOT, stack="dev")
