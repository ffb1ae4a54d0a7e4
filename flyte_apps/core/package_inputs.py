"""The component package's inputs, planned by the same core as a stack file.

A ``FlyteApp``'s inputs are an app entry plus the platform settings; a ``FlyteApps``' are a whole stack
file's keys. Both become the stack config the stack-config program reads (``flyte-apps:platform``,
``flyte-apps:apps``, ...) and go through ``plan_stack``: the same problems, the same objects, byte for
byte. Problems are reported by input path (``container.image``, ``apps[1].name``), not by stack key.

Values another resource computes are unknown during a preview. Each is replaced by a placeholder for the
check, and problems at or under an unknown path are dropped: known values are checked at preview, the
rest at ``up``, where every value is known. A secret anywhere in an app is refused: everything an app
holds is written in plain text into its KService (the spec annotation, the pod template).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from flyte_apps.core.config.keys import KEY_APPS, KEY_DOMAIN, KEY_KNATIVE, KEY_PLATFORM, KEY_PROJECT, PREFIX
from flyte_apps.core.config.load import is_within
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.plan import StackPlan, plan_stack

UNKNOWN_PLACEHOLDER: Final = "unknown"
"""What an unknown value is checked as: a valid name and image, so that only the known values around it
can fail (a problem at the unknown value's own path is dropped)."""
SECRET_MESSAGE: Final = (
    "is a secret: the app's KService would hold it in plain text (in its spec annotation and pod "
    "template); give it to the app as a Flyte secret (`secrets`) instead"
)
STACK_KEYS: Final = (KEY_PLATFORM, KEY_PROJECT, KEY_DOMAIN, KEY_KNATIVE, KEY_APPS)
APP_PATH: Final = f"{PREFIX}{KEY_APPS}[0]"


@dataclass(frozen=True)
class Inputs:
    """A component's inputs as plain values, with where the unknown and the secret ones are.

    Paths are input paths (``container.env[0].value``); integral numbers are ints (every language
    sends numbers as doubles; a stack file's ``8080`` is an int)."""

    values: Mapping[str, Any]
    """Unknown values already replaced by ``UNKNOWN_PLACEHOLDER``."""
    unknown: tuple[str, ...] = ()
    secret: tuple[str, ...] = ()


@dataclass(frozen=True)
class PackagePlan:
    """The plan of a component's inputs; ``plan`` is None while some input is unknown (a preview)."""

    plan: StackPlan | None
    unknown: tuple[str, ...] = field(default=())


def plan_app_inputs(inputs: Inputs, *, app_keys: Sequence[str]) -> PackagePlan:
    """Plan one ``FlyteApp``: its app keys as the only app of a stack, with its ``platform``."""
    app = {key: value for key, value in inputs.values.items() if key in app_keys}
    raw: dict[str, Any] = {PREFIX + KEY_APPS: [app]}
    if inputs.values.get(KEY_PLATFORM) is not None:
        raw[PREFIX + KEY_PLATFORM] = inputs.values[KEY_PLATFORM]
    # The app's own keys: `kubeconfig` (a secret by the schema) is the cluster's, not the app's.
    secrets = [
        ConfigProblem(path, SECRET_MESSAGE)
        for path in inputs.secret
        if any(is_within(path, key) for key in app_keys)
    ]
    return _plan(raw, inputs, secrets, _app_input_path)


def plan_stack_inputs(inputs: Inputs) -> PackagePlan:
    """Plan a ``FlyteApps``: its inputs are a stack file's keys."""
    raw = {PREFIX + key: inputs.values[key] for key in STACK_KEYS if inputs.values.get(key) is not None}
    secrets = [ConfigProblem(path, SECRET_MESSAGE) for path in inputs.secret if is_within(path, KEY_APPS)]
    return _plan(raw, inputs, secrets, _stack_input_path)


def _plan(
    raw: dict[str, Any], inputs: Inputs, secrets: list[ConfigProblem], input_path: Callable[[str], str]
) -> PackagePlan:
    try:
        plan = plan_stack(raw)
    except ConfigError as exc:
        problems = [ConfigProblem(input_path(problem.path), problem.message) for problem in exc.problems]
        problems = [p for p in problems if not any(is_within(p.path, unknown) for unknown in inputs.unknown)]
        if problems or secrets:
            raise ConfigError([*secrets, *problems]) from None
        return PackagePlan(None, inputs.unknown)
    if secrets:
        raise ConfigError(secrets)
    return PackagePlan(None if inputs.unknown else plan, inputs.unknown)


def _app_input_path(path: str) -> str:
    """``flyte-apps:apps[0].container.image`` -> ``container.image``; ``flyte-apps:platform.x`` ->
    ``platform.x``; the app itself (``flyte-apps:apps[0]``) -> ``""``."""
    if is_within(path, APP_PATH):
        return path.removeprefix(APP_PATH).removeprefix(".")
    return path.removeprefix(PREFIX)


def _stack_input_path(path: str) -> str:
    return path.removeprefix(PREFIX)
