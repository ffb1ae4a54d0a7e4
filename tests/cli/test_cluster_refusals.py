"""What the API server or the node would refuse is refused by ``render`` and ``check``, at its key and
line (hostile input round 3, item 10): tolerations as ``ValidateTolerations`` reads them, node
selectors as label syntax (the manager's too), image references as the kubelet parses them
(invisible and look-alike characters named by code point), NUL bytes in env values and arguments."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from typer.testing import CliRunner

from flyte_apps.cli.main import app
from tests.support.config import minimal_config

MANAGER = {"image": "ghcr.io/flyteorg/flyte:v2.0.0"}


def pod_app(spec: dict[str, Any]) -> dict[str, Any]:
    config = minimal_config()
    config["flyte-apps:apps"][0]["pod"] = {"spec": {"containers": [{"name": "app"}], **spec}}
    return config


def errors(tmp_path: Path, config: dict[str, Any], command: str = "check") -> list[str]:
    stack = tmp_path / "Pulumi.test.yaml"
    stack.write_text(
        yaml.safe_dump({"config": config}, sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    result = CliRunner().invoke(app, [command, "--config", str(stack), "--project-dir", str(tmp_path)])
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.exit_code == (2 if lines else 0), result.stderr
    return lines


REFUSED: dict[str, tuple[dict[str, Any], str, str]] = {
    "toleration-operator": (
        pod_app({"tolerations": [{"key": "gpu", "operator": "Sometimes"}]}),
        "flyte-apps:apps[0].pod.spec.tolerations[0].operator",
        "'Sometimes' is not one of Equal, Exists",
    ),
    "toleration-effect": (
        pod_app({"tolerations": [{"key": "gpu", "effect": "NoWhenever"}]}),
        "flyte-apps:apps[0].pod.spec.tolerations[0].effect",
        "'NoWhenever' is not one of NoSchedule, PreferNoSchedule, NoExecute",
    ),
    "toleration-empty-key-equal": (
        pod_app({"tolerations": [{"operator": "Equal", "value": "x"}]}),
        "flyte-apps:apps[0].pod.spec.tolerations[0].operator",
        "must be Exists when the key is empty",
    ),
    "toleration-exists-with-value": (
        pod_app({"tolerations": [{"key": "gpu", "operator": "Exists", "value": "yes"}]}),
        "flyte-apps:apps[0].pod.spec.tolerations[0].value",
        "must be empty when the operator is Exists",
    ),
    "toleration-seconds-without-no-execute": (
        pod_app({"tolerations": [{"key": "gpu", "effect": "NoSchedule", "tolerationSeconds": 30}]}),
        "flyte-apps:apps[0].pod.spec.tolerations[0].effect",
        "must be NoExecute when tolerationSeconds is set",
    ),
    "toleration-key": (
        pod_app({"tolerations": [{"key": "nvidia.com/gpu/extra", "operator": "Exists"}]}),
        "flyte-apps:apps[0].pod.spec.tolerations[0].key",
        "not a valid label key",
    ),
    "toleration-value": (
        pod_app({"tolerations": [{"key": "gpu", "value": "a b"}]}),
        "flyte-apps:apps[0].pod.spec.tolerations[0].value",
        "'a b' is not a valid label value",
    ),
    "node-selector-key": (
        pod_app({"nodeSelector": {"bad key": "x"}}),
        "flyte-apps:apps[0].pod.spec.nodeSelector.bad key",
        "not a valid node label key",
    ),
    "node-selector-value": (
        pod_app({"nodeSelector": {"pool": "gpu\n"}}),
        "flyte-apps:apps[0].pod.spec.nodeSelector.pool",
        "is not a valid label value",
    ),
    "manager-node-selector": (
        {**minimal_config(), "flyte-apps:manager": {**MANAGER, "nodeSelector": {"pool": "-gpu"}}},
        "flyte-apps:manager.nodeSelector.pool",
        "'-gpu' is not a valid label value",
    ),
    "manager-toleration": (
        {**minimal_config(), "flyte-apps:manager": {**MANAGER, "tolerations": [{"operator": "Equal"}]}},
        "flyte-apps:manager.tolerations[0].operator",
        "must be Exists when the key is empty",
    ),
    "manager-image": (
        {**minimal_config(), "flyte-apps:manager": {"image": "ghcr.io/FlyteOrg/flyte:v2"}},
        "flyte-apps:manager.image",
        "the repository name must be lower case",
    ),
    "image-look-alike": (
        minimal_config(container={"image": "ngin\u0445:1.27"}),
        "flyte-apps:apps[0].container.image",
        "has U+0445 (CYRILLIC SMALL LETTER HA) at position 5",
    ),
    "image-invisible": (
        minimal_config(container={"image": "nginx:1.27\u200b"}),
        "flyte-apps:apps[0].container.image",
        "has U+200B (ZERO WIDTH SPACE) at position 11",
    ),
    "image-digest": (
        minimal_config(container={"image": "nginx@sha256:" + "a" * 63}),
        "flyte-apps:apps[0].container.image",
        "a sha256 digest is 64 lower-case hex digits",
    ),
    "pod-image": (
        pod_app({"containers": [{"name": "app", "image": "registry.example.com/Team/app:1"}]}),
        "flyte-apps:apps[0].pod.spec.containers[0].image",
        "the repository name must be lower case",
    ),
    "env-nul": (
        minimal_config(container={"image": "nginx:1.27", "env": {"TOKEN_FILE": "a\x00b"}}),
        "flyte-apps:apps[0].container.env.TOKEN_FILE",
        "the value of 'TOKEN_FILE' contains a NUL byte",
    ),
    "knative-reserved-env": (
        minimal_config(container={"image": "nginx:1.27", "env": {"K_SERVICE": "mine"}}),
        "flyte-apps:apps[0].container.env.K_SERVICE",
        "'K_SERVICE' is set by Knative in the serving container",
    ),
    "knative-reserved-port-in-the-pod": (
        pod_app(
            {"containers": [{"name": "app", "image": "nginx:1.27", "env": [{"name": "PORT", "value": "1"}]}]}
        ),
        "flyte-apps:apps[0].pod.spec.containers[0].env[0].name",
        "'PORT' is set by Knative in the serving container",
    ),
    "cpu-request-above-limit": (
        minimal_config(
            container={
                "image": "nginx:1.27",
                "resources": {"requests": {"cpu": "1001m"}, "limits": {"cpu": 1}},
            }
        ),
        "flyte-apps:apps[0].container.resources.requests.cpu",
        "'1001m' is more than its limit '1'",
    ),
    "memory-request-above-limit-in-the-pod": (
        pod_app(
            {
                "containers": [
                    {
                        "name": "app",
                        "image": "nginx:1.27",
                        "resources": {"requests": {"memory": "1025Mi"}, "limits": {"memory": "1Gi"}},
                    }
                ]
            }
        ),
        "flyte-apps:apps[0].pod.spec.containers[0].resources.requests.memory",
        "'1025Mi' is more than its limit '1Gi'",
    ),
    "manager-request-above-limit": (
        {**minimal_config(), "flyte-apps:manager": {**MANAGER, "resources": {"requests": {"memory": "2Gi"}}}},
        "flyte-apps:manager.resources.requests.memory",
        "'2Gi' is more than its limit '1Gi'",
    ),
    "args-nul": (
        pod_app({"containers": [{"name": "app", "image": "nginx:1.27", "args": ["--x", "a\x00"]}]}),
        "flyte-apps:apps[0].pod.spec.containers[0].args[1]",
        "contains a NUL byte",
    ),
}


@pytest.mark.parametrize("command", ["check", "render"])
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_the_cluster_refuses_is_a_config_error_at_its_key_and_line(
    tmp_path: Path, case: str, command: str
) -> None:
    config, key, message = REFUSED[case]
    if case.startswith(("toleration", "node-selector", "args")):
        config["flyte-apps:knative"] = {"manageConfig": True}  # the feature flags these fields need
    lines = errors(tmp_path, config, command)
    assert len(lines) == 1, lines
    prefix = f"error: {tmp_path / 'Pulumi.test.yaml'}:"
    assert lines[0].startswith(prefix), lines
    line_number, rest = lines[0].removeprefix(prefix).split(" ", 1)
    assert int(line_number) > 1
    assert rest.startswith(f"{key}: "), rest
    assert message in rest, rest


ACCEPTED: dict[str, dict[str, Any]] = {
    "tolerate-everything": pod_app({"tolerations": [{"operator": "Exists"}]}),
    "equal-empty-value": pod_app({"tolerations": [{"key": "gpu", "operator": "Equal", "value": ""}]}),
    "no-execute-seconds": pod_app(
        {"tolerations": [{"key": "example.com/gpu", "effect": "NoExecute", "tolerationSeconds": 30}]}
    ),
    "node-selector": pod_app({"nodeSelector": {"kubernetes.io/arch": "amd64", "pool": ""}}),
    "registry-port-and-digest": minimal_config(
        container={"image": "registry.example.com:5000/team/app:1.0@sha256:" + "0" * 64}
    ),
    "upper-case-registry": minimal_config(container={"image": "Registry.Example.com/team/app:V1"}),
    "request-equal-to-limit-in-other-units": minimal_config(
        container={
            "image": "nginx:1.27",
            "resources": {
                "requests": {"cpu": "1000m", "memory": "1Gi"},
                "limits": {"cpu": 1, "memory": "1073741824"},
            },
        }
    ),
    "port-in-a-sidecar": pod_app(
        {
            "containers": [
                {"name": "app", "image": "nginx:1.27", "ports": [{"containerPort": 8080}]},
                {"name": "proxy", "image": "envoy:1.30", "env": [{"name": "PORT", "value": "9000"}]},
            ]
        }
    ),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_what_the_cluster_accepts_passes(tmp_path: Path, case: str) -> None:
    config = ACCEPTED[case]
    config["flyte-apps:knative"] = {"manageConfig": True}
    assert errors(tmp_path, config) == []


NODE_REFUSES: Final = frozenset({"env-nul", "args-nul"})
"""Refused by us, accepted by the API server (found by ``make e2e``): the container runtime cannot
exec a process with a NUL byte in an argument or in its environment, so the pod never starts."""
KNATIVE_REFUSES: Final = frozenset({"knative-reserved-env"})
"""Refused by Knative's webhook (a KService), not by the Pod API."""


