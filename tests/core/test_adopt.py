"""``flyte_apps.core.adopt``: a live spec -> its stack-config entry, the inverse of ``core.spec``; and
the ``adopt`` key's own rules."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest
from flyteidl2.app import app_definition_pb2 as app_pb
from flyteidl2.core import tasks_pb2

from flyte_apps.core.adopt import ADOPT_UPSERT, LiveApp, adopt_entry
from flyte_apps.core.credentials import looks_like_credential, value_looks_like_credential
from flyte_apps.core.errors import ConfigError
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.spec import decode_spec
from flyte_apps.policy import pod_rules
from tests.support.config import REPO_ROOT, minimal_config
from tests.support.upstream_kservice import go_bytes

SDK: Final = REPO_ROOT / "tests" / "fixtures" / "sdk"
FIXTURES: Final = sorted(
    path.stem for path in SDK.glob("*.json") if "spec_b64" in json.loads(path.read_text())
)


def platform(**settings: Any) -> dict[str, Any]:
    return {"baseDomain": "apps.example.com", "adoptNamespace": True, **settings}


@pytest.mark.parametrize("name", FIXTURES)
def test_every_sdk_spec_becomes_an_entry_that_renders_the_bytes_flyte_stores_for_it(name: str) -> None:
    data = json.loads((SDK / f"{name}.json").read_text())
    ident = data["app_id"]
    adoption = adopt_entry(
        decode_spec(data["spec_b64"]),
        LiveApp(name=ident["name"], project=ident["project"], domain=ident["domain"]),
    )
    assert adoption.refusals == []
    assert adoption.entry["adopt"] is True
    plan = plan_stack({"flyte-apps:platform": platform(), "flyte-apps:apps": [adoption.entry]})
    # What Flyte stores is its own marshalling of the SDK's spec (protobuf-go's bytes, not the SDK's).
    assert plan.apps[0].blob.data == go_bytes(decode_spec(data["spec_b64"]))


def test_fixtures_cover_the_sdk_cases() -> None:
    assert len(FIXTURES) == 28


def test_stopped_and_org_and_mode_are_written() -> None:
    spec = app_pb.Spec()
    spec.container.image = "x:1"
    entry = adopt_entry(spec, LiveApp("a", "p", "d", org="acme", stopped=True), mode=ADOPT_UPSERT).entry
    assert (entry["org"], entry["stopped"], entry["adopt"]) == ("acme", True, "upsert")


@pytest.mark.parametrize(
    ("env", "refused"),
    [
        (("DB_PASSWORD", "s3cr3t-value"), True),
        (("OPENAI_API_KEY", "s3cr3t-value"), True),
        (("DSN", "postgres://u:pw@db/app"), True),
        (("GITHUB", "ghp_" + "a" * 36), True),
        (("TOKEN_URL", "https://auth/token"), False),
        (("LOG_LEVEL", "info"), False),
    ],
)
def test_credential_looking_env_vars_are_refused_and_never_in_the_entry(
    env: tuple[str, str], refused: bool
) -> None:
    spec = app_pb.Spec()
    spec.container.image = "x:1"
    spec.container.env.add(key=env[0], value=env[1])
    adoption = adopt_entry(spec, LiveApp("a", "p", "d"))
    assert bool(adoption.refusals) is refused
    if refused:
        assert adoption.entry == {}
        assert env[1] not in str(adoption.refusals)
        assert "secrets:" in adoption.refusals[0].message


def test_fields_the_config_cannot_say_are_refused_with_their_path() -> None:
    spec = app_pb.Spec()
    spec.container.image = "x:1"
    spec.container.resources.requests.add(name=tasks_pb2.Resources.STORAGE, value="1Gi")
    spec.security_context.run_as.iam_role = "arn:aws:iam::1:role/x"
    spec.creator.user.SetInParent()
    paths = [problem.path for problem in adopt_entry(spec, LiveApp("a", "p", "d")).refusals]
    assert paths == [
        "apps[a].container.resources.requests[0]",
        "apps[a].securityContext.runAs",
        "apps[a].creator",
    ]


def test_the_policy_pack_uses_the_same_credential_predicate() -> None:
    assert pod_rules.looks_like_credential is looks_like_credential
    assert value_looks_like_credential("-----BEGIN RSA PRIVATE KEY-----")
    assert not value_looks_like_credential("https://example.com/docs")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "needs flyte-apps:platform.adoptNamespace: true"),
        ({"adoptNamespace": True, "renderYamlToDirectory": "out"}, "renderYamlToDirectory"),
    ],
)
def test_adopt_needs_an_adopted_namespace_and_a_cluster(settings: dict[str, Any], message: str) -> None:
    config = minimal_config(adopt=True)
    config["flyte-apps:platform"] = settings
    with pytest.raises(ConfigError) as raised:
        plan_stack(config)
    assert [(problem.path, message in problem.message) for problem in raised.value.problems] == [
        ("flyte-apps:apps[0].adopt", True)
    ]


@pytest.mark.parametrize("value", [True, "upsert", False])
def test_adopt_takes_true_upsert_or_false(value: object) -> None:
    config = minimal_config(adopt=value)
    config["flyte-apps:platform"] = {"adoptNamespace": True}
    assert plan_stack(config).apps[0].config.input.adopt == value


def test_adopt_refuses_other_values() -> None:
    config = minimal_config(adopt="yes")
    config["flyte-apps:platform"] = {"adoptNamespace": True}
    with pytest.raises(ConfigError):
        plan_stack(config)
