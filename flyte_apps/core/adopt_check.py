"""Pure: how a live KService compares with what the stack renders for the same app.

``exact``: the rendered ``flyte.org/spec`` is the live one byte for byte and every field the program
sets on the KService (name, namespace, labels, annotations, the revision template) has the live
value, so Pulumi's ``import`` option adopts it without touching it. ``changes``: the differences,
each named. ``refused``: the stack's platform settings (default env vars, default request timeout,
suffix template) are not the ones the live object was rendered with, naming the setting."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import shown
from flyte_apps.core.config.keys import KEY_PLATFORM, PREFIX
from flyte_apps.core.config.models import PlatformConfig
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.fields import differences, dig
from flyte_apps.core.objects import Manifest
from flyte_apps.core.spec import compare_specs

FLYTE_ENV_COUNT: Final = len(c.INJECTED_ENV_VARS)
"""Flyte's variables close ``containers[0].env``: after the platform's and the app's own."""
PROGRAM_PATHS: Final = (("metadata", "name"), ("metadata", "namespace"), ("spec", "template"))
"""Fields the program sets wholesale; labels and annotations are compared key by key."""
_ENV_PATH: Final = "spec.template.spec.containers[0].env"
ADOPTION_ONLY: Final = frozenset({c.ANNOTATION_SPEC, c.ANNOTATION_PATCH_FORCE})
"""Annotations not compared here: the spec (compared as a message, ``_spec_changes``) and the
server-side-apply force the adopting ``pulumi up`` adds (a KService Flyte made never has it)."""


@dataclass
class Comparison:
    """Differences (``changes``) and platform mismatches (``refusals``) of one app."""

    changes: list[str] = field(default_factory=list)
    refusals: list[ConfigProblem] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return not self.changes and not self.refusals


def compare_kservice(
    live: Mapping[str, Any], rendered: Manifest, platform: PlatformConfig, *, app_timeout: bool, path: str
) -> Comparison:
    """Compare the rendered KService with the live one (``app_timeout``: the spec sets its own)."""
    result = Comparison()
    result.refusals.extend(_platform_refusals(live, rendered, platform, app_timeout=app_timeout, path=path))
    live_meta = live.get("metadata") or {}
    ours_meta = rendered["metadata"]
    result.changes.extend(_spec_changes(live_meta.get("annotations") or {}, ours_meta["annotations"]))
    for key in ("labels", "annotations"):
        theirs = live_meta.get(key) or {}
        for name, value in ours_meta[key].items():
            if name not in ADOPTION_ONLY and theirs.get(name) != value:
                result.changes.append(
                    f"metadata.{key}[{name}]: live {shown(theirs.get(name))}, ours {shown(value)}"
                )
    for keys in PROGRAM_PATHS:
        result.changes.extend(
            f"{found.path}: live {shown(found.live)}, ours {shown(found.ours)}"
            for found in differences(dig(live, keys), dig(rendered, keys), ".".join(keys))
        )
    if result.refusals:  # what a platform setting explains is not listed twice
        result.changes = [change for change in result.changes if not change.startswith(_ENV_PATH)]
    return result


def _spec_changes(live: Mapping[str, Any], ours: Mapping[str, Any]) -> list[str]:
    found = compare_specs(live.get(c.ANNOTATION_SPEC), ours[c.ANNOTATION_SPEC])
    if found.same_bytes:
        return []
    if found.reason:
        return [f"{c.ANNOTATION_SPEC}: {found.reason}"]
    return [f"{c.ANNOTATION_SPEC}: differs in {', '.join(found.fields) or 'its bytes'}"]


def _platform_refusals(
    live: Mapping[str, Any], rendered: Manifest, platform: PlatformConfig, *, app_timeout: bool, path: str
) -> list[ConfigProblem]:
    found: list[ConfigProblem] = []
    settings = PREFIX + KEY_PLATFORM
    live_env = _env(live)
    ours_env = _env(rendered)
    if len(live_env) < FLYTE_ENV_COUNT or live_env[-FLYTE_ENV_COUNT:] != ours_env[-FLYTE_ENV_COUNT:]:
        found.append(
            ConfigProblem(
                path,
                f"Flyte's variables in {_ENV_PATH} are not the ones this stack renders: set "
                f"{settings}.namespacedNameSuffixTemplate (and namespace) to what the cluster's Flyte uses",
            )
        )
    own = len(ours_env) - len(platform.default_env) - FLYTE_ENV_COUNT
    live_defaults = live_env[: max(0, len(live_env) - own - FLYTE_ENV_COUNT)]
    ours_defaults = ours_env[: len(platform.default_env)]
    if sorted(map(_pair, live_defaults)) != sorted(map(_pair, ours_defaults)):
        found.append(
            ConfigProblem(
                path,
                f"the live object was rendered with other default env vars "
                f"({', '.join(str(var.get('name')) for var in live_defaults) or 'none'}): set "
                f"{settings}.defaultEnvVars to what the cluster's Flyte uses",
            )
        )
    if not app_timeout:
        live_timeout = dig(live, ("spec", "template", "spec", "timeoutSeconds"))
        ours_timeout = dig(rendered, ("spec", "template", "spec", "timeoutSeconds"))
        if live_timeout != ours_timeout:
            found.append(
                ConfigProblem(
                    path,
                    f"the live timeoutSeconds is {shown(live_timeout)}, this stack's default renders "
                    f"{shown(ours_timeout)}: set {settings}.defaultRequestTimeout to what the cluster's "
                    "Flyte uses",
                )
            )
    return found


def _pair(var: Mapping[str, Any]) -> tuple[str, str]:
    return str(var.get("name")), str(var.get("value"))


def _env(manifest: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    containers = dig(manifest, ("spec", "template", "spec", "containers"))
    if not isinstance(containers, list) or not containers or not isinstance(containers[0], dict):
        return []
    env = containers[0].get("env")
    return [var for var in env if isinstance(var, dict)] if isinstance(env, list) else []
