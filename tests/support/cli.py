"""A typer app holding only the commands under test, as ``flyte_apps.cli.main`` assembles them."""

from __future__ import annotations

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
