"""``flyte-apps``: the command line. Commands parse options and delegate; domain errors become exit
codes here and nowhere else (0 ok, 1 not found, 2 bad arguments or config, 3 cluster unreachable,
4 drift with ``status --exit-code``).

Each command lives in its own module of ``flyte_apps.cli``, imported only when that command runs:
``render`` does not pay for the policy runner or the Kubernetes client, and ``--help`` lists the
commands from the one-line help kept here (``tests/cli/test_main.py`` checks it is each command's
own)."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Annotated, Any, Final

import typer
from typer.core import TyperCommand, TyperGroup

from flyte_apps.cli.exits import EXIT_OK, silence_stdout, silence_stdout_if_reader_gone, stdout_reader_gone

DISTRIBUTION: Final = "flyte-apps"
NO_COLOR_ENV: Final = "NO_COLOR"
"""https://no-color.org: any non-empty value turns colour off."""
HELP_OPTION_NAMES: Final = ("-h", "--help")
NO_COLOR_HELP: Final = "No colour in the output (also when NO_COLOR is set to a non-empty value)."
HELP: Final = (
    "Flyte apps as code: render, check and operate the Knative Services of a flyte-apps stack.\n\n"
    "Exit codes: 0 ok, 1 not found (or a mandatory policy violation for check), 2 bad arguments or "
    "config, 3 cluster unreachable or forbidden, 4 drift (status --exit-code), 130 interrupted."
)


@dataclass(frozen=True)
class LazyCommand:
    """A command of ``flyte-apps``: its name, the module whose ``register(app)`` adds it, and the
    first paragraph of its help (what ``flyte-apps --help`` lists)."""

    name: str
    module: str
    help: str


COMMANDS: Final = (
    LazyCommand(
        "render",
        "flyte_apps.cli.render",
        "Print every Kubernetes object the stack would apply, in apply order (offline).",
    ),
    LazyCommand(
        "check",
        "flyte_apps.cli.check",
        "Run the policy pack's rules on the stack's rendered objects (offline). Exit 1 on a mandatory\n"
        "violation, 2 on a config error.",
    ),
    LazyCommand(
        "status",
        "flyte_apps.cli.status",
        "Show apps (phase, replicas, URL, age, message); with --stack/--config, also drift from the stack.",
    ),
    LazyCommand(
        "watch",
        "flyte_apps.cli.watch",
        "Stream app events: the current apps first (as CREATED), then changes as they happen. Ctrl-C ends.",
    ),
    LazyCommand(
        "logs",
        "flyte_apps.cli.logs",
        "Print an app's logs, from every replica or one (--replica); --follow streams new lines.",
    ),
    LazyCommand(
        "import",
        "flyte_apps.cli.import_apps",
        "Write the apps Flyte runs into the stack file with `adopt`, for `pulumi up` to take them over.",
    ),
)


def load_command(spec: LazyCommand) -> TyperCommand:
    """Import the command's module and build its click command, as the group would have built it."""
    module = importlib.import_module(spec.module)
    holder = typer.Typer(add_completion=False)
    module.register(holder)
    command = typer.main.get_command(holder)
    if not isinstance(command, TyperCommand) or command.name != spec.name:
        msg = f"{spec.module}.register() must add exactly the command {spec.name!r}"
        raise TypeError(msg)
    command.params.append(no_color_option())
    return command


def colour_off(*, ctx: typer.Context, value: bool) -> None:
    """``--no-color``, or ``NO_COLOR`` set: click strips the ANSI codes of everything echoed under
    this context (and the contexts of subcommands, which inherit it)."""
    if value or os.environ.get(NO_COLOR_ENV):
        ctx.color = False


def show_version(*, value: bool) -> None:
    if value:
        from importlib import metadata  # not at the top: 30 ms that only --version needs

        typer.echo(f"{DISTRIBUTION} {metadata.version(DISTRIBUTION)}")
        raise typer.Exit(EXIT_OK)


def _no_color_holder(
    *,
    no_color: Annotated[
        bool,
        typer.Option(
            "--no-color",
            metavar="",
            help=NO_COLOR_HELP,
            callback=colour_off,
            expose_value=False,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Only here to build the ``--no-color`` option each command gets (see :func:`no_color_option`)."""


def no_color_option() -> Any:
    """A fresh ``--no-color`` option (a click parameter: typed Any, see ``resolve_command``)."""
    holder = typer.Typer(add_completion=False)
    holder.command()(_no_color_holder)
    return typer.main.get_command(holder).params[0]


def show_flags_as_flags(params: list[Any]) -> list[Any]:
    """``params`` with every on/off flag (``--help``, ``--install-completion``...) shown in help as
    just its name, not followed by typer's ``<bool>`` (which reads as if it took a value).

    A flag typer left without a default (``--help``, the completion options) gets ``False``: a bool
    is taken as it is, while ``None`` goes through typer's coercion, whose first use imports pydantic
    (0.2 s of ``flyte-apps render --help``, bench/startup.py)."""
    for param in params:
        if not getattr(param, "is_flag", False) or getattr(param, "count", False):
            continue
        if param.metavar is None:
            param.metavar = ""
        if param.default is None:
            param.default = False
    return params


class LazyCommands(TyperGroup):
    """The ``flyte-apps`` group: every command is listed from :data:`COMMANDS` and its module is
    imported only once the command is asked for (run, or its own ``--help``)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for spec in COMMANDS:
            self.commands.setdefault(spec.name, TyperCommand(spec.name, help=spec.help))
        self._loaded: set[str] = set()

    # Typed as Any: the click types behind typer's signature live in its private ``typer._click``.
    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args:
            self._load(args[0])
            command = self.commands.get(args[0])
            if command is not None:
                show_flags_as_flags(command.get_params(ctx))
        return super().resolve_command(ctx, args)

    def get_params(self, ctx: Any) -> Any:
        return show_flags_as_flags(super().get_params(ctx))

    def _load(self, name: str) -> None:
        spec = next((spec for spec in COMMANDS if spec.name == name), None)
        if spec is None or name in self._loaded:
            return
        self.commands[name] = load_command(spec)
        self._loaded.add(name)


app = typer.Typer(
    help=HELP,
    no_args_is_help=True,
    context_settings={"help_option_names": list(HELP_OPTION_NAMES)},
    pretty_exceptions_enable=False,
    cls=LazyCommands,
)


@app.callback()
def _root(
    ctx: typer.Context,
    *,
    _version: Annotated[
        bool,
        typer.Option(
            "--version", metavar="", help="Print the version and exit.", callback=show_version, is_eager=True
        ),
    ] = False,
    no_color: Annotated[bool, typer.Option("--no-color", metavar="", help=NO_COLOR_HELP)] = False,
) -> None:
    """Flyte apps as code."""
    colour_off(ctx=ctx, value=no_color)


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
