"""The built ``kubectl`` against one kubeconfig: how every part of the cluster (and every scenario)
talks to the API server, so each call is bounded and never reaches a caller's own cluster."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from tests.e2e.cluster.processes import ClusterError, clean_environment, run_bounded

KUBECTL_TIMEOUT_S: Final = 60.0
REQUEST_TIMEOUT: Final = "30s"
"""Each API request's own bound, under ``KUBECTL_TIMEOUT_S`` so kubectl says which request hung."""
ERROR_ARGS_SHOWN: Final = 3


@dataclass(frozen=True)
class Kubectl:
    binary: Path
    kubeconfig: Path

    def __call__(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        argv = [
            str(self.binary),
            f"--kubeconfig={self.kubeconfig}",
            f"--request-timeout={REQUEST_TIMEOUT}",
            *args,
        ]
        try:
            done = run_bounded(argv, timeout=KUBECTL_TIMEOUT_S, env=clean_environment(), stdin=stdin)
        except subprocess.TimeoutExpired as exc:
            msg = f"kubectl {' '.join(args[:ERROR_ARGS_SHOWN])}: no answer in {KUBECTL_TIMEOUT_S:.0f} s"
            raise ClusterError(msg) from exc
        if check and done.returncode != 0:
            said = done.stderr.strip() or done.stdout.strip()
            raise ClusterError(f"kubectl {' '.join(args[:ERROR_ARGS_SHOWN])}: {said}")
        return done

    def get_json(self, *args: str) -> Any:
        return json.loads(self("get", *args, "-o", "json").stdout)

    def apply(self, documents: Sequence[Mapping[str, Any]]) -> None:
        """Server-side apply: the same documents applied twice are no change, whoever owns them."""
        self("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(documents, sort_keys=False))
