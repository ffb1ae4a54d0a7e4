"""Stack config the way the Pulumi CLI hands it to the program, from the text of ``Pulumi.yaml`` and
``Pulumi.<stack>.yaml`` (reading the files from disk is the caller's job: ``flyte_apps.cli.stackfile``).

Strict on purpose: a stack file that would deploy nothing by mistake, or that Pulumi reads
differently than a reviewer does, is an error. Every problem of a file is collected, located by its
config key (``flyte-apps:apps[0].container.image``) and line, and reported together with the config's
own problems; only a YAML syntax error stops early.

``Pulumi.yaml`` may declare config defaults (``config: {flyte-apps:project: {default: x}}`` or the
short, project-local form ``project: x``); ``Pulumi.<stack>.yaml`` holds the stack's values under
``config:``.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from flyte_apps.core.bounds import cost_problems, shown
from flyte_apps.core.config.keys import APP_KEY_POD, KEY_APP_FILES, KEY_APPS
from flyte_apps.core.config.kit import unknown_key_message
from flyte_apps.core.constants import PROJECT_NAME
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.yamlin import Keys, LaterMap, YamlIssue, read_yaml

PROJECT_FILE: Final = "Pulumi.yaml"
KEY_CONFIG: Final = "config"
KEY_ENVIRONMENT: Final = "environment"
STACK_FILE_KEYS: Final = (KEY_CONFIG, "secretsprovider", "encryptedkey", "encryptionsalt", KEY_ENVIRONMENT)
"""Every top-level key Pulumi's stack files have."""
LEGACY_CONFIG_MODULE: Final = "config"
LEGACY_KEY_PARTS: Final = 3
"""``<namespace>:config:<name>``, the old form Pulumi still reads as ``<namespace>:<name>``."""
PROGRAM_CONFIG_VARIABLE: Final = "PULUMI_CONFIG"
"""The environment variable in which the Python language host hands the program the stack's whole
config, one JSON map (the SDK reads it from nowhere else: ``pulumi/runtime/config.py``)."""
MAX_ENVIRONMENT_STRING_BYTES: Final = 32 * 4096
"""Linux's cap on one environment string, ``NAME=value`` and its NUL (``MAX_ARG_STRLEN``: 32 pages of
4 KiB); over it, starting the program fails with E2BIG ("argument list too long")."""
_GO_ESCAPED: Final = re.compile("[<>&\u2028\u2029]")
"""Characters Go's JSON encoder writes as six-byte ``\\u`` escapes and Python's does not."""
_KIB: Final = 1024
_OUR_NAMESPACE_LOOKALIKE: Final = 0.8
"""How close (difflib ratio, separators and case ignored) a namespace must be to ``flyte-apps`` to be
taken for a misspelling of it rather than another Pulumi package's namespace."""


@dataclass(frozen=True)
class StackInput:
    """Config values by full key (``namespace:key``), with what reading the files found."""

    values: dict[str, Any] = field(default_factory=dict)
    problems: tuple[ConfigProblem, ...] = ()
    warnings: tuple[str, ...] = ()
    key_lines: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    """Config key path (``flyte-apps:apps[1].container.env.TOKEN``) -> (file, line) where it is written
    (worked out when first looked up: only a finding to locate needs it)."""
    app_paths: tuple[str, ...] | None = None
    """The config key path of each app of ``flyte-apps:apps``, once apps files were appended to it
    (``flyte-apps:appFiles[0][3]``: ``flyte_apps.core.appfiles``); None: ``flyte-apps:apps[i]``."""

    def where(self, key: str) -> tuple[str, int] | None:
        """The file and line of ``key``, else of the closest enclosing key that was written."""
        path = key
        while path:
            found = self.key_lines.get(path)
            if found is not None:
                return found
            cut = max(path.rfind("."), path.rfind("["))
            if cut <= 0:
                return None
            path = path[:cut]
        return None


def stack_file_name(stack: str) -> str:
    return f"Pulumi.{stack}.yaml"


def parse_project_file(text: str, source: str) -> StackInput:
    """The config defaults ``Pulumi.yaml`` declares."""
    data, issues, lines = read_yaml(text, source)
    problems = [_issue_problem(issue, source) for issue in issues]
    if data is None:
        return StackInput(problems=tuple(problems))
    if not isinstance(data, dict):
        return StackInput(problems=(*problems, ConfigProblem(source, "must be a YAML map")))
    declared = data.get(KEY_CONFIG) or {}
    if not isinstance(declared, dict):
        problems.append(ConfigProblem(f"{source}: {KEY_CONFIG}", "must be a map of config keys"))
        declared = {}
    values: dict[str, Any] = {}
    for key, value in declared.items():
        if isinstance(value, dict) and "default" not in value and "value" not in value:
            continue  # a declaration without a default: the stack file must set it
        chosen = value.get("default", value.get("value")) if isinstance(value, dict) else value
        values[full_key(str(key))] = chosen
    key_lines = LaterMap(
        lambda: {key_path(keys): (source, line) for keys, line in lines.items() if _config_key(keys, 2)}
    )
    return StackInput(values=values, problems=tuple(problems), key_lines=key_lines)


