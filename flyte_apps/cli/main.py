"""``flyte-apps``: the command line. Commands parse options and delegate; domain errors become exit
codes here and nowhere else (0 ok, 1 not found, 2 bad arguments or config, 3 cluster unreachable)."""

from __future__ import annotations

import typer

from flyte_apps.cli import check, logs, render, status, watch
from flyte_apps.cli.common import EXIT_OK, silence_stdout, silence_stdout_if_reader_gone, stdout_reader_gone

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
    """The ``flyte-apps`` entry point. A reader that stops reading (``flyte-apps logs APP | head -1``)
    is a normal end: exit 0, nothing on stderr, like ``kubectl`` and other Unix tools."""
    try:
        app()
    except SystemExit as exc:
        if exc.code != EXIT_OK and stdout_reader_gone():
            silence_stdout()
            raise SystemExit(EXIT_OK) from None
        silence_stdout_if_reader_gone()
        raise
    except BrokenPipeError:
        silence_stdout()
        raise SystemExit(EXIT_OK) from None
