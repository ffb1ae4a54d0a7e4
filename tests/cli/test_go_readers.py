"""YAML that `flyte-apps` writes reads back the same in Go's readers: `kubectl apply`'s
(sigs.k8s.io/yaml over yaml.v2, YAML 1.1) and kustomize's (yaml.v3, YAML 1.2). kubectl itself was the
judge: tests/fixtures/go_yaml_vectors.json holds what it read of each tricky string as our emitter
writes it, and of a merge key (``make vectors``; ``make e2e`` reads the rendered stacks with the built
kubectl and checks the file is still what kubectl reads). These tests need no kubectl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from flyte_apps.cli.main import app
from flyte_apps.core.yamlout import dump_yaml
from tests.support.config import REPO_ROOT
from tests.vectors.go_yaml import MERGED_CONTAINER, TRICKY, config_map

VECTORS: dict[str, Any] = json.loads(
    (REPO_ROOT / "tests" / "fixtures" / "go_yaml_vectors.json").read_text(encoding="utf-8")
)


def test_the_vectors_cover_every_tricky_string() -> None:
    assert [vector["value"] for vector in VECTORS["values"]] == TRICKY


@pytest.mark.parametrize("vector", VECTORS["values"], ids=lambda vector: repr(vector["value"]))
def test_go_reads_each_tricky_string_back_as_the_same_string(vector: dict[str, Any]) -> None:
    # The bytes kubectl was shown are still the ones we write, and both of Go's readers read the string.
    assert dump_yaml({"k": vector["value"]}) == vector["emitted"]
    assert vector["kubectlApply"] == vector["value"]
    assert vector["kustomize"] == vector["value"]


def test_the_tricky_strings_are_written_in_a_manifest_as_alone() -> None:
    document = dump_yaml(config_map(TRICKY))
    assert VECTORS["values"], "the Go readers' vectors"
    for index, vector in enumerate(VECTORS["values"]):
        line = vector["emitted"].removeprefix("k: ").rstrip("\n")
        assert f"  k{index}: {line}\n" in document


def test_a_merge_key_that_go_and_pyyaml_read_differently_is_refused(tmp_path: Path) -> None:
    """Go's readers (kubectl here; Pulumi reads stack files with Go's yaml too) take a merged key from
    the first map, PyYAML from the last: `check` would judge privileged: false where Pulumi deploys
    privileged: true. The stack file is refused instead, at the key."""
    merge = VECTORS["mergeKey"]
    assert merge["document"] == MERGED_CONTAINER
    assert merge["kubectlApply"] == {"privileged": True}
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
