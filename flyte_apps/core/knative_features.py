"""Which Knative feature flags a revision's pod spec needs.

Knative's admission refuses a revision that uses a pod-spec field behind a feature flag the cluster's
``config-features`` does not enable. Its Service CRD marks those fields with a note ("This is
accessible behind a feature flag - kubernetes.podspec-affinity"); ``FEATURE_GATES`` is that map, one
entry per noted field (a list item noted with its list's flag is the list's entry), and
``tests/core/test_knative_features.py`` keeps it equal to the notes of the CRD the package ships.

The plan uses it twice: with ``flyte-apps:knative.manageConfig`` the ``config-features`` patch enables
the flags the stack's apps use (never disabling any), and without it ``render`` names them in a
warning; the policy pack's ``knative-feature-flags-enabled`` rule reads the same map.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

from flyte_apps.core import constants as c
from flyte_apps.core.objects import Manifest

LIST_ITEMS: Final = "[]"
"""In a gate's path: every item of the list before it."""


@dataclass(frozen=True)
class FeatureGate:
    """A pod-spec field and the flag Knative needs enabled before it accepts a value there."""

    path: str
    """Dotted, relative to the revision's pod spec; ``[]`` after a list means each of its items."""
    flag: str


FEATURE_GATES: Final[tuple[FeatureGate, ...]] = (
    FeatureGate("affinity", c.FLAG_AFFINITY),
    FeatureGate("containers[].env[].valueFrom.fieldRef", c.FLAG_FIELDREF),
    FeatureGate("containers[].env[].valueFrom.resourceFieldRef", c.FLAG_FIELDREF),
    FeatureGate("containers[].securityContext.capabilities.add", c.FLAG_ADD_CAPABILITIES),
    FeatureGate("containers[].volumeMounts[].mountPropagation", c.FLAG_MOUNT_PROPAGATION),
    FeatureGate("dnsConfig", c.FLAG_DNS_CONFIG),
    FeatureGate("dnsPolicy", c.FLAG_DNS_POLICY),
    FeatureGate("hostAliases", c.FLAG_HOST_ALIASES),
    FeatureGate("hostIPC", c.FLAG_HOST_IPC),
    FeatureGate("hostNetwork", c.FLAG_HOST_NETWORK),
    FeatureGate("hostPID", c.FLAG_HOST_PID),
    FeatureGate("initContainers", c.FLAG_INIT_CONTAINERS),
    FeatureGate("nodeSelector", c.FLAG_NODE_SELECTOR),
    FeatureGate("priorityClassName", c.FLAG_PRIORITY_CLASS_NAME),
    FeatureGate("runtimeClassName", c.FLAG_RUNTIME_CLASS_NAME),
    FeatureGate("schedulerName", c.FLAG_SCHEDULER_NAME),
    FeatureGate("securityContext", c.FLAG_SECURITY_CONTEXT),
    FeatureGate("shareProcessNamespace", c.FLAG_SHARE_PROCESS_NAMESPACE),
    FeatureGate("tolerations", c.FLAG_TOLERATIONS),
    FeatureGate("topologySpreadConstraints", c.FLAG_TOPOLOGY_SPREAD),
    FeatureGate("volumes[].csi", c.FLAG_VOLUMES_CSI),
    FeatureGate("volumes[].emptyDir", c.FLAG_VOLUMES_EMPTYDIR),
    FeatureGate("volumes[].ephemeral", c.FLAG_VOLUMES_EPHEMERAL),
    FeatureGate("volumes[].hostPath", c.FLAG_VOLUMES_HOSTPATH),
    FeatureGate("volumes[].image", c.FLAG_VOLUMES_IMAGE),
    FeatureGate("volumes[].persistentVolumeClaim", c.FLAG_PVC),
)

GATE_STEPS: Final = tuple(
    (gate.flag, tuple(gate.path.replace(LIST_ITEMS, f".{LIST_ITEMS}").split("."))) for gate in FEATURE_GATES
)
"""Each gate's path cut into steps once (``("containers", "[]", "env", ...)``): a stack of thousands of
apps walks them for every app."""

