"""The floor of the start-up benchmark: a bare two-command typer app, as small as a typer CLI gets::

    python bench/bare_typer.py --help

What ``flyte-apps --help`` cannot do with less: start the interpreter, import typer (and what it
pulls in for help output) and print a help page listing two commands.
"""

from __future__ import annotations

import typer

app = typer.Typer(help="A bare two-command app.", add_completion=False, pretty_exceptions_enable=False)


@app.command()
def first(name: str = "x") -> None:
    """The first command."""
    typer.echo(name)


@app.command()
def second(count: int = 1) -> None:
    """The second command."""
    typer.echo(str(count))


if __name__ == "__main__":
    app()
