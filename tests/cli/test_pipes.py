"""`flyte-apps ... | head -1`: a reader that stops reading is a normal end for every command: exit 0,
nothing on stderr (Unix tools behave so; a broken-pipe traceback or exit 1 breaks `set -o pipefail`
scripts). Run as real processes with a real pipe whose reader leaves after the first bytes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flyte_apps.core.yamlout import dump_yaml
from tests.fakes.kube_api import FakeKubeApi
from tests.fakes.kube_semantics import KSERVICES
from tests.support.config import MINIMAL_NAMESPACE as NS
from tests.support.config import minimal_kservice

FLYTE_APPS = str(Path(sys.executable).with_name("flyte-apps"))
APPS = 400
"""Enough output to overflow a pipe's buffer, so writing blocks and then fails."""


def read_first_bytes_then_close(*args: str) -> tuple[int, str]:
    """Run ``flyte-apps ARGS`` into a pipe, read one byte, close the pipe; exit code and stderr."""
    process = subprocess.Popen([FLYTE_APPS, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.read(1)
    process.stdout.close()
    try:
        stderr = process.stderr.read().decode()
        code = process.wait(timeout=120)
    finally:
        process.kill()
    return code, stderr


def big_stack(tmp_path: Path) -> Path:
    apps = [{"name": f"app{index}", "container": {"image": "nginx:1.27"}} for index in range(APPS)]
    config = {"flyte-apps:project": "proj", "flyte-apps:domain": "dev", "flyte-apps:apps": apps}
    path = tmp_path / "Pulumi.big.yaml"
    path.write_text(dump_yaml({"config": config}), encoding="utf-8")
    return path


@pytest.mark.parametrize("output", [[], ["-o", "json"]], ids=["text", "json"])
def test_check_into_a_closed_pipe_ends_quietly(tmp_path: Path, output: list[str]) -> None:
    assert read_first_bytes_then_close("check", "--config", str(big_stack(tmp_path)), *output) == (0, "")


def test_render_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    assert read_first_bytes_then_close("render", "--config", str(big_stack(tmp_path))) == (0, "")


def serving_many(server: FakeKubeApi) -> str:
    assert server.kubeconfig_path is not None
    server.ensure_namespace(NS)
    for index in range(APPS):
        server.create(KSERVICES, minimal_kservice(name=f"app{index}"), NS)
    return str(server.kubeconfig_path)


def test_status_into_a_closed_pipe_ends_quietly(kube_server: FakeKubeApi) -> None:
    kubeconfig = serving_many(kube_server)
    assert read_first_bytes_then_close("status", "--kubeconfig", kubeconfig) == (0, "")


def test_watch_into_a_closed_pipe_ends_quietly(kube_server: FakeKubeApi) -> None:
    kubeconfig = serving_many(kube_server)
    assert read_first_bytes_then_close("watch", "--timeout", "3", "--kubeconfig", kubeconfig) == (0, "")


def test_logs_into_a_closed_pipe_ends_quietly(kube_server: FakeKubeApi) -> None:
    assert kube_server.kubeconfig_path is not None
    name = str(minimal_kservice()["metadata"]["name"])
    kube_server.create(KSERVICES, minimal_kservice(), NS)
    revision = kube_server.reconcile_kservice(NS, name)
    (pod,) = kube_server.add_revision_pods(NS, name, revision, count=1)
    kube_server.append_log(NS, pod, "app", *(f"line {index} " + "x" * 100 for index in range(5_000)))
    args = [
        "logs",
        "myapp",
        "-p",
        "proj",
        "-d",
        "dev",
        "--tail",
        "-1",
        "--kubeconfig",
        str(kube_server.kubeconfig_path),
    ]
    assert read_first_bytes_then_close(*args) == (0, "")
