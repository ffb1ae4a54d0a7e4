"""YAML that `flyte-apps render` writes reads back the same in Go's readers: `kubectl apply`'s
(sigs.k8s.io/yaml over yaml.v2, YAML 1.1) and kustomize's (yaml.v3, YAML 1.2). kubectl itself is the
judge: `kubectl annotate --local -f FILE x=y -o json` reads a file exactly as `kubectl apply` does and
prints what it read, and `kubectl kustomize` reads a directory as kustomize and Argo CD do."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from flyte_apps.cli.main import app
from flyte_apps.core.yamlout import dump_yaml
from tests.support.config import REPO_ROOT

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl is not installed: Go's YAML readers not tested"
)

TRICKY = [
    "y",
    "n",
    "Y",
    "yes",
    "on",
    "Off",
    "true",
    "0o17",
    "017",
    "08",
    "0x1F",
    "0b101",
    "1_000",
    "1e3",
    "1.0e3",
    ".5",
    ".inf",
    "-.Inf",
    ".NaN",
    "1:20",
    "~",
    "null",
    "",
    "2001-12-14",
    "2001-12-14 21:59:43.10",
    "=",
    "<<",
    "+1",
    "-0",
    "99999999999999999999",
    "1e400",
    "1.2.3",
    "#not-a-comment",
    "a: b",
    "- item",
]
"""Strings that some YAML reader takes for something else (and a few that must stay plain)."""
MARK = "x"


def tricky_stack(tmp_path: Path) -> Path:
    env = [{"name": f"V{index}", "value": value} for index, value in enumerate(TRICKY)]
    config = {
        "flyte-apps:project": "proj",
        "flyte-apps:domain": "dev",
        "flyte-apps:apps": [
            {"name": "tricky", "container": {"image": "nginx:1.27", "args": TRICKY, "env": env}}
        ],
    }
    path = tmp_path / "Pulumi.tricky.yaml"
    path.write_text(dump_yaml({"config": config}), encoding="utf-8")
    return path


def render_to(directory: Path, *args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(app, ["render", *args, "--out-dir", str(directory)])
    assert result.exit_code == 0, result.stderr
    return [yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted(directory.glob("*.yaml"))]


def kubectl(*args: str, stdin: str | None = None) -> str:
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def json_objects(text: str) -> list[dict[str, Any]]:
    """kubectl prints one JSON document per object; split them."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    index = 0
    while index < len(text):
        if text[index].isspace():
            index += 1
            continue
        obj, index = decoder.raw_decode(text, index)
        found.extend(obj["items"] if obj.get("kind") == "List" else [obj])
    return found


def without_mark(obj: dict[str, Any]) -> dict[str, Any]:
    annotations = obj["metadata"].get("annotations", {})
    annotations.pop(MARK, None)
    if not annotations:
        obj["metadata"].pop("annotations", None)
    return obj


def by_identity(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}


def as_kubectl_apply_reads(directory: Path) -> list[dict[str, Any]]:
    return [
        without_mark(obj)
        for obj in json_objects(
            kubectl("annotate", "--local", "-f", str(directory), f"{MARK}=y", "-o", "json")
        )
    ]


def as_kustomize_reads(directory: Path) -> list[dict[str, Any]]:
    names = sorted(path.name for path in directory.glob("*.yaml"))
    (directory / "kustomization.yaml").write_text(dump_yaml({"resources": names}), encoding="utf-8")
    built = kubectl("kustomize", str(directory))
    (directory / "kustomization.yaml").unlink()
    # What kustomize wrote is read back by the same Go reader kubectl apply uses.
    read_back = kubectl("annotate", "--local", "-f", "-", f"{MARK}=y", "-o", "json", stdin=built)
    return [without_mark(obj) for obj in json_objects(read_back)]


@pytest.mark.parametrize("stack", ["dev", "tricky"])
def test_kubectl_apply_reads_every_rendered_object_exactly(tmp_path: Path, stack: str) -> None:
    args = (
        ["--stack", "dev", "--project-dir", str(REPO_ROOT)]
        if stack == "dev"
        else ["--config", str(tricky_stack(tmp_path))]
    )
    ours = render_to(tmp_path / "out", *args)
    assert by_identity(as_kubectl_apply_reads(tmp_path / "out")) == by_identity(ours)


@pytest.mark.parametrize("stack", ["dev", "tricky"])
def test_kustomize_reads_every_rendered_object_exactly(tmp_path: Path, stack: str) -> None:
    args = (
        ["--stack", "dev", "--project-dir", str(REPO_ROOT)]
        if stack == "dev"
        else ["--config", str(tricky_stack(tmp_path))]
    )
    ours = render_to(tmp_path / "out", *args)
    assert by_identity(as_kustomize_reads(tmp_path / "out")) == by_identity(ours)


def test_the_tricky_values_reach_the_kservice_as_the_same_strings(tmp_path: Path) -> None:
    ours = render_to(tmp_path / "out", "--config", str(tricky_stack(tmp_path)))
    read = by_identity(as_kubectl_apply_reads(tmp_path / "out"))
    (service,) = [obj for key, obj in read.items() if key[0] == "Service"]
    container = service["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == TRICKY
    assert [var["value"] for var in container["env"][: len(TRICKY)]] == TRICKY
    assert len(ours) == len(read)


MERGED_CONTAINER = """\
apiVersion: v1
kind: Pod
metadata: {name: merged}
spec:
  containers:
    - name: app
      image: ghcr.io/example/app:1.0.0
      <<: [{securityContext: {privileged: true}}, {securityContext: {privileged: false}}]
"""


def test_a_merge_key_that_go_and_pyyaml_read_differently_is_refused(tmp_path: Path) -> None:
    """Go's readers (kubectl here; Pulumi reads stack files with Go's yaml too) take a merged key from
    the first map, PyYAML from the last: `check` would judge privileged: false where Pulumi deploys
    privileged: true. The stack file is refused instead, at the key."""
    pod = tmp_path / "pod.yaml"
    pod.write_text(MERGED_CONTAINER)
    [read_by_go] = json_objects(kubectl("annotate", "--local", "-f", str(pod), "x=y", "-o", "json"))
    assert read_by_go["spec"]["containers"][0]["securityContext"] == {"privileged": True}
    assert yaml.safe_load(MERGED_CONTAINER)["spec"]["containers"][0]["securityContext"] == {
        "privileged": False
    }
    stack = tmp_path / "Pulumi.merged.yaml"
    stack.write_text(
        "config:\n  flyte-apps:apps:\n    - name: app\n      container: {image: ghcr.io/example/app:1.0.0}\n"
        "      pod:\n        spec:\n          containers:\n            - name: app\n"
        "              <<: [{securityContext: {privileged: true}}, {securityContext: {privileged: false}}]\n"
    )
    for command in ("check", "render"):
        result = CliRunner().invoke(app, [command, "--config", str(stack)])
        assert result.exit_code == 2, result.output
        assert "flyte-apps:apps[0].pod.spec.containers[0]: a merge key (<<) is refused" in result.output