def parse_stack_file(text: str, source: str) -> StackInput:
    """The config values of a stack file, with every problem of the file."""
    data, issues, lines = read_yaml(text, source)
    problems = [_issue_problem(issue, source) for issue in issues]
    warnings: list[str] = []
    if data is None:
        return StackInput(problems=tuple(problems))
    if not isinstance(data, dict):
        kind = type(data).__name__
        return StackInput(problems=(*problems, ConfigProblem(source, f"must be a YAML map, not a {kind}")))
    for key in data:
        if key in STACK_FILE_KEYS or not isinstance(key, str):
            continue
        if ":" in key:
            message = f"config keys belong under '{KEY_CONFIG}:' (a stack file's keys are {_listed()})"
        else:
            message = unknown_key_message(key, STACK_FILE_KEYS)
        problems.append(ConfigProblem(f"{source}: {key}", message))
    if KEY_ENVIRONMENT in data:
        warnings.append(
            f"{source}: '{KEY_ENVIRONMENT}' imports Pulumi ESC environments; their values are not "
            "visible offline, so this run checks only the values written in the file"
        )
    config = data.get(KEY_CONFIG)
    if config is None:
        return StackInput(problems=tuple(problems), warnings=tuple(warnings))
    if not isinstance(config, dict):
        problems.append(ConfigProblem(f"{source}: {KEY_CONFIG}", "must be a map of config keys"))
        return StackInput(problems=tuple(problems), warnings=tuple(warnings))
    values: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in config.items():
        if not isinstance(key, str):
            continue  # reported by read_yaml: keys must be strings
        wrong = key_problem(key) or namespace_problem(key)
        if wrong:
            problems.append(ConfigProblem(key, f"{wrong} ({source})"))
            continue
        normal = full_key(key)
        if normal in spelled:
            message = (
                f"{shown(spelled[normal])} and {shown(key)} are the same key to Pulumi ({shown(normal)}), "
                f"and which one it keeps is not defined ({source})"
            )
            problems.append(ConfigProblem(normal, message))
            continue
        spelled[normal] = key
        values[normal] = value
    too_costly = cost_problems(values, f"{PROJECT_NAME}:{KEY_APPS}", APP_KEY_POD, where=source)
    if too_costly:
        # Refused before anything else looks at the file: locating even one problem in it walks it all.
        raise ConfigError(too_costly)
    key_lines = LaterMap(
        lambda: {key_path(keys): (source, line) for keys, line in lines.items() if _config_key(keys)}
    )
    return StackInput(values=values, problems=tuple(problems), warnings=tuple(warnings), key_lines=key_lines)


def program_config_bytes(values: Mapping[str, Any]) -> int:
    """The size of ``PROGRAM_CONFIG_VARIABLE=...`` for these config values: a JSON map from each full
    key to its value as a string (a map or a list as compact JSON text inside it), as the engine and the
    e2e suite's language host write it (checked at the boundary by running them). A secret counts at its
    written (encrypted) length, a little over its own."""
    as_strings = {
        key: value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        for key, value in values.items()
    }
    text = json.dumps(as_strings, separators=(",", ":"), ensure_ascii=False)
    escapes = len(_GO_ESCAPED.findall(text))
    return len(PROGRAM_CONFIG_VARIABLE) + 1 + len(text.encode()) + 5 * escapes + 1


def program_config_problem(values: Mapping[str, Any]) -> ConfigProblem | None:
    """A problem at ``flyte-apps:apps`` when the program could not be started with this config on
    Linux: Pulumi puts all of it into one environment variable."""
    size = program_config_bytes(values)
    if size <= MAX_ENVIRONMENT_STRING_BYTES:
        return None
    message = (
        f"the stack's config is {size / _KIB:.0f} KiB as Pulumi hands it to the program, in one "
        f"environment variable ({PROGRAM_CONFIG_VARIABLE}); Linux allows "
        f"{MAX_ENVIRONMENT_STRING_BYTES // _KIB} KiB for one, so `pulumi preview` and `pulumi up` would "
        'fail to start the program ("argument list too long"): move apps into files listed under '
        f"{PROJECT_NAME}:{KEY_APP_FILES} (read from disk, not handed over), or split them over more stacks"
    )
    return ConfigProblem(f"{PROJECT_NAME}:{KEY_APPS}", message)


