"""The Pulumi program: read the stack config, plan every object, register it. Nothing else.

The engine hands the config over as text, structured values as JSON, and the apps files it lists
(``flyte-apps:appFiles``) are read from the project directory; all are read within the same
bounds as a stack file read by ``flyte-apps render`` (``flyte_apps.core.bounds``: size, nesting,
number length), and every problem is logged with its quoted values shortened, so a hostile stack
file fails ``pulumi up`` the way it fails ``render``: one line per problem, nothing registered."""

from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from components.program import ClusterSettings, deploy, exit_quietly_when_stopped
from flyte_apps.cli.stackfile import read_app_files
from flyte_apps.core.bounds import MAX_INPUT_BYTES, bounded_error, parse_config_json, too_large_message
from flyte_apps.core.constants import CONFIG_KUBE_CONTEXT, CONFIG_KUBECONFIG, PROJECT_NAME
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.stackfile import StackInput, located


def read_project_config() -> tuple[dict[str, Any], list[ConfigProblem]]:
    """Every ``flyte-apps:*`` key the engine handed over (structured values arrive as JSON text)."""
    everything = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    secret_keys = set(runtime_config.get_config_secret_keys_env())
    values: dict[str, Any] = {}
    problems: list[ConfigProblem] = []
    for key in sorted(everything):
        if not key.startswith(f"{PROJECT_NAME}:"):
            continue
        if key in secret_keys or runtime_config.is_config_secret(key):
            # Never read: a problem found in the value would print it in plain text.
            problems.append(ConfigProblem(key, "encrypted (secure:) values are not supported here"))
            continue
        raw = runtime_config.get_config(key)
        if isinstance(raw, str) and len(raw) > MAX_INPUT_BYTES:
            problems.append(ConfigProblem(key, too_large_message(len(raw.encode()), "a config value")))
        elif isinstance(raw, str) and raw.lstrip()[:1] in ("{", "["):
            try:
                values[key] = parse_config_json(raw, key)
            except ConfigError as exc:
                problems.extend(exc.problems)
        else:
            values[key] = raw
    return values, problems


def without_consequences(problems: list[ConfigProblem], *, unread: set[str]) -> list[ConfigProblem]:
    """The problems, less those that only follow from a key that could not be read (an app with no
    domain when ``flyte-apps:domain`` was refused): they name the key in their message."""
    return [p for p in problems if p.path in unread or not any(key in p.message for key in unread)]


def main() -> None:
    exit_quietly_when_stopped()
    values, problems = read_project_config()
    given = StackInput()
    try:
        # Apps files are read from the project directory, as `flyte-apps check` reads them: Pulumi
        # runs the program there (Pulumi.yaml's directory; the project sets no `main`).
        given = read_app_files(StackInput(values=values), Path())
        # What could not be read is reported together with the rest of the config's problems.
        plan = plan_stack(given.values, problems=[*problems, *given.problems], app_paths=given.app_paths)
    except ConfigError as exc:
        exc = ConfigError(without_consequences(exc.problems, unread={p.path for p in problems}))
        for problem in bounded_error(ConfigError(located(exc.problems, given))).problems:
            pulumi.log.error(str(problem))
        msg = f"the stack config has {len(exc.problems)} problem(s); nothing was registered"
        raise pulumi.RunError(msg) from None
    cluster = ClusterSettings(
        kubeconfig=runtime_config.get_config(CONFIG_KUBECONFIG),
        context=runtime_config.get_config(CONFIG_KUBE_CONTEXT),
        secret=any(runtime_config.is_config_secret(key) for key in (CONFIG_KUBECONFIG, CONFIG_KUBE_CONTEXT)),
    )
    deploy(plan, cluster)


main()
