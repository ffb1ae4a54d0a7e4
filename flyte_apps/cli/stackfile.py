"""Reading a project's ``Pulumi.yaml`` and ``Pulumi.<stack>.yaml`` from disk (the parsing is pure, in
``flyte_apps.core.stackfile``), and planning the stack they describe.

Stack files are untrusted input (a fork's pull request runs ``flyte-apps check``): a file is read
only up to the size bound (``flyte_apps.core.bounds``), so ``/dev/zero`` or a 1 GB file costs no more
than a file just over the bound, and every problem leaves here with its quoted values shortened, so
no error line carries a whole hostile value, whichever check phrased it."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from flyte_apps.cli.files import NotRegularFile, read_regular
from flyte_apps.core.appfiles import AppFileText, AppFileUnreadable, over_bound_message, with_app_files
from flyte_apps.core.bounds import (
    MAX_INPUT_BYTES,
    bounded,
    bounded_error,
    bounded_problem,
    too_large_message,
)
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.plan import StackPlan, plan_stack
from flyte_apps.core.stackfile import (
    PROJECT_FILE,
    StackInput,
    located,
    merge_inputs,
    parse_project_file,
    parse_stack_file,
    program_config_problem,
    stack_file_name,
)

DEFAULT_STACK: Final = "dev"


def read_stack_input(
    *, project_dir: Path, stack: str | None = None, config_file: Path | None = None
) -> StackInput:
    """The project's config defaults, then the stack file's values on top, then the apps of the apps
    files it lists, with every problem of all the files. Raises ``ConfigError`` only when a file is
    missing, unreadable or not YAML at all."""
    given = read_config_files(project_dir=project_dir, stack=stack, config_file=config_file)
    return read_app_files(given, project_dir)


def read_config_files(
    *, project_dir: Path, stack: str | None = None, config_file: Path | None = None
) -> StackInput:
    """The config as Pulumi hands it to the program: the project's defaults, the stack file's values on
    top (apps files not read)."""
    inputs: list[StackInput] = []
    project_path = project_dir / PROJECT_FILE
    project_text = _read(project_path, required=False)
    if project_text is not None:
        inputs.append(parse_project_file(project_text, str(project_path)))
    path = config_file if config_file is not None else project_dir / stack_file_name(stack or DEFAULT_STACK)
    inputs.append(parse_stack_file(_read(path) or "", str(path)))
    return merge_inputs(inputs)


def read_app_files(given: StackInput, project_dir: Path) -> StackInput:
    """``given`` with the apps of the files ``flyte-apps:appFiles`` lists (``flyte_apps.core.appfiles``),
    each name resolved against ``project_dir`` (where ``Pulumi.yaml`` is; symlinks followed, and a
    name that ends outside the directory refused), read as a stack file is (bounded, a regular file,
    UTF-8). The program reads them with this too."""
    root = project_dir.resolve()

    def read(name: str, limit: int) -> AppFileText:
        path = project_dir / name
        try:
            if not path.resolve().is_relative_to(root):
                msg = "leads outside the project directory (through a symlink): apps files stay inside it"
                raise _Unreadable(msg)
            text = _read_text(path, limit=limit, kind="an apps file", too_large=over_bound_message)
        except (FileNotFoundError, NotADirectoryError):
            msg = "is not found (a name is relative to the project directory, where Pulumi.yaml is)"
            raise AppFileUnreadable(msg) from None
        except _Unreadable as exc:
            raise AppFileUnreadable(str(exc)) from None
        return AppFileText(str(path), text)

    return with_app_files(given, read)


def read_stack_config(
    *, project_dir: Path, stack: str | None = None, config_file: Path | None = None
) -> dict[str, Any]:
    """Config keys (``namespace:key``) to values; raises ``ConfigError`` on any problem of the files."""
    try:
        given = read_stack_input(project_dir=project_dir, stack=stack, config_file=config_file)
    except ConfigError as exc:
        raise bounded_error(exc) from None
    if given.problems:
        raise ConfigError([bounded_problem(problem) for problem in given.problems])
    return given.values


def plan_stack_files(
    *,
    project_dir: Path,
    stack: str | None = None,
    config_file: Path | None = None,
    as_pulumi_runs_it: bool = False,
) -> tuple[StackPlan, StackInput]:
    """Plan the stack the files describe; every problem of the files and of the config is raised
    together in one ``ConfigError``, each located at its file and line (``Pulumi.dev.yaml:42
    flyte-apps:apps[1].name``) where the files say. With ``as_pulumi_runs_it``, a config too large for
    Pulumi to hand to the program (``program_config_problem``) is one of them. Returns the plan and what
    the files held."""
    given = StackInput()
    try:
        # Reading and planning make many long-lived objects and little cyclic garbage: collection
        # passes over them made reading a 10,000-app stack file 3.0x and planning it 1.26x slower
        # (bench/RESULTS.md). Whatever cycles remain are collected when the collector runs again.
        with collector_paused():
            given = read_config_files(project_dir=project_dir, stack=stack, config_file=config_file)
            too_large = program_config_problem(given.values) if as_pulumi_runs_it else None
            given = read_app_files(given, project_dir)
            problems = (*given.problems, too_large) if too_large is not None else given.problems
            plan = plan_stack(
                given.values, problems=problems, warnings=given.warnings, app_paths=given.app_paths
            )
    except ConfigError as exc:
        raise bounded_error(ConfigError(located(exc.problems, given))) from None
    warnings = tuple(bounded(warning) for warning in plan.warnings)
    if warnings != plan.warnings:
        plan = dataclasses.replace(plan, warnings=warnings)
    return plan, given


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside; the collector's state is restored on the way out. Only
    the command line, which owns its process, does this (the pure core never touches the collector)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_stack_text(path: Path) -> str:
    """A stack file's text, as the readers here read it (bounded, a regular file, UTF-8); every
    failure a ``ConfigError`` at the file."""
    return _read(path) or ""


def _read(path: Path, *, required: bool = True) -> str | None:
    """A stack file's text (:func:`_read_text`); a missing file is a problem when ``required``, else
    None."""
    try:
        return _read_text(
            path,
            limit=MAX_INPUT_BYTES,
            kind="a stack file",
            too_large=lambda size, _: too_large_message(size, "a stack file"),
        )
    except (FileNotFoundError, NotADirectoryError):
        if not required:
            return None
        raise ConfigError([ConfigProblem(str(path), "stack config file not found")]) from None
    except _Unreadable as exc:
        raise ConfigError([ConfigProblem(str(path), str(exc))]) from None


class _Unreadable(Exception):
    """A file that is there but is not read; the message says why."""


def _read_text(path: Path, *, limit: int, kind: str, too_large: Callable[[int, int], str]) -> str:
    """The file's text, reading at most one byte more than ``limit`` (a size from ``stat`` can lie: a
    pipe or a device says 0), and only from a regular file (a FIFO or ``/dev/stdin`` would wait for a
    writer); :class:`_Unreadable` with why (``too_large(size, limit)`` over the limit), and a missing
    file's ``FileNotFoundError`` or ``NotADirectoryError`` as they are."""
    try:
        data = read_regular(path, limit=limit)
    except (FileNotFoundError, NotADirectoryError):
        raise
    except NotRegularFile as exc:
        msg = f"{exc}; give {kind}"
        raise _Unreadable(msg) from None
    except OSError as exc:
        msg = f"cannot be read: {exc.strerror or exc}"
        raise _Unreadable(msg) from None
    if len(data) > limit:
        raise _Unreadable(too_large(len(data), limit))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"cannot be read: {exc}"
        raise _Unreadable(msg) from None
