"""Apps kept in files beside the stack file (``flyte-apps:appFiles``), appended to ``flyte-apps:apps``.

Pulumi hands the program the stack's whole config in one environment variable, which Linux caps at
128 KiB (``flyte_apps.core.stackfile.program_config_problem``): a stack of more than about 200 apps does
not start. Apps in files do not travel through it; the program and every command read them from disk,
the same way. Each file is a YAML list of apps, each app written as under ``flyte-apps:apps``; the
stack's apps are its own ``apps`` first, then each file's, in the order the files are listed.

An app of a file is named by its place in the config: ``flyte-apps:appFiles[1][3]`` is the fourth app
of the second file, and its problems are located at that file's line. Reading is the caller's job
(``read`` below): it resolves a name against the project directory, refuses one outside it, and bounds
what it reads. Pure otherwise."""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from flyte_apps.core.bounds import MAX_INPUT_BYTES, cost_problems, shown, size_text, too_large_message
from flyte_apps.core.config.keys import APP_KEY_POD, KEY_APP_FILES, KEY_APPS, PREFIX
from flyte_apps.core.errors import ConfigError, ConfigProblem, FlyteAppsError
from flyte_apps.core.stackfile import StackInput
from flyte_apps.core.yamlin import Keys, LaterMap, read_yaml

APP_FILES_KEY = PREFIX + KEY_APP_FILES
APPS_KEY = PREFIX + KEY_APPS
WHAT_A_FILE_HOLDS = "an apps file holds a YAML list of apps, each written as under flyte-apps:apps"


class AppFileUnreadable(FlyteAppsError):
    """A listed apps file that cannot be read; the message says why (missing, a directory, too large)."""


class AppFileText(NamedTuple):
    """A listed apps file as read: where it is, as problems name it (``/srv/infra/apps/ml.yaml``), and
    its text."""

    source: str
    text: str


AppFileReader = Callable[[str, int], AppFileText]
"""Reads the file ``name`` (as listed), refusing one of more than the given number of bytes: its
text, or :class:`AppFileUnreadable`."""


def app_file_path(index: int) -> str:
    """The config key path of the ``index``-th listed file: ``flyte-apps:appFiles[2]``."""
    return f"{APP_FILES_KEY}[{index}]"


def name_problem(name: object, seen: Mapping[str, int]) -> str | None:
    """Why ``name`` cannot name an apps file: not a relative path inside the project, or listed twice."""
    if not isinstance(name, str):
        return f"must be a file path, not {type(name).__name__}"
    if not name.strip():
        return "must be a file path, not empty"
    if "\0" in name:
        return "must be a file path; it holds a NUL character"
    if posixpath.isabs(name):
        return (
            f"{shown(name)} is absolute: give a path relative to the project directory (where Pulumi.yaml is)"
        )
    if ".." in name.split("/"):
        return f"{shown(name)} goes up a directory ('..'): apps files stay inside the project directory"
    normal = posixpath.normpath(name)
    if normal in seen:
        return (
            f"{shown(name)} is listed twice (also at {app_file_path(seen[normal])}): its apps would be twice"
        )
    return None


