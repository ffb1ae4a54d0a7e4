"""Where in the stack config a policy violation was written.

A rule speaks of a rendered object's field (``spec.template.spec.containers[0].env[3] API_TOKEN``),
because that is what the policy pack sees under ``pulumi preview``. A reviewer edits the stack file,
so ``flyte-apps check`` turns the field back into the config key it came from:
``flyte-apps:apps[1].container.env.API_TOKEN``, or ``flyte-apps:platform.defaultEnvVars.API_TOKEN``
for a value every app inherits (reported once, not once per app). What cannot be traced further is
located at the app (or section) that produced the object.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from flyte_apps.core import constants as c
from flyte_apps.core.config.accelerators import gpu_resource_name
from flyte_apps.core.config.keys import KEY_APPS, KEY_KNATIVE, KEY_MANAGER, KEY_PLATFORM, PREFIX
from flyte_apps.core.config.payload import build_payload
from flyte_apps.core.config.pod_paths import KeyPaths, Place
from flyte_apps.core.objects import RenderedObject
from flyte_apps.core.plan import AppPlan, StackPlan

_FIELD: Final = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*|\[\d+\]|\['[^']*'\]|\.)+")
_PART: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\['([^']*)'\]")
_NAME_AFTER_FIELD: Final = re.compile(r"^\s+([-._A-Za-z0-9]+)\b")
_POD: Final = ("spec", "template", "spec")
_TEMPLATE_ANNOTATIONS: Final = ("spec", "template", "metadata", "annotations")
_AUTOSCALING_KEYS: Final = {
    c.ANNOTATION_MIN_SCALE: "autoscaling.minReplicas",
    c.ANNOTATION_MAX_SCALE: "autoscaling.maxReplicas",
    c.ANNOTATION_METRIC: "autoscaling.metric",
    c.ANNOTATION_TARGET: "autoscaling.target",
    c.ANNOTATION_WINDOW: "autoscaling.scaledownPeriod",
    c.ANNOTATION_INITIAL_SCALE: "stopped",
}


def field_place(message: str) -> tuple[Place, str]:
    """The field a rule's message starts with, as a place, and the rest of the message."""
    match = _FIELD.match(message)
    if match is None:
        return (), message
    place: list[str | int] = []
    for name, index, quoted in _PART.findall(match.group(0)):
        place.append(int(index) if index else (quoted or name))
    return tuple(place), message[match.end() :]


class Locator:
    """Config keys for the objects of one stack plan."""

    def __init__(self, plan: StackPlan) -> None:
        self.plan = plan
        self._apps: dict[tuple[str, str], AppPlan] = {
            (app.namespace, app.kservice_name): app for app in plan.apps
        }

    def key_of(self, obj: RenderedObject | None, message: str) -> str:
        """The config key the violation ``message`` about ``obj`` should be fixed at."""
        if obj is None:
            return f"{PREFIX}{KEY_APPS}"
        app = self._apps.get((obj.namespace, obj.name)) if obj.kind == c.KSERVICE_KIND else None
        if app is not None:
            return self._in_app(app, message)
        place, _ = field_place(message)
        if place[:2] == ("internalApps", "defaultEnvVars") or obj.kind == "Namespace":
            return self._platform_env(message) if "defaultEnvVars" in place else f"{PREFIX}{KEY_PLATFORM}"
        if obj.patch:
            return f"{PREFIX}{KEY_KNATIVE}"
        return f"{PREFIX}{KEY_MANAGER}"

    def _in_app(self, app: AppPlan, message: str) -> str:
        config = app.config
        place, _ = field_place(message)
        annotations = len(_TEMPLATE_ANNOTATIONS)
        if place[:annotations] == _TEMPLATE_ANNOTATIONS and len(place) > annotations:
            key = _AUTOSCALING_KEYS.get(str(place[annotations]))
            return f"{config.path}.{key}" if key else config.path
        if place[: len(_POD)] != _POD:
            return config.path
        pod = place[len(_POD) :]
        if pod[:1] == ("timeoutSeconds",):
            return f"{config.path}.timeouts.request"
        if pod[:1] == ("serviceAccountName",):
            return f"{config.path}.serviceAccount"
        if pod[:3] == ("containers", 0, "env") and len(pod) >= 4 and isinstance(pod[3], int):
            return self._env(app, pod[3])
        payload = build_payload(
            config.input,
            config.env,
            gpu_resource_name(config.input.accelerator, self.plan.platform.settings),
            config.path,
        )
        beyond = pod[:1] == ("containers",) and len(pod) >= 2 and isinstance(pod[1], int)
        if beyond and int(pod[1]) >= len(payload.origins):
            return config.path
        return KeyPaths(payload, config.path)(pod)

    def _env(self, app: AppPlan, index: int) -> str:
        """``containers[0].env[i]`` is the platform's defaults, then the app's own, then Flyte's."""
        defaults = self.plan.platform.default_env
        if index < len(defaults):
            return self._platform_env_named(defaults[index].name)
        own = index - len(defaults)
        config = app.config
        if own >= len(config.env):
            return config.path  # one of Flyte's injected variables
        name = config.env[own].name
        raw = config.input.container.env if config.input.container is not None else None
        return (
            f"{config.path}.container.env.{name}"
            if isinstance(raw, Mapping)
            else f"{config.path}.container.env"
        )

    def _platform_env(self, message: str) -> str:
        _, rest = field_place(message)
        named = _NAME_AFTER_FIELD.match(rest)
        return self._platform_env_named(named.group(1)) if named else f"{PREFIX}{KEY_PLATFORM}.defaultEnvVars"

    def _platform_env_named(self, name: str) -> str:
        raw = self.plan.platform.settings.default_env_vars
        suffix = f".{name}" if isinstance(raw, Mapping) else ""
        return f"{PREFIX}{KEY_PLATFORM}.defaultEnvVars{suffix}"


def unique(keys_and_messages: Sequence[tuple[str, str, str]]) -> list[int]:
    """Indexes of the first of each (rule, key, message) triple: a platform value every app inherits
    is one violation, not one per app."""
    seen: set[tuple[str, str, str]] = set()
    keep: list[int] = []
    for index, triple in enumerate(keys_and_messages):
        if triple not in seen:
            seen.add(triple)
            keep.append(index)
    return keep
