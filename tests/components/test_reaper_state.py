"""Stack state written by earlier versions keeps working: the engine rebuilds the RevisionReaper
provider from the text the SDK pickled into state, in a provider-host process of its own."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest

from components.reaper import CLUSTER_CONTEXT, CLUSTER_INLINE, CLUSTER_KUBECONFIG, stack_cluster
from tests.support.config import REPO_ROOT

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "reaper-provider-0.1.0.b64"
FIXTURE_TOKEN = b"fixture-secret-token-0123456789"

# What `python -m pulumi.dynamic` does with the stored `__provider` property.
LOAD = """
import base64, sys
import dill
provider = dill.loads(base64.b64decode(open(sys.argv[1]).read()))
print(type(provider).__module__, type(provider).__qualname__)
print(sorted(vars(provider)))
print(callable(provider.create) and callable(provider.delete))
"""


def test_provider_pickled_by_version_0_1_0_loads_from_another_directory(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", LOAD, str(FIXTURE)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    class_name, attributes, callable_ = done.stdout.splitlines()
    assert class_name.startswith("components.") and class_name.endswith(" RevisionReaperProvider")
    assert attributes == "['_stack_target']"
    assert callable_ == "True"


def test_provider_pickled_by_version_0_1_0_holds_no_credential() -> None:
    data = base64.b64decode(FIXTURE.read_text(encoding="ascii"))
    assert FIXTURE_TOKEN not in data
    assert b"127.0.0.1" not in data
    assert b"components.resources.reaper" in data


@pytest.mark.parametrize(
    "content",
    [
        "\ufeffapiVersion: v1\nusers: [{user: {token: s3cr3t}}]",
        "--- {apiVersion: v1, users: [{user: {token: s3cr3t}}]}",
        "{apiVersion: v1, users: [{user: {token: s3cr3t}}]}",
        "clusters: []",
    ],
)
def test_kubeconfig_content_of_any_shape_is_never_recorded_as_a_path(content: str, tmp_path: Path) -> None:
    # pulumi-kubernetes' rule: a value that is not an existing file is content (it may hold a token).
    cluster = stack_cluster(content, None, tmp_path)
    assert cluster == {CLUSTER_KUBECONFIG: "", CLUSTER_INLINE: True, CLUSTER_CONTEXT: ""}


def test_an_existing_kubeconfig_file_is_recorded_by_its_absolute_path(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text("apiVersion: v1\n")
    cluster = stack_cluster("cluster.yaml", "prod", tmp_path)
    assert cluster == {
        CLUSTER_KUBECONFIG: str(tmp_path / "cluster.yaml"),
        CLUSTER_INLINE: False,
        CLUSTER_CONTEXT: "prod",
    }
