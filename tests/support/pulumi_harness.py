"""Run the real ``__main__.py`` under Pulumi mocks and capture what it registers."""

from __future__ import annotations

import json
import logging
import runpy
from dataclasses import dataclass, field
from typing import Any

import pulumi

from tests.support.config import REPO_ROOT

MAIN = REPO_ROOT / "__main__.py"


@dataclass
class Registered:
    typ: str
    name: str
    inputs: dict[str, Any]
    provider: str | None


@dataclass
class CaptureMocks(pulumi.runtime.Mocks):
    """Records every resource registration; echoes inputs back as outputs."""

    resources: list[Registered] = field(default_factory=list)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.resources.append(Registered(args.typ, args.name, dict(args.inputs), args.provider))
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None

    def of_type(self, typ: str) -> list[Registered]:
        return [r for r in self.resources if r.typ == typ]


class LogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def install(
    config: dict[str, Any], *, secret_keys: list[str] | None = None, stack: str = "dev"
) -> tuple[CaptureMocks, LogCapture]:
    """Fresh mocks and config for one program run (config values go in as JSON strings)."""
    mocks = CaptureMocks()
    logger = logging.getLogger(f"pulumi-mock-{id(mocks)}")
    capture = LogCapture()
    logger.addHandler(capture)
    logger.setLevel(logging.DEBUG)
    pulumi.runtime.set_mocks(mocks, project="flyte-apps", stack=stack, preview=False, logger=logger)
    pulumi.runtime.set_all_config(
        {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()},
        secret_keys or [],
    )
    return mocks, capture


@pulumi.runtime.test
def run_program() -> None:
    """Run ``__main__.py``; the decorator waits for every registration before returning, so callers
    assert on the mocks afterwards."""
    runpy.run_path(str(MAIN), run_name="__main__")
