"""App secrets: config, spec, and the annotations Flyte's pod webhook decodes (reference (b), (c)5.6)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flyteidl2.core import security_pb2
from google.protobuf import text_format

from flyte_apps.core.errors import ConfigError
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.secrets import decode_secret_text, encode_secret, secret_text
from flyte_apps.core.spec import decode_spec
from flyte_apps.core.stack import load_stack_config
from tests.support.config import minimal_config, minimal_kservice

MY_SECRET = {"group": "my_group", "key": "my_key", "mountRequirement": "ENV_VAR"}


def template_metadata(**app: Any) -> dict[str, Any]:
    return minimal_kservice(**app)["spec"]["template"]["metadata"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("secret", "encoded"),
    [
        # Vectors from Flyte's marshaler_test.go (golang/protobuf text form, Flyte's Base32 alphabet).
        (security_pb2.Secret(key="my_key"), "nnsxsoraejwxsx2lmv3secq"),
        (security_pb2.Secret(group=";':/\\"), "m4zg54lqhiqceozhhixvyxbcbi"),
    ],
)
def test_secret_encoding_matches_flyte_vectors(secret: security_pb2.Secret, encoded: str) -> None:
    assert encode_secret(secret) == encoded


def test_secret_text_form_uses_enum_names_and_octal_escapes() -> None:
    secret = security_pb2.Secret(
        group="é\n", key="k", mount_requirement=security_pb2.Secret.FILE, env_var="E"
    )
    assert secret_text(secret) == 'group: "\\303\\251\\n"\nkey: "k"\nmount_requirement: FILE\nenv_var: "E"\n'


def test_secret_annotation_round_trips_into_the_proto() -> None:
    metadata = template_metadata(
        secrets=[MY_SECRET, {"key": "other", "groupVersion": "v2", "envVar": "OTHER"}]
    )
    decoded = [
        text_format.Parse(
            decode_secret_text(metadata["annotations"][f"flyte.secrets/s{i}"]), security_pb2.Secret()
        )
        for i in range(2)
    ]
    assert decoded == [
        security_pb2.Secret(group="my_group", key="my_key", mount_requirement=security_pb2.Secret.ENV_VAR),
        security_pb2.Secret(key="other", group_version="v2", env_var="OTHER"),
    ]


def test_app_with_secrets_gets_webhook_labels() -> None:
    metadata = template_metadata(secrets=[MY_SECRET])
    assert metadata["labels"] == {
        "organization": "flyte",
        "project": "proj",
        "domain": "dev",
        "inject-flyte-secrets": "true",
    }
    assert list(metadata["annotations"]) == ["flyte.secrets/s0"]


def test_organization_label_is_always_flyte_whatever_the_org() -> None:
    assert template_metadata(org="acme", secrets=[MY_SECRET])["labels"]["organization"] == "flyte"


def test_secrets_are_part_of_the_spec_annotation() -> None:
    plan = plan_stack(minimal_config(secrets=[MY_SECRET]))
    spec = decode_spec(plan.apps[0].kservice["metadata"]["annotations"]["flyte.org/spec"])
    assert [s.key for s in spec.security_context.secrets] == ["my_key"]
    assert spec.security_context.secrets[0].mount_requirement == security_pb2.Secret.ENV_VAR


@pytest.mark.parametrize(
    ("secrets", "path", "message"),
    [
        ([{"key": "k", "mountRequirement": "VOLUME"}], "secrets[0].mountRequirement", "ANY"),
        ([{"key": "  "}], "secrets[0].key", "must not be empty"),
        ([{"group": "g"}], "secrets[0].key", "is required"),
        ([{"key": "a", "envVar": "X"}, {"key": "b", "envVar": "X"}], "secrets[1].envVar", "duplicate"),
        ([{"key": "a", "envVar": "LOG_LEVEL"}], "secrets[0].envVar", "duplicate.*app's env"),
        ([{"key": "a", "envVar": "1BAD"}], "secrets[0].envVar", "not a valid environment variable"),
        ([{"key": "a", "envVar": "FLYTE_INTERNAL_EXECUTION_PROJECT"}], "secrets[0].envVar", "set by Flyte"),
        ([{"key": "a", "mount": "FILE"}], "secrets[0].mount", "valid keys:.*mountRequirement"),
    ],
)
def test_bad_secrets_are_config_errors_with_key_paths(
    secrets: list[dict[str, Any]], path: str, message: str
) -> None:
    raw = minimal_config(secrets=secrets, container={"image": "x:1", "env": {"LOG_LEVEL": "info"}})
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw)
    problems = caught.value.problems
    assert [p.path for p in problems] == [f"flyte-apps:apps[0].{path}"], problems
    assert re.search(message, problems[0].message), problems[0].message