@dataclass(frozen=True)
class ClusterCase:
    fragment: dict[str, Any]
    """Pod-spec fields: tolerations, nodeSelector, args and env of the one container."""
    refused: bool
    """Whether the cluster must refuse it."""
    kservice: bool
    """Judged as a KService's revision template (Knative's webhook), else as a Pod."""


def api_server_cases() -> dict[str, ClusterCase]:
    """The cases the API server or Knative's webhook judges (tolerations, node selectors, reserved
    env names, NUL bytes; not images, which only the kubelet parses), as pod-spec fragments:
    ``make e2e`` sends each to the real kube-apiserver (``kubectl create --dry-run=server``) in a Pod,
    or in a KService for Knative's cases, which must agree (``cluster-refusals``,
    tests/e2e/scenarios/test_refusals.py)."""
    cases: dict[str, ClusterCase] = {}
    tables: list[tuple[dict[str, dict[str, Any]], bool]] = [
        ({name: entry[0] for name, entry in REFUSED.items()}, True),
        (ACCEPTED, False),
    ]
    for table, refused in tables:
        for name, config in table.items():
            app_entry: dict[str, Any] = config["flyte-apps:apps"][0]
            manager: dict[str, Any] = config.get("flyte-apps:manager", {})
            spec: dict[str, Any] = app_entry.get("pod", {}).get("spec", {})
            fragment: dict[str, Any] = {k: spec[k] for k in ("tolerations", "nodeSelector") if k in spec}
            fragment.update({key: manager[key] for key in ("tolerations", "nodeSelector") if key in manager})
            containers: list[dict[str, Any]] = spec.get("containers", [{}])
            if containers[0].get("args"):
                fragment["args"] = containers[0]["args"]
            env = app_entry.get("container", {}).get("env")
            if env:
                fragment["env"] = [{"name": key, "value": value} for key, value in env.items()]
            if fragment:
                cases[name] = ClusterCase(
                    fragment, refused and name not in NODE_REFUSES, name in KNATIVE_REFUSES
                )
    return cases


