"""Go's YAML readers judge what ``flyte-apps`` writes: ``kubectl apply``'s (sigs.k8s.io/yaml over
yaml.v2) and kustomize's (yaml.v3), through ``kubectl`` itself.

``python -m tests.vectors.go_yaml KUBECTL`` (``make vectors``, with the kubectl that ``make e2e-tools``
builds or one on PATH) writes tests/fixtures/go_yaml_vectors.json: for each string of :data:`TRICKY`,
the YAML our emitter writes for it and the value each Go reader reads back, and how Go reads a merge
key. ``tests/cli/test_go_readers.py`` checks the committed file without kubectl; ``make e2e`` reads
the rendered stacks with the built kubectl and compares this file with what it reads now.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

from flyte_apps.core.yamlout import dump_yaml

OUTPUT: Final = Path(__file__).resolve().parent.parent / "fixtures" / "go_yaml_vectors.json"
MARK: Final = "x"
TRICKY: Final = [
    "y", "n", "Y", "yes", "on", "Off", "true", "0o17", "017", "08", "0x1F", "0b101", "1_000", "1e3",
    "1.0e3", ".5", ".inf", "-.Inf", ".NaN", "1:20", "~", "null", "", "2001-12-14",
    "2001-12-14 21:59:43.10", "=", "<<", "+1", "-0", "99999999999999999999", "1e400", "1.2.3",
    "#not-a-comment", "a: b", "- item",
]  # fmt: skip
"""Strings that some YAML reader takes for something else (and a few that must stay plain)."""
MERGED_CONTAINER: Final = """\
apiVersion: v1
kind: Pod
metadata: {name: merged}
spec:
  containers:
    - name: app
      image: ghcr.io/example/app:1.0.0
      <<: [{securityContext: {privileged: true}}, {securityContext: {privileged: false}}]
"""
"""A merge key whose maps disagree: Go's readers take the first map, PyYAML the last."""


def kubectl(binary: str, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [binary, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args[:2])}: {done.stderr.strip()}")
    return done.stdout


def json_objects(text: str) -> list[dict[str, Any]]:
    """kubectl prints one JSON document per object (or a List); the objects."""
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


def as_kubectl_apply_reads(binary: str, directory: Path) -> list[dict[str, Any]]:
    """Every object of ``directory`` as ``kubectl apply -f`` reads it (``annotate --local``)."""
    text = kubectl(binary, "annotate", "--local", "-f", str(directory), f"{MARK}=y", "-o", "json")
    return [without_mark(obj) for obj in json_objects(text)]


def as_kustomize_reads(binary: str, directory: Path) -> list[dict[str, Any]]:
    """Every object of ``directory`` as kustomize (and Argo CD) reads it, read back as apply does."""
    names = sorted(path.name for path in directory.glob("*.yaml"))
    (directory / "kustomization.yaml").write_text(dump_yaml({"resources": names}), encoding="utf-8")
    try:
        built = kubectl(binary, "kustomize", str(directory))
    finally:
        (directory / "kustomization.yaml").unlink()
    read_back = kubectl(binary, "annotate", "--local", "-f", "-", f"{MARK}=y", "-o", "json", stdin=built)
    return [without_mark(obj) for obj in json_objects(read_back)]


def config_map(values: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "tricky"},
        "data": {f"k{index}": value for index, value in enumerate(values)},
    }


def readings(binary: str) -> dict[str, Any]:
    """What Go's readers read of each tricky string as our emitter writes it, and of a merge key."""
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        (directory / "001-configmap-tricky.yaml").write_text(dump_yaml(config_map(TRICKY)), encoding="utf-8")
        [applied] = as_kubectl_apply_reads(binary, directory)
        [kustomized] = as_kustomize_reads(binary, directory)
        pod = directory / "merged" / "pod.yaml"
        pod.parent.mkdir()
        pod.write_text(MERGED_CONTAINER, encoding="utf-8")
        [merged] = as_kubectl_apply_reads(binary, pod.parent)
    return {
        "values": [
            {
                "value": value,
                "emitted": dump_yaml({"k": value}),
                "kubectlApply": applied["data"].get(f"k{index}"),
                "kustomize": kustomized["data"].get(f"k{index}"),
            }
            for index, value in enumerate(TRICKY)
        ],
        "mergeKey": {
            "document": MERGED_CONTAINER,
            "kubectlApply": merged["spec"]["containers"][0]["securityContext"],
        },
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m tests.vectors.go_yaml KUBECTL\n")
        return 2
    OUTPUT.write_text(json.dumps(readings(argv[0]), indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    print(f"{OUTPUT}: {len(TRICKY)} values")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
