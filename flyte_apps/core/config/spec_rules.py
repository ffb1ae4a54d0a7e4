"""Rules over the keys that only Flyte's app spec carries (``profile``, ``links``, ``inputs``): what
Flyte's proto rules would refuse, reported at the config key instead of the spec's field, and the
warning for an ``app`` input that names no app of the stack.

Flyte's app service stores these fields and does nothing else with them (reference (f)); Flyte's UI
and SDK read them. The proto's own ``buf.validate`` rules still run over the whole spec afterwards
(``flyte_apps.core.spec.validate_app``); these come first so each problem names its key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from flyte_apps.core.bounds import bounded, shown
from flyte_apps.core.config.models import AppConfig, AppRef, ArtifactRef, InputItem, Link, Profile
from flyte_apps.core.config.names import FLYTE_APP_NAME
from flyte_apps.core.errors import ConfigProblem

MAX_PROFILE_DESCRIPTION: Final = 100  # flyteidl2.app.Profile.short_description
INPUT_KINDS: Final = ("value", "app", "artifact")
"""The keys of an input, one of which it must have: ``Input``'s ``value`` oneof."""
ARTIFACT_TEXT: Final = re.compile(r"[A-Za-z0-9._-]*")  # ArtifactKey.name, ArtifactVersionId.version
MAX_ARTIFACT_NAME: Final = 255
MAX_ARTIFACT_VERSION: Final = 255
MAX_ARTIFACT_PROJECT: Final = 64
MAX_ARTIFACT_DOMAIN: Final = 64
MAX_ARTIFACT_ORG: Final = 63


def spec_field_problems(fields: Mapping[str, Any], path: str) -> list[ConfigProblem]:
    """The rules of ``profile``, ``links`` and ``inputs`` (by field name), for those present."""
    found: list[ConfigProblem] = []
    profile = fields.get("profile")
    if isinstance(profile, Profile) and len(profile.description) > MAX_PROFILE_DESCRIPTION:
        found.append(
            ConfigProblem(
                f"{path}.profile.description",
                f"is {len(profile.description):,} characters; Flyte's app spec allows at most "
                f"{MAX_PROFILE_DESCRIPTION} (Profile.short_description)",
            )
        )
    links = fields.get("links")
    if isinstance(links, tuple):
        found.extend(link_problems(links, f"{path}.links"))
    inputs = fields.get("inputs")
    if isinstance(inputs, tuple):
        found.extend(input_problems(inputs, f"{path}.inputs"))
    return found


def link_problems(links: Sequence[Link], path: str) -> list[ConfigProblem]:
    return [
        ConfigProblem(f"{path}[{index}].path", "must not be empty (Flyte's Link.path)")
        for index, link in enumerate(links)
        if not link.path
    ]


def input_problems(inputs: Sequence[InputItem], path: str) -> list[ConfigProblem]:
    """Each input has a name (unique) and exactly one of ``value``, ``app`` or ``artifact``."""
    found: list[ConfigProblem] = []
    seen: dict[str, str] = {}
    for index, item in enumerate(inputs):
        where = f"{path}[{index}]"
        if not item.name:
            found.append(ConfigProblem(f"{where}.name", "must not be empty (Flyte's Input.name)"))
        elif item.name in seen:
            found.append(
                ConfigProblem(
                    f"{where}.name", f"duplicate input {shown(item.name)} (also at {seen[item.name]})"
                )
            )
        else:
            seen[item.name] = where
        given = [kind for kind in INPUT_KINDS if getattr(item, kind) is not None]
        if len(given) != 1:
            got = " and ".join(given) if given else "none"
            found.append(ConfigProblem(where, f"needs exactly one of value, app or artifact (got {got})"))
        if item.value is not None and not item.value:
            found.append(ConfigProblem(f"{where}.value", "must not be empty (Flyte's Input.string_value)"))
        if item.app is not None:
            found.extend(app_ref_problems(item.app, f"{where}.app"))
        if item.artifact is not None:
            found.extend(artifact_problems(item.artifact, f"{where}.artifact"))
    return found


def app_ref_problems(ref: AppRef, path: str) -> list[ConfigProblem]:
    found = [
        ConfigProblem(f"{path}.{key}", "must not be empty (Flyte's app Identifier)")
        for key, value in (("project", ref.project), ("domain", ref.domain))
        if not value
    ]
    if not FLYTE_APP_NAME.fullmatch(ref.name):
        found.append(
            ConfigProblem(
                f"{path}.name",
                f"{shown(ref.name)} is not a valid Flyte app name: 1-30 letters, digits or '-', "
                "starting and ending with a letter or digit",
            )
        )
    return found


def artifact_problems(ref: ArtifactRef, path: str) -> list[ConfigProblem]:
    """Flyte's ``ArtifactVersionId`` rules: names and versions of letters, digits, ``.``, ``_``, ``-``."""
    checks: list[tuple[str, str, int, bool]] = [(f"{path}.version", ref.version, MAX_ARTIFACT_VERSION, True)]
    if ref.key is not None:
        key = ref.key
        checks += [
            (f"{path}.key.name", key.name, MAX_ARTIFACT_NAME, True),
            (f"{path}.key.project", key.project, MAX_ARTIFACT_PROJECT, False),
            (f"{path}.key.domain", key.domain, MAX_ARTIFACT_DOMAIN, False),
            (f"{path}.key.org", key.org, MAX_ARTIFACT_ORG, False),
        ]
    found: list[ConfigProblem] = []
    for where, value, limit, pattern in checks:
        if len(value) > limit:
            found.append(ConfigProblem(where, f"is {len(value):,} characters; Flyte allows at most {limit}"))
        elif pattern and not ARTIFACT_TEXT.fullmatch(value):
            found.append(
                ConfigProblem(where, f"{shown(value)} may hold only letters, digits, '.', '_' and '-'")
            )
    return found


def input_app_warnings(apps: Iterable[AppConfig]) -> list[str]:
    """``app`` inputs naming no app of this stack: a warning, not an error (it may live in another
    stack; Flyte's app service does not resolve inputs at all)."""
    apps = list(apps)
    known = {(app.id.project, app.id.domain, app.id.name): app.id.org for app in apps}
    found: list[str] = []
    for app in apps:
        for index, item in enumerate(app.input.inputs or ()):
            ref = item.app
            if ref is None:
                continue
            org = known.get((ref.project, ref.domain, ref.name))
            if org is None or (ref.org and ref.org != org):
                target = f"{ref.project}/{ref.domain}/{ref.name}" + (
                    f" (org {shown(ref.org)})" if ref.org else ""
                )
                found.append(
                    bounded(
                        f"{app.path}.inputs[{index}].app: app {target} is not in this stack "
                        "(fine if another stack deploys it)"
                    )
                )
    return found
