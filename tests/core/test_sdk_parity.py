"""An app written in stack config means what the same app means to Flyte's SDK, and Flyte's SDK can
work with the specs we render (issue 12; decision 9 in DESIGN.md).

The SDK's specs are the fixtures it wrote itself (``tests/fixtures/sdk``, made by
``tests/sdk/make_fixtures.py`` in a venv of its own); the same apps as stack config are
``tests/support/sdk_cases.py``. Two tiers:

- **same meaning**: an app as a user writes it renders a spec equal to the SDK's once empty messages and
  lists, ``runtime_metadata`` (which only the config may set) and the pool name ``default`` (what the SDK
  writes for an app that names no pool) are left out of both;
- **same bytes**: the same app spelling out what the SDK writes implicitly renders the bytes Flyte's app
  service stores for the SDK's spec (protobuf-go's marshalling of it, from the Go judge's corpus).

``tests/fixtures/sdk/ours-comparison.json`` records the SDK's own comparison
(``App._app_specs_are_equal``) run on these specs: it raised on none. The last tests here keep that
record true: every spec it names is still the one ``render`` writes.
"""

from __future__ import annotations

import base64
import json
from functools import cache
from typing import Any, Final

import pytest
from flyteidl2.app import app_definition_pb2 as app_pb
from google.protobuf import json_format, text_format

from flyte_apps.core.plan import plan_stack
from flyte_apps.core.spec import decode_spec
from tests.support.config import REPO_ROOT
from tests.support.sdk_cases import NATURAL, SdkCase, cases, without_empty
from tests.support.upstream_kservice import go_bytes

FIXTURES: Final = REPO_ROOT / "tests" / "fixtures" / "sdk"
OURS_COMPARISON: Final = FIXTURES / "ours-comparison.json"
EXAMPLE_STACK: Final = REPO_ROOT / "Pulumi.dev.yaml"
CASES: Final = cases()
MEANING: Final = [case for case in CASES if case.tier == "meaning"]
BYTES: Final = [case for case in CASES if case.tier == "bytes"]


def sdk_fixtures() -> list[str]:
    return sorted(
        path.stem
        for path in FIXTURES.glob("*.json")
        if path.name not in ("comparison.json", OURS_COMPARISON.name)
    )


@cache
def sdk_spec(name: str) -> app_pb.Spec:
    path = FIXTURES / f"{name}.json"
    if not path.is_file():
        pytest.skip(f"{path} is missing (tests/sdk/make_fixtures.py writes it)")
    return app_pb.Spec.FromString(base64.b64decode(json.loads(path.read_text(encoding="utf-8"))["spec_b64"]))


def ours(case: SdkCase) -> app_pb.Spec:
    return decode_spec(case.spec_b64())


def meaning(spec: app_pb.Spec, *, keep_runtime: bool, unordered_env: bool) -> dict[str, Any]:
    """What a spec means, for the first tier: its JSON form (which leaves out default scalars) less
    empty messages and lists, less ``runtime_metadata`` unless kept, less the pool name ``default``."""
    data: dict[str, Any] = json_format.MessageToDict(spec, preserving_proto_field_name=True)
    if not keep_runtime:
        data.pop("runtime_metadata", None)
    if data.get("cluster_pool") == "default":
        del data["cluster_pool"]
    if unordered_env and "container" in data:
        data["container"]["env"] = sorted(data["container"].get("env", []), key=lambda var: var["key"])
    return dict(without_empty(data))


def test_every_sdk_fixture_has_a_case_in_each_tier() -> None:
    names = sdk_fixtures()
    assert names, "no SDK fixtures"
    assert sorted(NATURAL) == names
    assert sorted(case.fixture for case in BYTES) == names
    assert {case.fixture for case in MEANING} == set(names)


@pytest.mark.parametrize("case", MEANING, ids=[case.id for case in MEANING])
def test_an_app_written_as_stack_config_means_what_it_means_to_the_sdk(case: SdkCase) -> None:
    keep_runtime = "runtimeMetadata" in case.app
    expected = meaning(sdk_spec(case.fixture), keep_runtime=keep_runtime, unordered_env=case.unordered_env)
    assert meaning(ours(case), keep_runtime=keep_runtime, unordered_env=case.unordered_env) == expected


@pytest.mark.parametrize("case", BYTES, ids=[case.id for case in BYTES])
def test_an_app_spelling_out_the_sdks_defaults_renders_the_bytes_flyte_stores_for_the_sdks_spec(
    case: SdkCase,
) -> None:
    # The SDK sends its spec to Flyte's app service, which stores its own (protobuf-go's) marshalling.
    theirs = sdk_spec(case.fixture)
    rendered = base64.b64decode(case.spec_b64())
    assert text_format.MessageToString(decode_spec(case.spec_b64())) == text_format.MessageToString(theirs)
    assert rendered == go_bytes(theirs)


def test_runtime_metadata_is_never_stamped_by_the_program() -> None:
    """The SDK stamps its version into every spec; a program that did so would roll every app's
    Revision on each upgrade. Only the config writes it."""
    plain = next(case for case in MEANING if case.fixture == "plain")
    assert not ours(plain).HasField("runtime_metadata")
    assert sdk_spec("plain").HasField("runtime_metadata")


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_every_spec_we_render_for_the_sdk_apps_carries_ingress(case: SdkCase) -> None:
    assert ours(case).HasField("ingress")


def test_every_spec_of_the_example_stack_carries_ingress(example_config: dict[str, Any]) -> None:
    plan = plan_stack(example_config)
    assert plan.apps
    for app in plan.apps:
        assert decode_spec(app.blob.b64).HasField("ingress"), app.key


# --- the SDK's own comparison on our specs (tests/fixtures/sdk/ours-comparison.json) --------------


@cache
def ours_comparison() -> dict[str, Any]:
    if not OURS_COMPARISON.is_file():
        pytest.skip(f"{OURS_COMPARISON} is missing (tests/sdk/README.md says how to make it)")
    data: dict[str, Any] = json.loads(OURS_COMPARISON.read_text(encoding="utf-8"))
    return data


def test_the_sdks_comparison_raised_on_none_of_our_specs() -> None:
    report = ours_comparison()
    assert report["failed"] == []
    assert report["checked"] == len(CASES)
    for entry in report["results"]:
        assert entry["has_ingress"], entry["file"]
        assert entry["self"] == {"returns": True}, entry["file"]
        assert "returns" in entry["sdk_replaces_ours"], entry["file"]
        if entry["tier"] == "bytes":
            # Byte for byte the SDK's spec: an SDK redeploy of the same app is a no-op.
            assert entry["sdk_replaces_ours"] == {"returns": True}, entry["file"]


def test_the_recorded_comparison_is_of_the_specs_render_writes_today() -> None:
    """A change to rendering that changes one of these specs must re-run the SDK's comparison
    (``tests/sdk/README.md``): the record cannot go stale silently."""
    recorded = {entry["file"].removesuffix(".json"): entry for entry in ours_comparison()["results"]}
    assert sorted(recorded) == sorted(case.id for case in CASES)
    for case in CASES:
        entry = recorded[case.id]
        assert (entry["sdk_fixture"], entry["tier"]) == (case.fixture, case.tier), case.id
        assert entry["spec_b64"] == case.spec_b64(), (
            f"{case.id}: render writes another spec than was compared"
        )
