"""``flyte-apps``: the command line. Commands parse options and delegate; domain errors become exit
codes here and nowhere else (0 ok, 1 not found, 2 bad arguments or config, 3 cluster unreachable)."""

from __future__ import annotations

import typer

from flyte_apps.cli import check, logs, render, status, watch

app = typer.Typer(
    help="Flyte apps as code: render, check and operate the Knative Services of a flyte-apps stack.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Flyte apps as code."""


# Each command lives in its own module of ``flyte_apps.cli`` and adds itself here.
for _command in (render, check, status, watch, logs):
    _command.register(app)


def main() -> None:
    app()
