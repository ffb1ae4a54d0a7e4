"""Run one Pulumi program file under Pulumi's mocks, once, in this process; print what it registered.

The process setup is the one ``tests/support/pulumi_harness.py`` uses (``set_mocks``, ``set_all_config`` with
JSON strings, ``runpy`` under ``@pulumi.runtime.test``), with mocks that only count registrations so
the mocks themselves keep nothing alive. Both our program (``__main__.py``) and the floor
(``bench/floor_program.py``) run through here, one fresh process per run::

    python -m bench.mocked_program PROGRAM CONFIG_JSON

prints ``{"registrations": n, "by_type": {type: n, ...}}`` on stdout.
"""

from __future__ import annotations

import argparse
import json
import runpy
from collections import Counter
from pathlib import Path
from typing import Any, Final

import pulumi
from pulumi.runtime import MockCallArgs, MockResourceArgs, Mocks

PROJECT: Final = "flyte-apps"
STACK: Final = "bench"


class CountingMocks(Mocks):
    """Counts registrations by type; echoes inputs back as outputs (as the test harness does)."""

    def __init__(self) -> None:
        self.by_type: Counter[str] = Counter()

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.by_type[args.typ] += 1
        return f"{args.name}-id", dict(args.inputs)

    def call(self, _args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


def run(program: Path, config: dict[str, Any]) -> CountingMocks:
    """Run ``program`` as ``__main__`` under fresh mocks with ``config`` (config key -> value)."""
    mocks = CountingMocks()
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=STACK, preview=False)
    pulumi.runtime.set_all_config(
        {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}, []
    )

    @pulumi.runtime.test  # type: ignore[untyped-decorator]  # the SDK leaves it untyped
    def program_run() -> None:
        runpy.run_path(str(program), run_name="__main__")

    program_run()
    return mocks


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("program", type=Path)
    parser.add_argument("config", type=Path, help="a JSON file: config key -> value")
    args = parser.parse_args(argv)
    config = json.loads(args.config.read_text(encoding="utf-8"))
    mocks = run(args.program.resolve(), config)
    print(json.dumps({"registrations": mocks.by_type.total(), "by_type": dict(mocks.by_type)}))


if __name__ == "__main__":
    main()
