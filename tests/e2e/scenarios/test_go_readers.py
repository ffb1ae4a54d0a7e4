"""Go's YAML readers, through the built kubectl (no cluster needed): `render --out-dir` of the dev stack
and of a stack of tricky strings reads back, object for object, as `kubectl apply` and kustomize read
it; and tests/fixtures/go_yaml_vectors.json (what `make test` checks without kubectl) is what kubectl
reads."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.e2e import build, cluster
from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.suite import CLI_TIMEOUT_S, FLYTE_APPS, REPO, run_command


def by_identity(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}


def test_go_readers(tools: Mapping[str, build.Built], tmp_path: Path, record: Record) -> None:
    from flyte_apps.core.yamlout import dump_yaml
    from tests.vectors import go_yaml

    binary = str(tools["kubernetes"].binary("kubectl"))
    env = cluster.clean_environment({"NO_COLOR": "1"})
    tricky_apps = [{"name": "tricky", "container": {"image": "nginx:1.27", "args": go_yaml.TRICKY}}]
    tricky = {"flyte-apps:project": "proj", "flyte-apps:domain": "dev", "flyte-apps:apps": tricky_apps}
    stack_file = tmp_path / "Pulumi.tricky.yaml"
    stack_file.write_text(dump_yaml({"config": tricky}), encoding="utf-8")
    checked = 0
    for label, args in (
        ("dev", ["--stack", "dev", "--project-dir", str(REPO)]),
        ("tricky", ["--config", str(stack_file), "--project-dir", str(tmp_path)]),
    ):
        out = tmp_path / label
        argv = [str(FLYTE_APPS), "render", *args, "--out-dir", str(out)]
        run_command(argv, env=env, cwd=tmp_path, timeout=CLI_TIMEOUT_S)
        ours = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted(out.glob("*.yaml"))]
        for reader in (go_yaml.as_kubectl_apply_reads, go_yaml.as_kustomize_reads):
            read = reader(binary, out)
            check(by_identity(read) == by_identity(ours), f"{label}: {reader.__name__} reads other objects")
        checked += len(ours)
    committed = json.loads(go_yaml.OUTPUT.read_text(encoding="utf-8"))
    check(go_yaml.readings(binary) == committed, f"{go_yaml.OUTPUT.name} is stale: run `make vectors`")
    record(f"{checked} rendered objects read alike by kubectl apply and kustomize; the vectors hold")
