"""What a ``kubernetes:kubeconfig`` setting is: a file path or the kubeconfig itself.

pulumi-kubernetes takes either in the same setting, and decides as ``parseKubeconfigString``
(provider/pkg/provider/util.go) does: a path when a file of that name exists (``~`` expanded),
content otherwise. Everything here that must tell the two apart (the program recording the reaper's
cluster, the kube layer, the CLI) decides the same way, so a value that is not an existing file is
never printed or stored as if it were a path: it may be content, token included. The rule is pure;
callers hand in how to ask whether a file exists."""

from __future__ import annotations

from collections.abc import Callable


def is_kubeconfig_path(value: str, *, is_file: Callable[[str], bool]) -> bool:
    """A path, not content: ``is_file(value)`` (the caller expands ``~`` and resolves a relative
    path where pulumi-kubernetes would); a value with a newline is content whatever the disk holds."""
    return bool(value) and "\n" not in value and is_file(value)