def test_every_api_server_case_is_judged_both_ways() -> None:
    verdicts = [case.refused for case in api_server_cases().values()]
    assert len(verdicts) >= 15
    assert set(verdicts) == {True, False}
    assert set(REFUSED) >= NODE_REFUSES | KNATIVE_REFUSES
    assert all(api_server_cases()[name].kservice for name in KNATIVE_REFUSES)


STRICT: dict[str, tuple[dict[str, Any], str]] = {
    "namespace-with-a-newline": (
        {**minimal_config(), "flyte-apps:platform": {"namespace": "flyte\n"}},
        "flyte-apps:platform.namespace",
    ),
    "env-name-with-a-newline": (
        minimal_config(container={"image": "nginx:1.27", "env": {"GOOD\n": "1"}}),
        "flyte-apps:apps[0].container.env.GOOD",
    ),
    "memory-with-a-newline": (
        minimal_config(container={"image": "nginx:1.27", "resources": {"limits": {"memory": "1Gi\n"}}}),
        "flyte-apps:apps[0].container.resources.limits.memory",
    ),
    "cpu-in-arabic-indic-digits": (
        minimal_config(container={"image": "nginx:1.27", "resources": {"requests": {"cpu": "\u0663"}}}),
        "flyte-apps:apps[0].container.resources.requests.cpu",
    ),
}


