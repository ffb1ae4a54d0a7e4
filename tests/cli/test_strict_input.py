"""Never say yes to nothing: through the real CLI, a stack file that would deploy nothing by mistake,
or that Pulumi reads differently, fails with every problem at once; a cluster that cannot answer
the question fails with one line; nothing is half-applied."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from flyte_apps.cli.main import app
from flyte_apps.core.yamlout import dump_yaml
from tests.fakes.kube_api import FakeKubeApi
from tests.support.config import minimal_config

EXIT_CONFIG = 2
EXIT_CLUSTER = 3
NO_SUCH_RESOURCE_TYPE = "the server could not find the requested resource"


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def stack_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def errors(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


def no_traceback(result: Result) -> bool:
    return "Traceback" not in result.stdout + result.stderr and isinstance(
        result.exception, SystemExit | None
    )


# --- stack files that would deploy nothing -----------------------------------------------------


@pytest.mark.parametrize("command", ["render", "check"])
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "config:\n  flyteapps:apps:\n    - {name: a, container: {image: nginx:1.27}}\n",
            "did you mean 'flyte-apps:apps'?",
            id="namespace-typo",
        ),
        pytest.param(
            "flyte-apps:apps:\n  - {name: a, container: {image: nginx:1.27}}\n",
            "config keys belong under 'config:'",
            id="no-config-wrapper",
        ),
        pytest.param(
            "config:\n  flyte-apps:plaform: {}\n",
            "unknown key 'plaform'; did you mean 'platform'?",
            id="key-typo",
        ),
        pytest.param(
            "config:\n  flyte-apps:apps: {name: a}\n", "must be a list of apps", id="apps-not-a-list"
        ),
        pytest.param("- config\n", "must be a YAML map, not a list", id="not-a-map"),
    ],
)
def test_a_stack_file_that_would_deploy_nothing_by_mistake_fails(
    tmp_path: Path, command: str, text: str, expected: str
) -> None:
    result = run(command, "--config", str(stack_file(tmp_path, text)))
    assert result.exit_code == EXIT_CONFIG, result.stdout
    assert any(expected in line for line in errors(result)), result.stderr
    assert result.stdout == ""
    assert no_traceback(result)


@pytest.mark.parametrize("command", ["render", "check"])
def test_a_stack_without_apps_succeeds_with_a_warning(tmp_path: Path, command: str) -> None:
    for text in ("", "config: {}\n", "config:\n  flyte-apps:project: proj\n"):
        result = run(command, "--config", str(stack_file(tmp_path, text)))
        assert result.exit_code == 0, result.stderr
        assert "warning: the stack declares no apps" in result.stderr


def test_a_boolean_written_as_a_string_is_an_error(tmp_path: Path) -> None:
    config = minimal_config(stopped="yes")
    path = stack_file(tmp_path, dump_yaml({"config": config}))
    result = run("render", "--config", str(path))
    assert result.exit_code == EXIT_CONFIG
    line = next(number for number, text in enumerate(path.read_text().splitlines(), 1) if "stopped:" in text)
    # The problem is located at the file and line the key is written on.
    assert errors(result) == [
        f"error: {path}:{line} flyte-apps:apps[0].stopped: input should be a valid boolean (got 'yes')"
    ]


def test_a_second_key_never_silently_wins(tmp_path: Path) -> None:
    text = (
        "config:\n  flyte-apps:project: proj\n  flyte-apps:domain: dev\n  flyte-apps:apps:\n"
        "    - name: a\n      container:\n        image: nginx:1.27\n        image: evil:latest\n"
    )
    result = run("render", "--config", str(stack_file(tmp_path, text)))
    assert result.exit_code == EXIT_CONFIG
    (line,) = errors(result)
    assert "flyte-apps:apps[0].container.image: duplicate key 'image' (also on line 7)" in line
    assert line.endswith(":8:9)")


# --- every problem at once, whatever stage finds it --------------------------------------------


def test_every_problem_of_a_stack_is_reported_in_one_run(tmp_path: Path) -> None:
    config: dict[str, Any] = {
        "flyte-apps:project": "proj",
        "flyte-apps:domain": "dev",
        "flyte-apps:platform": {"namespace": "Bad_Namespace"},
        "flyte-apps:apps": [
            {
                "name": "web",
                "visibility": "private",
                "autoscaling": {"metric": "cpu", "target": 5},
                "container": {"image": "nginx:1.27", "ports": [{"containerPort": 8080, "name": "web"}]},
            },
            # Found only once the KService is built: annotations over Kubernetes' limit.
            {"name": "big", "container": {"image": "nginx:1.27", "env": {"BLOB": "x" * 200_000}}},
        ],
    }
    text = dump_yaml({"config": config}) + "  flyte-apps:extra: y\n"
    result = run("render", "--config", str(stack_file(tmp_path, text)))
    assert result.exit_code == EXIT_CONFIG
    found = "\n".join(errors(result))
    for expected in (
        "flyte-apps:platform.namespace: 'Bad_Namespace' is not a DNS-1123 label",
        "flyte-apps:apps[0].visibility: input should be 'public' or 'cluster-local'",
        "flyte-apps:apps[0].autoscaling.metric: input should be 'concurrency' or 'rps'",
        "flyte-apps:apps[0].container.ports[0].name: Knative accepts only the port names 'http1' and 'h2c'",
        "flyte-apps:apps[1]: the Service's annotations would take",
        "flyte-apps:extra: value 'y' is a string to flyte-apps (PyYAML) but a boolean to Pulumi",
        "flyte-apps:extra: unknown key 'extra'",
    ):
        assert expected in found, found
    assert result.stdout == ""


def test_an_annotation_over_kubernetes_limit_names_the_app_and_the_spec(tmp_path: Path) -> None:
    config = minimal_config(container={"image": "nginx:1.27", "env": {"BLOB": "x" * 200_000}})
    result = run("render", "--config", str(stack_file(tmp_path, dump_yaml({"config": config}))))
    assert result.exit_code == EXIT_CONFIG
    (line,) = errors(result)
    assert line.startswith(
        f"error: {tmp_path / 'Pulumi.test.yaml'}:5 flyte-apps:apps[0]: the Service's annotations "
    )
    assert "Kubernetes allows at most 262,144 in all. The largest is flyte.org/spec" in line


def test_base_domain_is_accepted_in_any_case_and_lower_cased_everywhere(tmp_path: Path) -> None:
    config = minimal_config()
    config["flyte-apps:platform"] = {"baseDomain": "Apps.Example.COM"}
    config["flyte-apps:knative"] = {"manageConfig": True}
    result = run("render", "--config", str(stack_file(tmp_path, dump_yaml({"config": config}))))
    assert result.exit_code == 0, result.stderr
    assert "apps.example.com" in result.stdout
    assert "Example" not in result.stdout


# --- clusters that cannot answer -----------------------------------------------------------------


def test_a_malformed_kubeconfig_names_the_file_and_position(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nclusters: [\n  - {name: x\n", encoding="utf-8")
    for command in (["status"], ["watch", "--timeout", "1"], ["logs", "myapp", "-p", "p", "-d", "d"]):
        result = run(*command, "--kubeconfig", str(kubeconfig))
        assert result.exit_code == EXIT_CLUSTER, (command, result.stderr)
        assert result.stderr.splitlines() == [
            f"error: kubeconfig file {kubeconfig} is not valid YAML/JSON at line 3, column 3: "
            "expected the node content, but found '-'"
        ]
        assert no_traceback(result)


def test_a_cluster_without_knative_serving_is_a_cluster_error_not_a_missing_app(
    kube_server: FakeKubeApi,
) -> None:
    assert kube_server.kubeconfig_path is not None
    kube_server.fail_next(
        404, times=1000, path_contains="/apis/serving.knative.dev/", message=NO_SUCH_RESOURCE_TYPE
    )
    for command in (["status"], ["status", "myapp", "-p", "proj", "-d", "dev"], ["watch", "--timeout", "1"]):
        result = run(*command, "--kubeconfig", str(kube_server.kubeconfig_path))
        assert result.exit_code == EXIT_CLUSTER, (command, result.stderr)
        assert result.stderr.splitlines() == [
            "error: Knative Serving is not installed in this cluster (no services.serving.knative.dev)"
        ]


def test_rejected_credentials_are_a_cluster_error(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    config = kube_server.kubeconfig_dict()
    config["users"][0]["user"]["token"] = "wrong"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(dump_yaml(config), encoding="utf-8")
    result = run("status", "--kubeconfig", str(kubeconfig))
    assert result.exit_code == EXIT_CLUSTER
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: unauthorized: the Kubernetes API at ")
    assert "wrong" not in line


def test_an_app_that_does_not_exist_stays_exit_1(kube_server: FakeKubeApi) -> None:
    assert kube_server.kubeconfig_path is not None
    kube_server.ensure_namespace("flyte")
    result = run(
        "status", "nope", "-p", "proj", "-d", "dev", "--kubeconfig", str(kube_server.kubeconfig_path)
    )
    assert result.exit_code == 1
    assert "not found" in result.stderr
