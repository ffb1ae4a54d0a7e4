"""A rendered manifest as the keyword arguments of a typed pulumi-kubernetes resource.

Its own module so that registering Knative's ConfigMap patches does not load the Flyte manager's
component and its models (``components.manager``): the program imports only what the stack uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic.alias_generators import to_snake


def manifest_fields(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Top-level manifest fields as keyword arguments (``roleRef`` -> ``role_ref``); apiVersion and
    kind are implied by the resource type."""
    return {to_snake(key): value for key, value in manifest.items() if key not in ("apiVersion", "kind")}
