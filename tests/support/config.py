"""Where the repository and ``../shared`` are, and a builder for small valid stack configs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DIR = REPO_ROOT.parent / "shared"


def minimal_config(**app: Any) -> dict[str, Any]:
    """A valid one-app config (proj/dev/myapp); keyword arguments override the app's keys."""
    entry: dict[str, Any] = {"name": "myapp", "container": {"image": "nginx:1.27"}}
    entry.update(copy.deepcopy(app))
    return {"flyte-apps:project": "proj", "flyte-apps:domain": "dev", "flyte-apps:apps": [entry]}