@pytest.mark.parametrize("case", sorted(STRICT))
def test_a_value_that_only_looks_valid_is_refused_at_its_key(tmp_path: Path, case: str) -> None:
    # ``^...$`` with re.match took a trailing newline, and \\d any script's digits.
    config, key = STRICT[case]
    lines = errors(tmp_path, config)
    assert len(lines) == 1, lines
    assert f" {key}" in lines[0], lines


def test_at_most_200_problems_are_printed_and_the_rest_counted(tmp_path: Path) -> None:
    config = minimal_config()
    config["flyte-apps:apps"] = [{"name": f"app{i}", "container": {"image": "Nginx"}} for i in range(250)]
    stack = tmp_path / "Pulumi.test.yaml"
    stack.write_text(yaml.safe_dump({"config": config}, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(app, ["render", "--config", str(stack), "--project-dir", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 201
    assert lines[-1] == "error: and 50 more problems, not shown (fix these first)"


def test_memory_sizes_that_are_surely_not_meant_are_warned_of_naming_their_key(tmp_path: Path) -> None:
    config = minimal_config(
        container={
            "image": "nginx:1.27",
            "resources": {"requests": {"memory": 48}, "limits": {"memory": "32G"}},
        }
    )
    config["flyte-apps:apps"][0]["sharedMemory"] = "16"
    stack = tmp_path / "Pulumi.test.yaml"
    stack.write_text(yaml.safe_dump({"config": config}, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(app, ["render", "--config", str(stack), "--project-dir", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        f"warning: {stack}:10 flyte-apps:apps[0].container.resources.requests.memory: 48 is 48 bytes (a bare "
        "number counts bytes); did you mean 48Mi or 48Gi?",
        f"warning: {stack}:12 flyte-apps:apps[0].container.resources.limits.memory: 32G is 32,000,000,000 "
        "bytes (a decimal unit); 32Gi is 34,359,738,368 bytes, the binary unit memory is usually sized in",
        f"warning: {stack}:13 flyte-apps:apps[0].sharedMemory: 16 is 16 bytes (a bare number counts bytes); "
        "did you mean "
        "16Mi or 16Gi?",
    ]


def test_a_duplicate_is_reported_beside_an_error_of_its_first_copy(tmp_path: Path) -> None:
    config = minimal_config(container={"image": "Nginx"})  # an error of the first copy's own
    config["flyte-apps:apps"].append({"name": "myapp", "container": {"image": "nginx:1.27"}})
    lines = errors(tmp_path, config)
    assert len(lines) == 2, lines
    assert "flyte-apps:apps[0].container.image: " in lines[0]
    assert lines[1].endswith(
        "flyte-apps:apps[1].name: duplicate app proj/dev/myapp (also at flyte-apps:apps[0])"
    )