def with_app_files(given: StackInput, read: AppFileReader) -> StackInput:
    """``given`` with the apps of every file ``flyte-apps:appFiles`` lists appended to ``flyte-apps:apps``
    (the key itself removed), each app named by its place (:attr:`StackInput.app_paths`) and its keys
    located at the file's lines. Every problem of the list and of the files is added to ``given``'s;
    a file with a problem adds no apps. Unchanged when the key is not set."""
    if APP_FILES_KEY not in given.values:
        return given
    values = {key: value for key, value in given.values.items() if key != APP_FILES_KEY}
    listed = given.values[APP_FILES_KEY]
    problems = list(given.problems)
    if listed is None:
        listed = []
    if not isinstance(listed, list):
        message = f"must be a list of file paths, not {type(listed).__name__} ({WHAT_A_FILE_HOLDS})"
        problem = ConfigProblem(APP_FILES_KEY, message)
        return dataclasses.replace(given, values=values, problems=(*problems, problem))
    own = values.get(APPS_KEY)
    apps: list[Any] = list(own) if isinstance(own, list) else []
    paths = [f"{APPS_KEY}[{index}]" for index in range(len(apps))]
    lines_of: list[tuple[str, str, Mapping[Keys, int]]] = []
    seen: dict[str, int] = {}
    budget = MAX_INPUT_BYTES
    for index, name in enumerate(listed):
        where = app_file_path(index)
        wrong = name_problem(name, seen)
        if wrong is not None:
            problems.append(ConfigProblem(where, wrong))
            continue
        seen[posixpath.normpath(name)] = index
        try:
            read_file = read(name, budget)
        except AppFileUnreadable as exc:
            problems.append(ConfigProblem(where, f"{shown(name)} {exc}"))
            continue
        budget -= len(read_file.text.encode())
        entries, found, lines = _read_entries(read_file, where)
        problems.extend(found)
        if entries is None:
            continue
        apps.extend(entries)
        paths.extend(f"{where}[{position}]" for position in range(len(entries)))
        lines_of.append((where, read_file.source, lines))
    app_paths: tuple[str, ...] | None = None
    if own is None or isinstance(own, list):
        # A stack's own apps that are not a list are its problem (stack.py names it): left as written.
        if own is not None or apps:
            values[APPS_KEY] = apps
        app_paths = tuple(paths)
    too_costly = cost_problems(values, APPS_KEY, APP_KEY_POD)
    if too_costly:
        raise ConfigError([*problems, *too_costly])
    return StackInput(
        values=values,
        problems=tuple(problems),
        warnings=given.warnings,
        key_lines=_located_keys(given.key_lines, lines_of),
        app_paths=app_paths,
    )


def over_bound_message(size: int, limit: int) -> str:
    """Why a file of ``size`` bytes is not read when ``limit`` bytes were left for it: the apps files
    together may hold at most :data:`MAX_INPUT_BYTES`, as a stack file may."""
    if limit >= MAX_INPUT_BYTES:
        return too_large_message(size, "an apps file")
    return (
        f"is {size_text(size)}, more than the {size_text(limit)} left: the apps files together may be at "
        f"most {size_text(MAX_INPUT_BYTES)}"
    )


def _read_entries(
    read_file: AppFileText, where: str
) -> tuple[list[Any] | None, list[ConfigProblem], Mapping[Keys, int]]:
    """The app entries of one file, its problems (at ``where[i]...`` for a place in it, else at the file),
    and the line of each place in it."""
    name = read_file.source
    try:
        data, issues, lines = read_yaml(read_file.text, name)
    except ConfigError as exc:
        return (
            None,
            [ConfigProblem(where, f"{problem.path}: {problem.message}") for problem in exc.problems],
            {},
        )
    problems = [
        ConfigProblem(_place(where, issue.keys), f"{issue.message} ({name}:{issue.line}:{issue.column})")
        for issue in issues
    ]
    if data is None:
        problems.append(ConfigProblem(where, f"{shown(name)} is empty ({WHAT_A_FILE_HOLDS}; [] for none)"))
        return None, problems, lines
    if not isinstance(data, list):
        kind = "map" if isinstance(data, dict) else type(data).__name__
        problems.append(ConfigProblem(where, f"{shown(name)} holds a {kind} ({WHAT_A_FILE_HOLDS})"))
        return None, problems, lines
    return data, problems, lines


def _place(where: str, keys: Keys) -> str:
    """The config key path of a place in a file listed at ``where``: ``flyte-apps:appFiles[0][3].name``."""
    path = where
    for part in keys:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _located_keys(
    stack_lines: Mapping[str, tuple[str, int]], files: list[tuple[str, str, Mapping[Keys, int]]]
) -> Mapping[str, tuple[str, int]]:
    """The stack files' key lines and every place of every apps file, worked out when first asked for."""

    def make() -> dict[str, tuple[str, int]]:
        merged = dict(stack_lines)
        for where, name, lines in files:
            merged.update({_place(where, keys): (name, line) for keys, line in lines.items()})
        return merged

    return LaterMap(make)