def merge_inputs(inputs: Sequence[StackInput]) -> StackInput:
    """Later inputs override earlier ones key by key (the stack file over the project's defaults)."""
    values: dict[str, Any] = {}
    for given in inputs:
        values.update(given.values)

    each_key_lines = tuple(given.key_lines for given in inputs)

    def key_lines() -> dict[str, tuple[str, int]]:
        merged: dict[str, tuple[str, int]] = {}
        for lines in each_key_lines:
            merged.update(lines)
        return merged

    return StackInput(
        values=values,
        problems=tuple(problem for given in inputs for problem in given.problems),
        warnings=tuple(warning for given in inputs for warning in given.warnings),
        key_lines=LaterMap(key_lines),
    )


def located(problems: Sequence[ConfigProblem], given: StackInput) -> list[ConfigProblem]:
    """``problems`` with the file and line of their config key in front of the key (``Pulumi.dev.yaml:42
    flyte-apps:apps[1].name``), for every key the files wrote (or the closest enclosing one)."""
    found: list[ConfigProblem] = []
    for problem in problems:
        where = given.where(problem.path) if problem.path.startswith(f"{PROJECT_NAME}:") else None
        found.append(
            problem
            if where is None
            else ConfigProblem(problem.path, problem.message, file=where[0], line=where[1])
        )
    return found


def full_key(key: str) -> str:
    """A stack file's config key as Pulumi reads it (``ParseKey``, sdk/go/common/resource/config/key.go):
    ``project`` -> ``flyte-apps:project`` (a key without a namespace is the project's own), and the
    legacy ``flyte-apps:config:apps`` -> ``flyte-apps:apps``. A key Pulumi cannot parse is returned
    as it is (``key_problem`` names it)."""
    parts = key.split(":")
    if len(parts) == 1:
        return f"{PROJECT_NAME}:{key}"
    if len(parts) == LEGACY_KEY_PARTS and parts[1] == LEGACY_CONFIG_MODULE:
        return f"{parts[0]}:{parts[2]}"
    return key


def key_problem(key: str) -> str | None:
    """Why Pulumi refuses a config key: more than one colon, but for the legacy ``<ns>:config:<name>``."""
    parts = key.split(":")
    if len(parts) <= 2 or (len(parts) == LEGACY_KEY_PARTS and parts[1] == LEGACY_CONFIG_MODULE):
        return None
    return (
        f"{shown(key)} is not a config key Pulumi reads (it refuses it): keys are <namespace>:<name>, "
        f"like {shown(f'{parts[0]}:{parts[1]}')}"
    )


def namespace_problem(key: str) -> str | None:
    """A config key whose namespace looks meant for ``flyte-apps`` but is not (``flyteapps:apps``):
    Pulumi would hand it to nobody, and the apps under it would silently not deploy."""
    namespace, separator, rest = key.partition(":")
    if not separator or namespace == PROJECT_NAME:
        return None
    if len(namespace) > 2 * len(PROJECT_NAME):
        return None  # far longer than ours: not a misspelling of it (and difflib is quadratic)
    normal = re.sub(r"[-_.\s]", "", namespace.lower())
    target = PROJECT_NAME.replace("-", "")
    if difflib.SequenceMatcher(None, normal, target).ratio() < _OUR_NAMESPACE_LOOKALIKE:
        return None
    return f"unknown namespace {shown(namespace)}; did you mean {shown(f'{PROJECT_NAME}:{rest}')}?"


def key_path(keys: Keys) -> str:
    """A config key path (``flyte-apps:apps[0].name``) for a place under ``config:``."""
    path = full_key(str(keys[1]))
    for part in keys[2:]:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _config_key(keys: Keys, depth: int | None = None) -> bool:
    """A place under ``config:`` with a string config key (at most ``depth`` levels deep)."""
    return (
        len(keys) >= 2
        and keys[0] == KEY_CONFIG
        and isinstance(keys[1], str)
        and (depth is None or len(keys) <= depth)
    )


def _issue_problem(issue: YamlIssue, source: str) -> ConfigProblem:
    where = f"{source}:{issue.line}:{issue.column}"
    if len(issue.keys) >= 2 and issue.keys[0] == KEY_CONFIG:
        return ConfigProblem(key_path(issue.keys), f"{issue.message} ({where})")
    return ConfigProblem(where, issue.message)


def _listed() -> str:
    return ", ".join(STACK_FILE_KEYS)
