"""Where the repository and its test schemas are, a builder for small valid stack configs with the names
and the KService they render to, and a writer for stack files."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from flyte_apps.core.plan import plan_stack

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
SCHEMAS_DIR: Final = REPO_ROOT / "tests" / "fixtures" / "schemas"
"""Knative's and Flyte's published CRDs, as test data (tests/fixtures/schemas/README.md)."""

MINIMAL_NAMESPACE: Final = "flyte"
"""The namespace of ``minimal_config``'s app (the platform default)."""
MINIMAL_KSERVICE: Final = "myapp-proj-dev"
"""The KService name of ``minimal_config``'s app (``<name>-<project>-<domain>``)."""

KUBERNETES_VERSION: Final = "1.37.0"
"""The Kubernetes version core objects are validated against: the newest schema set
kubernetes-validate 1.37.0 ships (it carries 1.25 .. 1.37)."""


def minimal_config(**app: Any) -> dict[str, Any]:
    """A valid one-app config (proj/dev/myapp); keyword arguments override the app's keys."""
    entry: dict[str, Any] = {"name": "myapp", "container": {"image": "nginx:1.27"}}
    entry.update(copy.deepcopy(app))
    return {"flyte-apps:project": "proj", "flyte-apps:domain": "dev", "flyte-apps:apps": [entry]}


def minimal_kservice(**app: Any) -> dict[str, Any]:
    """The KService ``render`` builds for ``minimal_config(**app)`` (a copy: callers may edit it)."""
    return copy.deepcopy(plan_stack(minimal_config(**app)).apps[0].kservice)


def write_stack(directory: Path, config: Mapping[str, Any], name: str = "Pulumi.test.yaml") -> Path:
    """Write ``config`` as the stack file ``directory/name`` (``{"config": config}``); its path."""
    path = directory / name
    path.write_text(yaml.safe_dump({"config": dict(config)}, sort_keys=False), encoding="utf-8")
    return path
