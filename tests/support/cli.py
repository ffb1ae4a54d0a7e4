"""A typer app holding only the commands under test, as ``flyte_apps.cli.main`` assembles them."""

from __future__ import annotations

import re
from collections.abc import Callable

import typer


def command_app(*registrations: Callable[[typer.Typer], object]) -> typer.Typer:
    """A command group (the callback keeps it one even with a single command) with each
    ``register(app)`` applied; tracebacks stay plain so a failing test shows the real one."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @app.callback()
    def _root() -> None:
        """flyte-apps (test build)."""

    for register in registrations:
        register(app)
    return app


LOCATION = re.compile(r"^(error: )\S+:\d+ (flyte-apps:)", re.MULTILINE)
"""``error: Pulumi.dev.yaml:42 flyte-apps:apps[0]...``: the file and line a config problem is written at."""


def without_locations(stderr: str) -> str:
    """``stderr`` with the ``FILE:LINE `` in front of each config key removed, for tests about what a
    problem says rather than where (tests/cli/test_strict_input.py checks the locations)."""
    return LOCATION.sub(r"\1\2", stderr)