GateTrie: TypeAlias = dict[str, tuple[tuple[int, ...], "GateTrie"]]
"""Gate paths as a tree of steps: each step maps to the gates (indexes into ``GATE_STEPS``) whose path
ends there and the steps below it, so a pod spec is walked once for every gate (they share
``containers[].env[]``...)."""


def _gate_trie(gates: Sequence[tuple[int, tuple[str, ...]]]) -> GateTrie:
    """``gates`` (index, steps: never empty) as a ``GateTrie``."""
    heads: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
    for gate, steps in gates:
        heads.setdefault(steps[0], []).append((gate, steps[1:]))
    return {
        head: (
            tuple(gate for gate, rest in entries if not rest),
            _gate_trie([(gate, rest) for gate, rest in entries if rest]),
        )
        for head, entries in heads.items()
    }


GATE_TRIE: Final = _gate_trie([(gate, steps) for gate, (_, steps) in enumerate(GATE_STEPS)])

ENABLED_BY_DEFAULT: Final = frozenset({c.FLAG_VOLUMES_EMPTYDIR})
"""Flags Knative enables when ``config-features`` does not set them: no warning is needed for these
(the ``config-features`` patch still enables them, in case a cluster turned one off)."""
ENABLING_VALUES: Final = frozenset({c.KNATIVE_FEATURE_ENABLED, c.KNATIVE_FEATURE_ALLOWED})
"""``config-features`` values under which Knative accepts a gated pod-spec field."""


@dataclass(frozen=True)
class FlagUse:
    """A flag a pod spec needs, and where (``affinity``, ``volumes[0].emptyDir``...)."""

    flag: str
    paths: tuple[str, ...]


def flags_used(pod_spec: Manifest) -> tuple[FlagUse, ...]:
    """Every flag ``pod_spec`` needs, sorted by flag, with the fields that need it in spec order.

    ``pod_spec`` is plain dicts and lists, as manifests are. A field is in use when its value is set
    in Go's sense (Knative compares against Go's zero values): a map or list (even empty), ``true``, a
    non-empty string or a non-zero number. A value of any other type (an unknown value during
    ``pulumi preview``) is not judged.
    """
    where: list[list[str]] = [[] for _ in FEATURE_GATES]  # by gate, each in spec order
    _set_fields(pod_spec, GATE_TRIE, "", where)
    found: dict[str, list[str]] = {}
    for (flag, _), paths in zip(GATE_STEPS, where, strict=True):
        if paths:
            found.setdefault(flag, []).extend(paths)
    for claim in _writable_claims(pod_spec):
        found.setdefault(c.FLAG_PVC_WRITE, []).append(claim)
    return tuple(FlagUse(flag, tuple(found[flag])) for flag in sorted(found))


def _set_fields(node: object, trie: GateTrie, where: str, found: list[list[str]]) -> None:
    """Append to ``found[gate]`` where ``node`` sets the field of each gate under ``trie``.

    Manifests are plain dicts and lists (``type`` checks, no generators: this runs for every app)."""
    for step, (ends, children) in trie.items():
        if step == LIST_ITEMS:
            if type(node) is list:
                for index, item in enumerate(node):
                    _set_field(item, ends, children, f"{where}[{index}]", found)
        elif type(node) is dict and step in node:
            _set_field(node[step], ends, children, f"{where}.{step}" if where else step, found)


def _set_field(
    node: object, ends: tuple[int, ...], children: GateTrie, where: str, found: list[list[str]]
) -> None:
    if ends and _is_set(node):
        for gate in ends:
            found[gate].append(where)
    if children:
        _set_fields(node, children, where, found)


def _is_set(value: object) -> bool:
    if type(value) in (dict, list):
        return True
    if type(value) in (bool, str, int, float):
        return bool(value)
    return False


def _writable_claims(pod_spec: Manifest) -> Iterator[str]:
    """Knative also needs the write flag for a claim that is not read-only (its admission rule)."""
    volumes = pod_spec.get("volumes")
    if not isinstance(volumes, list):
        return
    for index, volume in enumerate(volumes):
        claim = volume.get("persistentVolumeClaim") if isinstance(volume, Mapping) else None
        if isinstance(claim, Mapping) and claim.get("readOnly") in (None, False):
            yield f"volumes[{index}].persistentVolumeClaim.readOnly"
