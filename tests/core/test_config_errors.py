"""Bad stack config is reported, never applied: every problem with its key path, all at once.

Each case starts from a valid minimal config and breaks one thing; the table says exactly which key
paths must be reported and what their messages must say (decision 8 in DESIGN.md). The CLI tests
check the contract users see: ``flyte-apps render`` prints ``error: <path>: <message>`` per problem
on stderr, nothing on stdout, and exits 2.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import pytest
from typer.testing import CliRunner

from flyte_apps.cli.main import app as cli_app
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.stack import StackConfig, load_stack_config
from tests.support.cli import without_locations
from tests.support.config import write_stack

PREFIX: Final = "flyte-apps:"
PLATFORM: Final = "flyte-apps:platform"
APP: Final = "flyte-apps:apps[0]"
CONTAINER: Final = "flyte-apps:apps[0].container"
EXIT_CONFIG: Final = 2
INJECTED_ENV_VARS: Final = (
    "INTERNAL_APP_ENDPOINT_PATTERN",
    "FLYTE_INTERNAL_EXECUTION_PROJECT",
    "FLYTE_INTERNAL_EXECUTION_DOMAIN",
)

DELETE: Final = object()
"""Marks a key to remove from the base config."""

Expected = Sequence[tuple[str, str]]
"""(exact key path, regex searched in that problem's message), one per expected problem."""


# --------------------------------------------------------------------------------------------------
# Building configs: a valid base, one thing broken
# --------------------------------------------------------------------------------------------------


def base_app(name: str = "myapp", **fields: Any) -> dict[str, Any]:
    return merge({"name": name, "container": {"image": "nginx:1.27"}}, fields)


def stack(
    *,
    app: Mapping[str, Any] | None = None,
    platform: Mapping[str, Any] | None = None,
    apps: Sequence[Any] | object | None = None,
    extra: Mapping[str, Any] | None = None,
    **top: Any,
) -> dict[str, Any]:
    """The valid minimal config with ``app`` merged into its only app, ``platform`` set, ``apps``
    replacing the app list and ``top`` and ``extra`` setting (or, with ``DELETE``, removing) top-level
    keys (``flyte-apps:`` is added unless the key names another namespace)."""
    raw: dict[str, Any] = {
        f"{PREFIX}project": "proj",
        f"{PREFIX}domain": "dev",
        f"{PREFIX}apps": [merge(base_app(), app or {})],
    }
    if platform is not None:
        raw[f"{PREFIX}platform"] = copy.deepcopy(dict(platform))
    if apps is not None:
        raw[f"{PREFIX}apps"] = copy.deepcopy(apps)
    for key, value in {**top, **(extra or {})}.items():
        full = key if ":" in key else f"{PREFIX}{key}"
        if value is DELETE:
            raw.pop(full, None)
        else:
            raw[full] = value
    return raw


def merge(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``base`` with ``patch`` merged into nested maps; ``DELETE`` removes a key."""
    result = copy.deepcopy(dict(base))
    for key, value in patch.items():
        if value is DELETE:
            result.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def container(**fields: Any) -> dict[str, Any]:
    return {"container": fields}


def scaling(**fields: Any) -> dict[str, Any]:
    return {"autoscaling": fields}


def problems_of(raw: Mapping[str, Any]) -> list[ConfigProblem]:
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw)
    return caught.value.problems


def assert_problems(problems: Sequence[ConfigProblem], expected: Expected) -> None:
    """Exactly the expected paths are reported, each with a message matching its pattern."""
    listed = "\n".join(str(problem) for problem in problems)
    assert sorted(problem.path for problem in problems) == sorted(path for path, _ in expected), listed
    for path, pattern in expected:
        messages = [problem.message for problem in problems if problem.path == path]
        assert any(re.search(pattern, message) for message in messages), (
            f"no problem at {path} matches /{pattern}/:\n{listed}"
        )


# --------------------------------------------------------------------------------------------------
# One mistake -> exactly the right path and message
# --------------------------------------------------------------------------------------------------

ENV_NAME_MESSAGE: Final = r"is not a valid environment variable name"
LABEL_VALUE_MESSAGE: Final = r"is not a valid Kubernetes label value"
APP_NAME_MESSAGE: Final = r"is not a valid Flyte app name"

CASES: Final = [
    # --- container image and resources
    pytest.param(
        stack(app=container(image=DELETE)),
        [(f"{CONTAINER}.image", r"^is required$")],
        id="missing-image-is-required",
    ),
    pytest.param(
        stack(app=container(image="   ")),
        [(f"{CONTAINER}.image", r"^must not be empty$")],
        id="blank-image-is-rejected",
    ),
    pytest.param(
        stack(app=container(resources={"limits": {"memory": "12xyz"}})),
        [(f"{CONTAINER}.resources.limits.memory", r"^'12xyz' is not a Kubernetes quantity$")],
        id="memory-limit-that-is-not-a-quantity",
    ),
    pytest.param(
        stack(app=container(resources={"requests": {"cpu": "-500m"}})),
        [(f"{CONTAINER}.resources.requests.cpu", r"'-500m' is negative")],
        id="negative-cpu-request",
    ),
    pytest.param(
        stack(app=container(resources={"limits": {"storage": "1Gi"}})),
        [(f"{CONTAINER}.resources.limits.storage", r"'memory', 'gpu' or 'ephemeral-storage'.*'storage'")],
        id="storage-is-not-a-container-resource",
    ),
    pytest.param(
        stack(app=container(resources={"limits": {"nvidia.com/gpu": 1}})),
        [(f"{CONTAINER}.resources.limits.nvidia.com/gpu", r"'cpu', 'memory', 'gpu' or 'ephemeral-storage'")],
        id="gpu-by-its-kubernetes-name-is-written-gpu",
    ),
    # --- durations
    pytest.param(
        stack(platform={"defaultRequestTimeout": "5 minutes"}),
        [(f"{PLATFORM}.defaultRequestTimeout", r"^'5 minutes' is not a Go duration")],
        id="platform-duration-in-words",
    ),
    pytest.param(
        stack(platform={"maxRequestTimeout": 300}),
        [(f"{PLATFORM}.maxRequestTimeout", r"is not a Go duration string")],
        id="platform-duration-as-bare-number",
    ),
    pytest.param(
        stack(app={"timeouts": {"request": "5 minutes"}}),
        [(f"{APP}.timeouts.request", r"^'5 minutes' is not a Go duration")],
        id="app-timeout-in-words",
    ),
    pytest.param(
        stack(app=scaling(scaledownPeriod=300)),
        [(f"{APP}.autoscaling.scaledownPeriod", r"is not a Go duration string")],
        id="app-scaledown-period-as-bare-number",
    ),
    # --- autoscaling
    pytest.param(
        stack(app=scaling(minReplicas=-1)),
        [(f"{APP}.autoscaling.minReplicas", r"greater than or equal to 0")],
        id="negative-min-replicas",
    ),
    pytest.param(
        stack(app=scaling(maxReplicas=-2)),
        [(f"{APP}.autoscaling.maxReplicas", r"greater than or equal to 0")],
        id="negative-max-replicas",
    ),
    pytest.param(
        stack(app=scaling(minReplicas=5, maxReplicas=3)),
        [(f"{APP}.autoscaling.minReplicas", r"^5 is above maxReplicas 3$")],
        id="min-replicas-above-a-bounded-max",
    ),
    pytest.param(
        stack(app=scaling(metric="rps", target=0)),
        [(f"{APP}.autoscaling.target", r"must be a positive number, not 0")],
        id="zero-target",
    ),
    pytest.param(
        stack(app=scaling(metric="concurrency", target=-3)),
        [(f"{APP}.autoscaling.target", r"must be a positive number, not -3")],
        id="negative-target",
    ),
    pytest.param(
        stack(app=scaling(target=10)),
        [(f"{APP}.autoscaling.target", r"needs a metric \(concurrency or rps\)")],
        id="target-without-metric",
    ),
    pytest.param(
        stack(app=scaling(metric="rps")),
        [(f"{APP}.autoscaling.metric", r"needs a positive target")],
        id="metric-without-target",
    ),
    pytest.param(
        stack(app=scaling(metric="cpu", target=10)),
        [(f"{APP}.autoscaling.metric", r"'concurrency' or 'rps'.*'cpu'")],
        id="unknown-metric",
    ),
    pytest.param(
        stack(app=scaling(scaledownPeriod="5s")),
        [(f"{APP}.autoscaling.scaledownPeriod", r"^5s is outside .*6s\.\.1h")],
        id="scaledown-period-below-6s",
    ),
    pytest.param(
        stack(app=scaling(scaledownPeriod="2h")),
        [(f"{APP}.autoscaling.scaledownPeriod", r"^2h0m0s is outside .*6s\.\.1h")],
        id="scaledown-period-above-1h",
    ),
    # --- ports
    pytest.param(
        stack(app=container(ports=[{"containerPort": 0}])),
        [(f"{CONTAINER}.ports[0].containerPort", r"greater than or equal to 1")],
        id="port-zero",
    ),
    pytest.param(
        stack(app=container(ports=[{"containerPort": 70000}])),
        [(f"{CONTAINER}.ports[0].containerPort", r"less than or equal to 65535")],
        id="port-above-65535",
    ),
    pytest.param(
        stack(app=container(ports=[{"containerPort": 8080}, {"containerPort": 8080}])),
        [
            (
                f"{CONTAINER}.ports[1].containerPort",
                r"duplicate port 8080 \(also at flyte-apps:apps\[0\]\.container\.ports\[0\]\)",
            )
        ],
        id="duplicate-port",
    ),
    pytest.param(
        stack(app=container(ports=[{"containerPort": 8080}, {"containerPort": 8081}])),
        [(f"{CONTAINER}.ports", r"at most one container port")],
        id="two-different-ports",
    ),
    pytest.param(
        stack(app=container(ports=[{"containerPort": 8012}])),
        [(f"{CONTAINER}.ports[0].containerPort", r"port 8012 is reserved by Knative's queue-proxy")],
        id="port-reserved-by-queue-proxy",
    ),
    pytest.param(
        stack(app=container(ports=[{"containerPort": 8080, "name": "http"}])),
        [(f"{CONTAINER}.ports[0].name", r"'http1' and 'h2c'.*not 'http'")],
        id="port-named-http",
    ),
    # --- app env
    pytest.param(
        stack(app=container(env={"GOOD": "1", "1BAD": "x"})),
        [(f"{CONTAINER}.env.1BAD", rf"^'1BAD' {ENV_NAME_MESSAGE}")],
        id="env-map-name-starting-with-a-digit",
    ),
    pytest.param(
        stack(app=container(env=[{"name": "GOOD", "value": "1"}, {"name": "BAD=NAME", "value": "2"}])),
        [(f"{CONTAINER}.env[1].name", rf"^'BAD=NAME' {ENV_NAME_MESSAGE}")],
        id="env-list-name-with-equals-sign",
    ),
    *[
        pytest.param(
            stack(app=container(env={name: "mine"})),
            [
                (
                    f"{CONTAINER}.env.{name}",
                    rf"'{name}' is set by Flyte for every app and cannot be overridden",
                )
            ],
            id=f"env-overrides-injected-{name}",
        )
        for name in INJECTED_ENV_VARS
    ],
    pytest.param(
        stack(app=container(env=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"}])),
        [
            (
                f"{CONTAINER}.env[1].name",
                r"duplicate environment variable 'A' "
                r"\(also at flyte-apps:apps\[0\]\.container\.env\[0\]\.name\)",
            )
        ],
        id="duplicate-env-var-in-list-form",
    ),
    pytest.param(
        stack(app=container(env={"A": {"nested": "x"}})),
        [(f"{CONTAINER}.env.A", r"value of 'A' must be a string")],
        id="env-value-that-is-a-map",
    ),
    pytest.param(
        stack(app=container(env=[{"name": "A"}])),
        [(f"{CONTAINER}.env[0].value", r"^is required$")],
        id="env-list-item-without-value",
    ),
    pytest.param(
        stack(app=container(env=["A=1"])),
        [(f"{CONTAINER}.env[0]", r"must be \{name, value\}")],
        id="env-list-item-that-is-not-a-map",
    ),
    # --- platform default env, both forms
    pytest.param(
        stack(platform={"defaultEnvVars": {"OK": "1", "1BAD": "x"}}),
        [(f"{PLATFORM}.defaultEnvVars.1BAD", rf"^'1BAD' {ENV_NAME_MESSAGE}")],
        id="platform-default-env-map-with-bad-name",
    ),
    pytest.param(
        stack(platform={"defaultEnvVars": [{"OK": "1"}, {"1BAD": "x"}]}),
        [(f"{PLATFORM}.defaultEnvVars[1].1BAD", rf"^'1BAD' {ENV_NAME_MESSAGE}")],
        id="platform-default-env-upstream-list-with-bad-name",
    ),
    pytest.param(
        stack(platform={"defaultEnvVars": [{"FLYTE_INTERNAL_EXECUTION_DOMAIN": "x"}]}),
        [(f"{PLATFORM}.defaultEnvVars[0].FLYTE_INTERNAL_EXECUTION_DOMAIN", r"is set by Flyte for every app")],
        id="platform-default-env-overrides-injected-var",
    ),
    # --- app names
    pytest.param(
        stack(app={"name": "a" * 31}), [(f"{APP}.name", APP_NAME_MESSAGE)], id="app-name-of-31-characters"
    ),
    pytest.param(
        stack(app={"name": "my_app"}), [(f"{APP}.name", APP_NAME_MESSAGE)], id="app-name-with-underscore"
    ),
    pytest.param(stack(app={"name": ""}), [(f"{APP}.name", APP_NAME_MESSAGE)], id="empty-app-name"),
    pytest.param(
        stack(app={"name": "-app"}), [(f"{APP}.name", APP_NAME_MESSAGE)], id="app-name-starting-with-dash"
    ),
    pytest.param(
        stack(app={"name": "1app"}),
        [(f"{APP}.name", r"KService name '1app-proj-dev' is not a DNS-1035 label")],
        id="app-name-starting-with-a-digit-gives-a-kservice-name-knative-rejects",
    ),
    # --- project and domain
    pytest.param(
        stack(app={"project": "p" * 64}),
        [(f"{APP}.project", LABEL_VALUE_MESSAGE)],
        id="app-project-of-64-characters",
    ),
    pytest.param(
        stack(app={"domain": "d" * 64}),
        [(f"{APP}.domain", LABEL_VALUE_MESSAGE)],
        id="app-domain-of-64-characters",
    ),
    pytest.param(
        stack(app={"project": "own"}, project="my project"),
        [(f"{PREFIX}project", rf"'my project' {LABEL_VALUE_MESSAGE}")],
        id="default-project-with-a-space",
    ),
    pytest.param(
        stack(app={"domain": "dev"}, domain="d" * 64),
        [(f"{PREFIX}domain", LABEL_VALUE_MESSAGE)],
        id="default-domain-of-64-characters",
    ),
    pytest.param(
        stack(project=DELETE),
        [(f"{APP}.project", r"is required \(no flyte-apps:project default is set\)")],
        id="app-without-project-and-no-default",
    ),
    pytest.param(
        stack(domain=DELETE),
        [(f"{APP}.domain", r"is required \(no flyte-apps:domain default is set\)")],
        id="app-without-domain-and-no-default",
    ),
    # --- timeouts
    pytest.param(
        stack(platform={"maxRequestTimeout": "600s"}, app={"timeouts": {"request": "601s"}}),
        [(f"{APP}.timeouts.request", r"^10m1s exceeds flyte-apps:platform\.maxRequestTimeout \(10m0s\)")],
        id="request-timeout-above-max-request-timeout",
    ),
    pytest.param(
        stack(app={"timeouts": {"request": "0s"}}),
        [(f"{APP}.timeouts.request", r"^0s is below the minimum of 1s")],
        id="request-timeout-of-zero",
    ),
    pytest.param(
        stack(platform={"maxRequestTimeout": "3601s"}),
        [(f"{PLATFORM}.maxRequestTimeout", r"^1h0m1s exceeds 1h0m0s")],
        id="max-request-timeout-above-3600s",
    ),
    pytest.param(
        stack(platform={"defaultRequestTimeout": "300s", "maxRequestTimeout": "120s"}),
        [(f"{PLATFORM}.maxRequestTimeout", r"^2m0s is below defaultRequestTimeout 5m0s")],
        id="max-request-timeout-below-default",
    ),
    # --- identities and KService names across apps
    pytest.param(
        stack(apps=[base_app(), base_app()]),
        [(f"{PREFIX}apps[1].name", r"duplicate app proj/dev/myapp \(also at flyte-apps:apps\[0\]\)")],
        id="duplicate-app-identity-names-both-paths",
    ),
    pytest.param(
        stack(
            apps=[
                base_app("svc", project="team", domain="prod-x"),
                base_app("svc", project="team-prod", domain="x"),
            ]
        ),
        [
            (
                f"{PREFIX}apps[1].name",
                r"app team-prod/x/svc and app team/prod-x/svc \(at flyte-apps:apps\[0\]\) "
                r"both map to KService name 'svc-team-prod-x'",
            )
        ],
        id="colliding-kservice-names-name-both-apps",
    ),
    pytest.param(
        stack(apps=[base_app("Api"), base_app("api")]),
        [(f"{PREFIX}apps[1].name", r"proj/dev/api and app proj/dev/Api .*'api-proj-dev'")],
        id="names-differing-only-in-case-collide",
    ),
    # --- unknown keys, with a suggestion
    pytest.param(
        stack(plaform={"namespace": "flyte"}),
        [(f"{PREFIX}plaform", r"^unknown key 'plaform'; did you mean 'platform'\?$")],
        id="misspelled-top-level-key",
    ),
    pytest.param(
        stack(platform={"baseDomian": "example.com"}),
        [(f"{PLATFORM}.baseDomian", r"^unknown key 'baseDomian'; did you mean 'baseDomain'\?$")],
        id="misspelled-platform-key",
    ),
    pytest.param(
        stack(apps=[{"name": "myapp", "contianer": {"image": "nginx:1.27"}}]),
        [
            (f"{APP}.contianer", r"^unknown key 'contianer'; did you mean 'container'\?$"),
            (f"{APP}.container", r"^is required \(or a pod template: pod\)$"),
        ],
        id="misspelled-app-key",
    ),
    pytest.param(
        stack(app=scaling(maxReplica=3)),
        [(f"{APP}.autoscaling.maxReplica", r"^unknown key 'maxReplica'; did you mean 'maxReplicas'\?$")],
        id="misspelled-autoscaling-key",
    ),
    pytest.param(
        stack(app=container(ports=[{"containerPort": 8080, "nmae": "h2c"}])),
        [(f"{CONTAINER}.ports[0].nmae", r"did you mean 'name'\?")],
        id="misspelled-key-inside-a-list-item",
    ),
    # --- shapes and enumerations
    pytest.param(
        stack(apps={"name": "myapp", "container": {"image": "nginx:1.27"}}),
        [(f"{PREFIX}apps", r"^must be a list of apps, not dict$")],
        id="apps-that-is-not-a-list",
    ),
    pytest.param(
        stack(apps=["myapp"]),
        [(APP, r"^must be a map of keys, not 'myapp'$")],
        id="app-that-is-not-a-map",
    ),
    pytest.param(
        stack(app={"visibility": "private"}),
        [(f"{APP}.visibility", r"'public' or 'cluster-local'.*'private'")],
        id="visibility-private",
    ),
    pytest.param(
        stack(platform={"scheme": "ftp"}),
        [(f"{PLATFORM}.scheme", r"'http' or 'https'.*'ftp'")],
        id="scheme-ftp",
    ),
    pytest.param(
        stack(platform={"namespace": "Flyte_NS"}),
        [(f"{PLATFORM}.namespace", r"^'Flyte_NS' is not a DNS-1123 label")],
        id="namespace-that-is-not-a-dns-label",
    ),
    pytest.param(
        stack(app={"serviceAccount": "Run As"}),
        [(f"{APP}.serviceAccount", r"'Run As' is not a valid Kubernetes service account name")],
        id="service-account-that-is-not-a-dns-subdomain",
    ),
]


@pytest.mark.parametrize(("raw", "expected"), CASES)
def test_one_mistake_is_reported_at_its_key_path(raw: dict[str, Any], expected: Expected) -> None:
    assert_problems(problems_of(raw), expected)


# --------------------------------------------------------------------------------------------------
# Encrypted values
# --------------------------------------------------------------------------------------------------

SECURE: Final = {"secure": "v1:abc"}


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        pytest.param(
            stack(app=container(env={"TOKEN": SECURE})), f"{CONTAINER}.env.TOKEN", id="env-map-value"
        ),
        pytest.param(
            stack(app=container(env=[{"name": "TOKEN", "value": SECURE}])),
            f"{CONTAINER}.env[0].value",
            id="env-list-value",
        ),
        pytest.param(
            stack(platform={"defaultEnvVars": [{"TOKEN": SECURE}]}),
            f"{PLATFORM}.defaultEnvVars[0].TOKEN",
            id="platform-default-env",
        ),
        pytest.param(stack(platform={"baseDomain": SECURE}), f"{PLATFORM}.baseDomain", id="platform-setting"),
        pytest.param(stack(project=SECURE), f"{PREFIX}project", id="top-level-value"),
    ],
)
def test_encrypted_value_under_flyte_apps_is_rejected_without_echoing_it(
    raw: dict[str, Any], path: str
) -> None:
    problems = problems_of(raw)
    assert_problems(problems, [(path, r"encrypted \(secure:\) values are not supported")])
    assert all("v1:abc" not in str(problem) for problem in problems)


# --------------------------------------------------------------------------------------------------
# Valid edge cases load
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(
            stack(app=scaling(minReplicas=2, maxReplicas=0)), id="min-above-max-when-max-is-unbounded"
        ),
        pytest.param(stack(app=scaling(minReplicas=3, maxReplicas=3)), id="min-equal-to-max"),
        pytest.param(stack(app=scaling(scaledownPeriod="6s")), id="scaledown-period-of-6s"),
        pytest.param(stack(app=scaling(scaledownPeriod="1h")), id="scaledown-period-of-1h"),
        pytest.param(
            stack(platform={"maxRequestTimeout": "600s"}, app={"timeouts": {"request": "600s"}}),
            id="request-timeout-equal-to-max",
        ),
        pytest.param(stack(platform={"maxRequestTimeout": "3600s"}), id="max-request-timeout-of-3600s"),
        pytest.param(
            stack(app=container(ports=[{"containerPort": 8080, "name": "h2c"}])), id="port-named-h2c"
        ),
        pytest.param(
            stack(app=container(ports=[{"containerPort": 8080, "name": "http1"}])), id="port-named-http1"
        ),
        pytest.param(stack(app={"name": "a" * 30}), id="app-name-of-30-characters"),
        pytest.param(stack(app={"project": "p" * 63}), id="project-of-63-characters"),
        pytest.param(
            stack(app=container(resources={"limits": {"cpu": 2, "memory": "1.5Gi"}})), id="numeric-cpu"
        ),
        pytest.param(
            stack(apps=[base_app("svc", project="team"), base_app("svc", project="team2")]),
            id="same-name-in-two-projects",
        ),
        pytest.param(stack(extra={"kubernetes:context": "kind-flyte"}), id="other-namespaces-are-ignored"),
    ],
)
def test_valid_edge_case_loads(raw: dict[str, Any]) -> None:
    assert isinstance(load_stack_config(raw), StackConfig)


def env_of(config: StackConfig) -> list[tuple[str, str]]:
    return [(var.name, var.value) for var in config.apps[0].env]


def test_env_map_loads_in_sorted_key_order() -> None:
    config = load_stack_config(stack(app=container(env={"ZED": "z", "ALPHA": "a", "MID": 3})))
    assert env_of(config) == [("ALPHA", "a"), ("MID", "3"), ("ZED", "z")]


def test_env_list_keeps_its_order() -> None:
    env = [{"name": "ZED", "value": "z"}, {"name": "ALPHA", "value": "a"}, {"name": "MID", "value": "m"}]
    config = load_stack_config(stack(app=container(env=env)))
    assert env_of(config) == [("ZED", "z"), ("ALPHA", "a"), ("MID", "m")]


def test_platform_default_env_map_is_sorted_and_upstream_list_keeps_its_order() -> None:
    as_map = load_stack_config(stack(platform={"defaultEnvVars": {"B": "2", "A": "1"}}))
    as_list = load_stack_config(stack(platform={"defaultEnvVars": [{"B": "2"}, {"A": "1"}]}))
    assert [(v.name, v.value) for v in as_map.platform.default_env] == [("A", "1"), ("B", "2")]
    assert [(v.name, v.value) for v in as_list.platform.default_env] == [("B", "2"), ("A", "1")]


# --------------------------------------------------------------------------------------------------
# All problems at once
# --------------------------------------------------------------------------------------------------


def four_mistakes_in_three_apps() -> dict[str, Any]:
    return stack(
        apps=[
            base_app(
                "first",
                container={"resources": {"limits": {"memory": "12xyz"}}, "ports": [{"containerPort": 0}]},
            ),
            base_app("second", container={"env": {"1BAD": "x"}}),
            base_app("third", autoscaling={"scaledownPeriod": "5s"}),
        ]
    )


FOUR_MISTAKES: Final = [
    (f"{PREFIX}apps[0].container.ports[0].containerPort", r"greater than or equal to 1"),
    (f"{PREFIX}apps[0].container.resources.limits.memory", r"'12xyz' is not a Kubernetes quantity"),
    (f"{PREFIX}apps[1].container.env.1BAD", ENV_NAME_MESSAGE),
    (f"{PREFIX}apps[2].autoscaling.scaledownPeriod", r"5s is outside"),
]


def test_mistakes_in_several_apps_are_all_reported() -> None:
    assert_problems(problems_of(four_mistakes_in_three_apps()), FOUR_MISTAKES)


def test_platform_and_app_mistakes_are_reported_together() -> None:
    raw = stack(platform={"scheme": "ftp"}, app=container(image="  "))
    assert_problems(
        problems_of(raw), [(f"{PLATFORM}.scheme", r"'ftp'"), (f"{CONTAINER}.image", r"must not be empty")]
    )


def test_an_empty_cluster_identifier_is_refused_at_its_key() -> None:
    """An empty identifier names no cluster."""
    assert_problems(
        problems_of(stack(platform={"clusterIdentifier": ""})),
        [(f"{PLATFORM}.clusterIdentifier", r"at least 1 character")],
    )


def test_unknown_top_level_key_does_not_hide_mistakes_in_apps() -> None:
    raw = stack(plaform={"namespace": "flyte"}, app=container(image="  "))
    assert_problems(
        problems_of(raw),
        [(f"{PREFIX}plaform", r"did you mean 'platform'"), (f"{CONTAINER}.image", r"must not be empty")],
    )


def test_invalid_platform_does_not_hide_a_request_timeout_above_its_max() -> None:
    raw = stack(
        platform={"namespace": "Flyte_NS", "maxRequestTimeout": "600s"}, app={"timeouts": {"request": "900s"}}
    )
    assert_problems(
        problems_of(raw),
        [(f"{PLATFORM}.namespace", r"DNS-1123"), (f"{APP}.timeouts.request", r"15m0s exceeds")],
    )


@pytest.mark.parametrize("key", ["project", "domain"])
def test_invalid_default_is_reported_once_not_as_missing_on_every_app(key: str) -> None:
    raw = stack(apps=[base_app("one"), base_app("two")], extra={key: "not a label"})
    assert_problems(problems_of(raw), [(f"{PREFIX}{key}", rf"'not a label' {LABEL_VALUE_MESSAGE}")])


@pytest.mark.parametrize("key", ["project", "domain"])
def test_invalid_app_project_or_domain_is_not_blamed_on_the_app_name_too(key: str) -> None:
    """'my project' is one mistake, at ``.project``; the KService name it produces is a consequence."""
    raw = stack(app={key: "my value"})
    assert_problems(problems_of(raw), [(f"{APP}.{key}", rf"'my value' {LABEL_VALUE_MESSAGE}")])


# --------------------------------------------------------------------------------------------------
# Messages show the offending value, and bad input is a config error, never a crash
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "path", "pattern"),
    [
        pytest.param(
            stack(platform={"defaultRequestTimeout": 300}),
            f"{PLATFORM}.defaultRequestTimeout",
            r"^300 is not a Go duration string",
            id="bare-number-duration",
        ),
        pytest.param(
            stack(app=container(env="FOO=bar")),
            f"{CONTAINER}.env",
            r"not 'FOO=bar'$",
            id="env-that-is-a-string",
        ),
    ],
)
def test_message_shows_the_value_not_a_template_placeholder(
    raw: dict[str, Any], path: str, pattern: str
) -> None:
    problems = problems_of(raw)
    assert_problems(problems, [(path, pattern)])
    assert all("{value" not in problem.message and "{{" not in problem.message for problem in problems)


def test_env_map_with_a_non_string_key_is_a_config_error() -> None:
    """YAML reads ``1: a`` as an integer key; mixed with string keys it must not crash the sort."""
    raw = stack(app=container(env={1: "a", "B": "b"}))
    assert_problems(problems_of(raw), [(f"{CONTAINER}.env.1", rf"'1' {ENV_NAME_MESSAGE}")])


@pytest.mark.parametrize("name", [None, True, 7], ids=["null", "boolean", "integer"])
def test_env_list_name_that_is_not_a_string_is_rejected(name: object) -> None:
    """``- {name: , value: x}`` or ``name: yes`` must not become a variable called ``None``/``True``."""
    raw = stack(app=container(env=[{"name": name, "value": "x"}]))
    assert_problems(problems_of(raw), [(f"{CONTAINER}.env[0].name", r".")])


@pytest.mark.parametrize(
    ("autoscaling", "key"),
    [
        pytest.param({"maxReplicas": 2**32}, "maxReplicas", id="max-replicas"),
        pytest.param({"minReplicas": 2**32}, "minReplicas", id="min-replicas"),
        pytest.param({"metric": "rps", "target": 2**32}, "target", id="target"),
    ],
)
def test_autoscaling_number_beyond_the_spec_uint32_is_a_config_error(
    autoscaling: dict[str, Any], key: str
) -> None:
    """Flyte's spec stores these as uint32; a bigger number must be reported, not crash rendering."""
    with pytest.raises(ConfigError) as caught:
        plan_stack(stack(app={"autoscaling": autoscaling}))
    assert f"{APP}.autoscaling.{key}" in [problem.path for problem in caught.value.problems]


# --------------------------------------------------------------------------------------------------
# The CLI: one line per problem on stderr, nothing on stdout, exit 2
# --------------------------------------------------------------------------------------------------


def render(directory: Path, raw: Mapping[str, Any]) -> tuple[int, str, str]:
    config = write_stack(directory, raw)
    result = CliRunner().invoke(cli_app, ["render", "--config", str(config), "--project-dir", str(directory)])
    return result.exit_code, result.stdout, without_locations(result.stderr)


def test_render_prints_every_problem_of_several_apps_on_stderr_and_exits_2(tmp_path: Path) -> None:
    code, out, err = render(tmp_path, four_mistakes_in_three_apps())
    lines = err.splitlines()
    assert (code, out) == (EXIT_CONFIG, "")
    assert len(lines) == len(FOUR_MISTAKES), err
    for (path, pattern), line in zip(sorted(FOUR_MISTAKES), sorted(lines), strict=True):
        assert line.startswith(f"error: {path}: "), line
        assert re.search(pattern, line.removeprefix(f"error: {path}: ")), line


def test_render_of_one_mistake_prints_exactly_its_line(tmp_path: Path) -> None:
    raw = stack(app=container(resources={"limits": {"memory": "12xyz"}}))
    assert render(tmp_path, raw) == (
        EXIT_CONFIG,
        "",
        f"error: {CONTAINER}.resources.limits.memory: '12xyz' is not a Kubernetes quantity\n",
    )


def test_render_reports_a_misspelled_top_level_key_with_a_suggestion(tmp_path: Path) -> None:
    code, out, err = render(tmp_path, stack(plaform={}))
    assert (code, out, err) == (
        EXIT_CONFIG,
        "",
        "error: flyte-apps:plaform: unknown key 'plaform'; did you mean 'platform'?\n",
    )


def test_render_of_a_valid_config_prints_yaml_and_no_errors(tmp_path: Path) -> None:
    code, out, err = render(tmp_path, stack())
    assert (code, err) == (0, "")
    assert "kind: Service" in out


def test_render_of_a_missing_config_file_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "Pulumi.nope.yaml"
    result = CliRunner().invoke(cli_app, ["render", "--config", str(missing), "--project-dir", str(tmp_path)])
    assert (result.exit_code, result.stdout) == (EXIT_CONFIG, "")
    assert result.stderr == f"error: {missing}: stack config file not found\n"


@pytest.mark.parametrize(
    ("app", "path"),
    [
        pytest.param(container(env={1: "a", "B": "b"}), f"{CONTAINER}.env.1", id="integer-env-key"),
        pytest.param(
            scaling(maxReplicas=2**32), f"{APP}.autoscaling.maxReplicas", id="max-replicas-over-uint32"
        ),
    ],
)
def test_render_reports_input_that_could_crash_rendering_as_a_config_error(
    tmp_path: Path, app: dict[str, Any], path: str
) -> None:
    code, out, err = render(tmp_path, stack(app=app))
    assert (code, out) == (EXIT_CONFIG, ""), err
    assert f"error: {path}: " in err
