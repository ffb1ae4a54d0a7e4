"""The Pulumi program: read the stack config, plan every object, register it. Nothing else."""

import json
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from components.program import ClusterSettings, deploy
from flyte_apps.core.constants import CONFIG_KUBE_CONTEXT, CONFIG_KUBECONFIG, PROJECT_NAME
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.plan import plan_stack


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
            problems.append(ConfigProblem(key, "encrypted (secure:) values are not supported here"))
            continue
        raw = runtime_config.get_config(key)
        values[key] = json.loads(raw) if isinstance(raw, str) and raw.lstrip()[:1] in ("{", "[") else raw
    return values, problems


def main() -> None:
    values, problems = read_project_config()
    try:
        if problems:
            raise ConfigError(problems)
        plan = plan_stack(values)
    except ConfigError as exc:
        for problem in exc.problems:
            pulumi.log.error(str(problem))
        msg = f"the stack config has {len(exc.problems)} problem(s); nothing was registered"
        raise pulumi.RunError(msg) from None
    cluster = ClusterSettings(
        kubeconfig=runtime_config.get_config(CONFIG_KUBECONFIG),
        context=runtime_config.get_config(CONFIG_KUBE_CONTEXT),
    )
    deploy(plan, cluster)


main()
