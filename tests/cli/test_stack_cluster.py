"""The commands reach only the cluster the stack names (hostile input round 3, item 3). A decoy API
server stands in for the ambient ``KUBECONFIG``: it must receive no request."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from flyte_apps.cli import import_apps as import_command
from flyte_apps.cli import logs as logs_command
from flyte_apps.cli import status as status_command
from flyte_apps.cli import watch as watch_command
from tests.fakes.kube_api import FakeKubeApi
from tests.support.cli import command_app
from tests.support.config import minimal_config


@pytest.fixture
def decoy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKubeApi]:
    server = FakeKubeApi()
    server.start()
    try:
        monkeypatch.setenv("KUBECONFIG", str(server.write_kubeconfig(tmp_path / "decoy-kubeconfig")))
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        yield server
    finally:
        server.stop()


def run(*args: str) -> Result:
    commands = (
        status_command.register,
        watch_command.register,
        logs_command.register,
        import_command.register,
    )
    return CliRunner().invoke(command_app(*commands), list(args))


def stack_file(directory: Path, **cluster: object) -> Path:
    path = directory / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump({"config": {**minimal_config(), **cluster}}, sort_keys=False))
    return path


COMMANDS = (
    ["status"],
    ["watch", "--max-events", "1", "--timeout", "2"],
    ["logs", "myapp", "-p", "proj", "-d", "dev"],
    ["import", "--dry-run"],
)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("key", ["kubernetes:kubeconfig", "kubernetes:context"])
def test_an_encrypted_cluster_setting_is_an_error_not_the_ambient_cluster(
    decoy: FakeKubeApi, tmp_path: Path, command: list[str], key: str
) -> None:
    path = stack_file(tmp_path, **{key: {"secure": "v1:c2FsdA==:v1:abc:def"}})
    result = run(*command, "--project-dir", str(tmp_path), "--stack", "prod")
    assert result.exit_code == 2, result.output
    assert f"{key} of prod is an encrypted (secure:) value" in result.stderr
    assert "--kubeconfig" in result.stderr
    assert decoy.requests == ()
    assert path.exists()


@pytest.mark.parametrize("key", ["kubernetes:config:kubeconfig", "kubernetes:kubeconfig"])
def test_the_stacks_kubeconfig_is_used_in_either_spelling(
    decoy: FakeKubeApi, kube_server: FakeKubeApi, tmp_path: Path, key: str
) -> None:
    assert kube_server.kubeconfig_path is not None
    stack_file(tmp_path, **{key: str(kube_server.kubeconfig_path)})
    result = run("status", "--project-dir", str(tmp_path), "--stack", "prod")
    assert result.exit_code == 0, result.output
    assert decoy.requests == ()
    assert kube_server.requests


def test_a_relative_kubeconfig_is_the_project_directorys(
    decoy: FakeKubeApi, kube_server: FakeKubeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    kube_server.write_kubeconfig(project / "cluster.yaml")
    stack_file(project, **{"kubernetes:kubeconfig": "cluster.yaml"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = run("status", "--project-dir", str(project), "--stack", "prod")
    assert result.exit_code == 0, result.output
    assert decoy.requests == ()
    assert kube_server.requests


def named(kubeconfig: dict[str, Any], name: str, server: str | None = None) -> dict[str, Any]:
    """``kubeconfig`` (one cluster, user and context) with all three called ``name``."""
    [cluster], [user], [context] = kubeconfig["clusters"], kubeconfig["users"], kubeconfig["contexts"]
    return {
        **kubeconfig,
        "clusters": [
            {"name": name, "cluster": {**cluster["cluster"], **({"server": server} if server else {})}}
        ],
        "users": [{"name": name, "user": user["user"]}],
        "contexts": [{"name": name, "context": {**context["context"], "cluster": name, "user": name}}],
        "current-context": name,
    }


def test_kubeconfig_lists_several_files_which_are_merged_as_kubectl_merges_them(
    kube_server: FakeKubeApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # KUBECONFIG=a:b: the context of b is found (only the first file was read before).
    first = named(kube_server.kubeconfig_dict(), "first", server="http://127.0.0.1:9")  # nothing there
    second = named(kube_server.kubeconfig_dict(), "second")
    (tmp_path / "a").write_text(yaml.safe_dump(first), encoding="utf-8")
    (tmp_path / "b").write_text(yaml.safe_dump(second), encoding="utf-8")
    monkeypatch.setenv(
        "KUBECONFIG", f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'missing'}{os.pathsep}{tmp_path / 'b'}"
    )
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    stack = stack_file(tmp_path)
    result = run("status", "--config", str(stack), "--project-dir", str(tmp_path), "--context", "second")
    assert result.exit_code == 0, result.stderr
    assert kube_server.requests  # the second file's cluster was asked
    # Without --context, the first file's current context is the merged one's, as for kubectl.
    result = run("status", "--config", str(stack), "--project-dir", str(tmp_path), "--request-timeout", "2s")
    assert result.exit_code == 3, result.stderr
    assert "127.0.0.1:9" in result.stderr
