"""Adding apps to a stack file in place: a round-trip YAML edit (``ruamel.yaml``) that keeps the file's
comments, key order and other apps, written all or nothing (a temp file beside it, then a rename; a
symlinked stack file stays a link, its target replaced).

The new entries are written as ``flyte_apps.core.yamlout`` writes every YAML of this project (strings
any common reader would misread are quoted), then read back by the round-trip reader, which keeps
that quoting in the file."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from flyte_apps.cli.files import write_atomically
from flyte_apps.cli.stackfile import read_stack_text
from flyte_apps.core.config.keys import KEY_APPS, KEY_PLATFORM, PREFIX
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.yamlout import dump_yaml

CONFIG_KEY: Final = "config"
ADOPT_NAMESPACE_KEY: Final = "adoptNamespace"
_INDENT: Final = {"mapping": 2, "sequence": 4, "offset": 2}
"""The layout of ``Pulumi.<stack>.yaml`` files (``- name:`` indented under ``flyte-apps:apps``)."""


def _round_trip() -> YAML:
    reader = YAML(typ="rt")
    reader.preserve_quotes = True
    reader.width = 4096
    reader.indent(**_INDENT)
    return reader


def entries_yaml(entries: Sequence[dict[str, Any]]) -> str:
    """The entries as the YAML list they are added as (what ``--dry-run`` prints)."""
    return dump_yaml(list(entries))


def add_apps(path: Path, entries: Sequence[dict[str, Any]], *, adopt_namespace: bool) -> None:
    """Append ``entries`` to the file's ``flyte-apps:apps`` (and set the platform's ``adoptNamespace``
    when asked), keeping everything else as it is; the file is replaced in one rename."""
    reader = _round_trip()
    text = read_stack_text(path)
    document = reader.load(text)
    if not isinstance(document, CommentedMap):
        raise ConfigError([ConfigProblem(str(path), "is not a YAML mapping")])
    config = document.get(CONFIG_KEY)
    if config is None:
        config = document[CONFIG_KEY] = CommentedMap()
    if not isinstance(config, CommentedMap):
        raise ConfigError([ConfigProblem(f"{path}: {CONFIG_KEY}", "is not a mapping")])
    apps = config.get(PREFIX + KEY_APPS)
    if apps is None:
        apps = config[PREFIX + KEY_APPS] = CommentedSeq()
    if not isinstance(apps, CommentedSeq):
        raise ConfigError([ConfigProblem(f"{path}: {PREFIX}{KEY_APPS}", "is not a list")])
    added = reader.load(entries_yaml(entries))
    apps.extend(added)
    if adopt_namespace:
        platform = config.get(PREFIX + KEY_PLATFORM)
        if platform is None:
            platform = config[PREFIX + KEY_PLATFORM] = CommentedMap()
        if not isinstance(platform, CommentedMap):
            raise ConfigError([ConfigProblem(f"{path}: {PREFIX}{KEY_PLATFORM}", "is not a mapping")])
        platform[ADOPT_NAMESPACE_KEY] = True
    out = io.StringIO()
    reader.dump(document, out)
    write_atomically(path, out.getvalue())
