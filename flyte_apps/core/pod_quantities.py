"""Every quantity of a pod spec in the form Kubernetes writes it back (``canonical_quantity``).

Flyte's app service builds the KService's pod spec from typed Go values (``resource.Quantity``), and
Knative's webhook decodes and re-encodes every KService it admits, so a live KService holds ``1Gi``
where a stack says ``1024Mi``. Rendering the written-back form makes our KService Flyte's, byte for
byte, and keeps `pulumi up` from proposing the same change on every run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from flyte_apps.core.objects import Manifest
from flyte_apps.core.quantities import canonical_quantity, is_quantity

_EACH: Final = "[]"
"""A path step: every item of a list."""
_EVERY_VALUE: Final = "{}"
"""A path step: every value of a map (a ResourceList)."""
_CONTAINERS: Final = ("containers", "initContainers", "ephemeralContainers")
_RESOURCE_LISTS: Final = (("limits", _EVERY_VALUE), ("requests", _EVERY_VALUE))
_DIVISOR: Final = ("resourceFieldRef", "divisor")
QUANTITY_PATHS: Final[tuple[tuple[str, ...], ...]] = (
    *((kind, _EACH, "resources", *block) for kind in _CONTAINERS for block in _RESOURCE_LISTS),
    *((kind, _EACH, "env", _EACH, "valueFrom", *_DIVISOR) for kind in _CONTAINERS),
    ("volumes", _EACH, "emptyDir", "sizeLimit"),
    *(
        ("volumes", _EACH, "ephemeral", "volumeClaimTemplate", "spec", "resources", *b)
        for b in _RESOURCE_LISTS
    ),
    ("volumes", _EACH, "downwardAPI", "items", _EACH, *_DIVISOR),
    ("volumes", _EACH, "projected", "sources", _EACH, "downwardAPI", "items", _EACH, *_DIVISOR),
    ("overhead", _EVERY_VALUE),
    *(("resources", *block) for block in _RESOURCE_LISTS),
)
"""Every ``resource.Quantity`` field of Kubernetes' ``PodSpec`` (k8s.io/api v0.34 core/v1)."""


def canonical_pod_quantities(pod: Mapping[str, Any]) -> Manifest:
    """``pod`` with each quantity at :data:`QUANTITY_PATHS` written as Kubernetes writes it back; the
    parts without one are shared, not copied, and ``pod`` is not changed. A number (YAML's ``cpu: 2``)
    becomes text, as Go's JSON encoder writes every quantity; what is not a quantity stays (validation
    names it)."""
    result: Any = dict(pod)
    for path in QUANTITY_PATHS:
        result = _rewrite(result, path, _canonical)
    rewritten: Manifest = result
    return rewritten


def _canonical(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return value
    text = value if isinstance(value, str) else str(value)
    if not is_quantity(text):
        return value
    written = canonical_quantity(text)
    return value if written == value else written


def _rewrite(node: Any, path: tuple[str, ...], change: Callable[[Any], Any]) -> Any:
    """``node`` with ``change`` applied at ``path``: a new object only where something changed."""
    if not path:
        return change(node)
    step, rest = path[0], path[1:]
    if step == _EACH and isinstance(node, list):
        items = [_rewrite(item, rest, change) for item in node]
        return items if any(new is not old for new, old in zip(items, node, strict=True)) else node
    if step == _EVERY_VALUE and isinstance(node, Mapping):
        values = {key: _rewrite(value, rest, change) for key, value in node.items()}
        return values if any(values[key] is not node[key] for key in node) else node
    if isinstance(node, Mapping) and step in node:
        child = _rewrite(node[step], rest, change)
        return node if child is node[step] else {**node, step: child}
    return node
