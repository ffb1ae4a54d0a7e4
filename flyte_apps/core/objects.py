"""A rendered Kubernetes object, as the render plan, the Pulumi components and the policies see it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Manifest = dict[str, Any]


@dataclass(frozen=True)
class RenderedObject:
    """One Kubernetes object; ``patch`` marks objects the program patches rather than owns."""

    manifest: Manifest
    patch: bool = False

    @property
    def kind(self) -> str:
        return str(self.manifest["kind"])

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.manifest["metadata"].get("namespace", ""))
