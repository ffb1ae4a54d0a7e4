"""Specs written by Flyte's own SDK (tests/fixtures/sdk/, made by ``python tests/sdk/make_fixtures.py`` in
a venv of its own) read the same with the project's flyteidl2, and carry what the SDK's comparison needs.

The SDK is never imported here: the project's venv must not have it (protobuf >= 6.30 and an exact
flyteidl2, against the project's protobuf 5.29). Its versions differ from ours (flyteidl2 2.0.51 and
protobuf 7 there, 2.0.53 and 5.29 here); the text-format check below is what shows that the difference
does not touch any field the SDK writes.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import re
from functools import cache
from typing import Any

import pytest
from flyteidl2.app import app_definition_pb2 as app_pb
from google.protobuf import text_format

from tests.support.config import REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "sdk"
REQUIREMENTS = REPO_ROOT / "tests" / "sdk" / "requirements.txt"
COMPARISON = "comparison.json"
OURS_COMPARISON = "ours-comparison.json"
"""The SDK's comparison run on specs we render (tests/core/test_sdk_parity.py reads it)."""

if not FIXTURES.is_dir():
    pytest.skip(
        f"{FIXTURES.relative_to(REPO_ROOT)} is missing: `python tests/sdk/make_fixtures.py` writes it "
        "(needs PyPI for Flyte's SDK)",
        allow_module_level=True,
    )

COVERED = {
    "plain",
    "env",
    "resources",
    "resources-limits",
    "autoscaling-concurrency",
    "autoscaling-request-rate",
    "timeout",
    "secrets",
    "service-account",
    "secrets-service-account",
    "public",
    "command-args",
    "pod-template",
    "gpu",
    "links",
    "profile",
    "inputs",
    "inputs-artifact",
    "domain",
    "cluster-pool",
}
"""What the issue asks the SDK fixtures to cover (the generator may write more)."""

NAMES = sorted(
    path.stem for path in FIXTURES.glob("*.json") if path.name not in (COMPARISON, OURS_COMPARISON)
)


@cache
def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


def spec_of(name: str) -> app_pb.Spec:
    return app_pb.Spec.FromString(base64.b64decode(load(name)["spec_b64"], validate=True))


def pinned_sdk() -> str:
    found = re.search(r"^flyte==(\S+)$", REQUIREMENTS.read_text(encoding="utf-8"), re.MULTILINE)
    assert found is not None, f"{REQUIREMENTS} pins no flyte version"
    return found.group(1)


def test_the_project_venv_has_no_flyte_sdk() -> None:
    assert importlib.util.find_spec("flyte") is None, "Flyte's SDK belongs in .sdk-venv, never in .venv"


def test_the_fixtures_cover_what_the_issue_lists() -> None:
    assert set(NAMES) >= COVERED, sorted(COVERED - set(NAMES))


@pytest.mark.parametrize("name", NAMES)
def test_fixture_comes_from_the_pinned_sdk(name: str) -> None:
    fixture = load(name)
    assert fixture["name"] == name
    assert fixture["sdk"]["flyte"] == pinned_sdk()
    assert fixture["serialization"] == "SerializeToString(deterministic=True)"
    runtime = spec_of(name).runtime_metadata
    assert runtime.version == pinned_sdk()
    assert runtime.flavor == "python"
    assert fixture["declared"]["flyte.app.AppEnvironment"]["name"] == fixture["app_id"]["name"]


@pytest.mark.parametrize("name", NAMES)
def test_bytes_parse_and_print_as_the_sdk_printed_them(name: str) -> None:
    data = base64.b64decode(load(name)["spec_b64"], validate=True)
    spec = app_pb.Spec.FromString(data)
    # Unknown fields are not printed: equal text means our flyteidl2 knows every field the SDK wrote.
    assert text_format.MessageToString(spec) == "".join(f"{line}\n" for line in load(name)["spec_text"])
    assert spec.SerializeToString(deterministic=True) == data


@pytest.mark.parametrize("name", NAMES)
def test_every_sdk_spec_carries_ingress(name: str) -> None:
    """The SDK always writes ``ingress``: ``IngressConfig(private=False, ...)``, empty without a domain."""
    assert spec_of(name).HasField("ingress")


def test_the_sdk_writes_empty_messages_present() -> None:
    plain = spec_of("plain")
    for field in ("ingress", "profile", "inputs", "autoscaling", "runtime_metadata"):
        assert plain.HasField(field), field
    assert plain.ingress == app_pb.IngressConfig()
    assert plain.profile == app_pb.Profile()
    assert plain.inputs == app_pb.InputList()
    assert plain.cluster_pool == "default"
    assert not plain.HasField("security_context")
    secrets = spec_of("secrets").security_context
    assert secrets.HasField("run_as")
    assert secrets.run_as.ByteSize() == 0


def test_the_sdks_comparison_asserts_on_a_stored_spec_without_ingress() -> None:
    """``App._app_specs_are_equal(old, updated)`` (what ``App.replace`` runs): ``assert old_ingress is not
    None`` fails when the stored (old) spec has no ``ingress``; a missing one on the updated side is
    filled from the old spec."""
    comparison = json.loads((FIXTURES / COMPARISON).read_text(encoding="utf-8"))
    assert comparison["sdk"]["flyte"] == pinned_sdk()
    assert "        assert old_ingress is not None" in comparison["source"]
    assert sorted(case["fixture"] for case in comparison["cases"]) == NAMES
    for case in comparison["cases"]:
        assert case["has_ingress"], case
        assert case["self"] == {"returns": True}, case
        assert case["old_without_ingress"]["raises"] == "AssertionError", case
        assert case["old_without_ingress"]["line"] == "assert old_ingress is not None", case
        assert case["updated_without_ingress"] == {"returns": True}, case
    assert comparison["probes"]["old_private_updated_sdk"]["result"] == {"returns": True}
