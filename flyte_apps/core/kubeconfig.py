"""What a ``kubernetes:kubeconfig`` setting is: a file path or the kubeconfig itself.

pulumi-kubernetes takes either in the same setting. The Pulumi program must know which without
importing the Kubernetes client (a large import every ``pulumi up`` would pay), and the kube layer
must decide the same way, so the rule lives here, pure."""

from __future__ import annotations

from typing import Final

_CONTENT_STARTS: Final = ("{", "apiVersion")


def is_kubeconfig_content(value: str) -> bool:
    """Content, not a path: paths have no newline and do not start a YAML/JSON document."""
    return "\n" in value or value.lstrip().startswith(_CONTENT_STARTS)
