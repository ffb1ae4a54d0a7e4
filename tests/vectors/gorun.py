"""Run one of our Go judges (a ``main`` package in a module of its own under tests/vectors) on a JSON
payload and commit what it answers: the step every Go-judged vector file shares."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

GO_TIMEOUT_S: Final = 900.0
"""A cold module cache downloads the judge's modules first."""


def write_judged(module: Path, payload: object, output: Path, what: str) -> int:
    """``go run .`` in ``module`` with ``payload`` as JSON on stdin (modules from the proxy, no
    workspace); its JSON answer written to ``output``, one line printed saying how many ``what``.
    Go's exit code, and its stderr, when it fails."""
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOWORK": "off"}
    done = subprocess.run(
        ["go", "run", "."],
        cwd=module,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=GO_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        return done.returncode
    answers = json.loads(done.stdout)
    output.write_text(json.dumps(answers, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    print(f"{output}: {len(answers)} {what}")
    return 0
