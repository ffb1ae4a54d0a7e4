"""Every field of ``flyteidl2.app.Spec`` a client sets has a stack-config key, with presence preserved
(issue 12; decision 9 in DESIGN.md): the mapping of each key, what a key given empty writes, what is
never written unless asked, and the problems of the new keys, by key path and all at once."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final, get_args

import pytest
from flyteidl2.app import app_definition_pb2 as app_pb
from flyteidl2.common import runtime_version_pb2

from flyte_apps.core.config.models import RuntimeType
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.spec import build_spec, decode_spec
from flyte_apps.core.stack import load_stack_config
from tests.support.config import minimal_config

APP: Final = "flyte-apps:apps[0]"


def spec(**app: Any) -> app_pb.Spec:
    return build_spec(load_stack_config(minimal_config(**app)).apps[0])


def rendered(**app: Any) -> app_pb.Spec:
    """The spec as ``render`` writes it into ``flyte.org/spec``."""
    return decode_spec(plan_stack(minimal_config(**app)).apps[0].blob.b64)


def problems(raw: dict[str, Any]) -> list[ConfigProblem]:
    with pytest.raises(ConfigError) as caught:
        load_stack_config(raw)
    return caught.value.problems


def assert_problems(found: Sequence[ConfigProblem], expected: Sequence[tuple[str, str]]) -> None:
    """Exactly the expected key paths, each with a message matching its pattern."""
    listed = "\n".join(map(str, found))
    assert sorted(p.path for p in found) == sorted(path for path, _ in expected), listed
    for path, pattern in expected:
        assert any(re.search(pattern, p.message) for p in found if p.path == path), (
            f"{path} /{pattern}/\n{listed}"
        )


# --- ingress: always there ------------------------------------------------------------------------


def test_a_public_app_with_nothing_set_carries_an_empty_ingress() -> None:
    """Flyte's SDK asserts ``old_ingress is not None`` on a stored spec (flyte/remote/_app.py): an app
    deployed without ``ingress`` broke ``flyte deploy`` of the same app."""
    found = rendered()
    assert found.HasField("ingress")
    assert found.ingress == app_pb.IngressConfig()


def test_ingress_carries_visibility_subdomain_and_cname() -> None:
    raw = minimal_config(
        visibility="cluster-local", ingress={"subdomain": "churn", "cname": "churn.acme.dev"}
    )
    raw["flyte-apps:platform"] = {"baseDomain": "apps.acme.dev"}
    found = build_spec(load_stack_config(raw).apps[0]).ingress
    assert (found.private, found.subdomain, found.cname) == (True, "churn", "churn.acme.dev")


def test_an_empty_ingress_key_writes_the_same_as_none() -> None:
    assert spec(ingress={}).SerializeToString(deterministic=True) == spec().SerializeToString(
        deterministic=True
    )


# --- presence of message fields ------------------------------------------------------------------

PRESENT_BUT_EMPTY: Final = [
    pytest.param({"profile": {}}, "profile", id="profile"),
    pytest.param({"inputs": []}, "inputs", id="inputs"),
    pytest.param({"runtimeMetadata": {}}, "runtime_metadata", id="runtime-metadata"),
    pytest.param({"images": []}, "images", id="images"),
    pytest.param({"timeouts": {}}, "timeouts", id="timeouts"),
    pytest.param({"autoscaling": {}}, "autoscaling", id="autoscaling"),
]


@pytest.mark.parametrize(("app", "field"), PRESENT_BUT_EMPTY)
def test_a_key_given_empty_writes_its_message_present_and_empty(app: dict[str, Any], field: str) -> None:
    found = spec(**app)
    assert found.HasField(field)
    assert getattr(found, field).ByteSize() == 0
    assert not spec().HasField(field), f"{field} must not be written when its key is absent"


def test_empty_container_resources_are_present_and_empty() -> None:
    found = spec(container={"image": "nginx:1.27", "resources": {}}).container
    assert found.HasField("resources")
    assert found.resources.ByteSize() == 0
    assert not spec().container.HasField("resources")


def test_an_empty_service_account_writes_an_empty_run_as() -> None:
    """What the SDK writes for an app with secrets and no service account (``run_as {}``)."""
    context = spec(serviceAccount="", secrets=[{"key": "db-password"}]).security_context
    assert context.HasField("run_as")
    assert context.run_as.ByteSize() == 0
    assert not spec(secrets=[{"key": "db-password"}]).security_context.HasField("run_as")


def test_an_empty_service_account_renders_the_platform_default_on_the_pod() -> None:
    raw = minimal_config(serviceAccount="")
    raw["flyte-apps:platform"] = {"defaultServiceAccount": "flyte-apps"}
    pod = plan_stack(raw).apps[0].kservice["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "flyte-apps"


def test_runtime_metadata_is_written_only_when_the_config_gives_it() -> None:
    assert not rendered().HasField("runtime_metadata")
    found = spec(
        runtimeMetadata={"type": "UNION_SDK", "version": "0.1.2", "flavor": "python"}
    ).runtime_metadata
    assert (found.type, found.version, found.flavor) == (
        runtime_version_pb2.RuntimeMetadata.UNION_SDK,
        "0.1.2",
        "python",
    )


def test_runtime_types_are_the_protos() -> None:
    assert set(get_args(RuntimeType)) == set(runtime_version_pb2.RuntimeMetadata.RuntimeType.keys())


# --- the fields Flyte's app service stores only ----------------------------------------------------


def test_profile_maps_description_and_icon_url() -> None:
    found = spec(
        profile={
            "type": "streamlit",
            "name": "Churn",
            "description": "Weekly churn",
            "iconUrl": "https://x/i.png",
        }
    ).profile
    assert (found.type, found.name, found.short_description, found.icon_url) == (
        "streamlit",
        "Churn",
        "Weekly churn",
        "https://x/i.png",
    )


def test_links_keep_their_order_and_relative_flag() -> None:
    found = spec(
        links=[{"path": "/docs", "title": "API docs", "isRelative": True}, {"path": "https://g/d"}]
    ).links
    assert [(link.path, link.title, link.is_relative) for link in found] == [
        ("/docs", "API docs", True),
        ("https://g/d", "", False),
    ]


def test_each_input_kind_fills_its_member_of_the_oneof() -> None:
    found = spec(
        inputs=[
            {"name": "model", "value": "s3://models/churn/v7"},
            {
                "name": "backend",
                "app": {"project": "ml", "domain": "production", "name": "api", "org": "acme"},
            },
            {"name": "weights", "artifact": {"key": {"project": "ml", "name": "w"}, "version": "v3"}},
        ]
    ).inputs.items
    assert [item.WhichOneof("value") for item in found] == ["string_value", "app_id", "artifact_id"]
    assert found[0].string_value == "s3://models/churn/v7"
    assert found[1].app_id == app_pb.Identifier(org="acme", project="ml", domain="production", name="api")
    assert (found[2].artifact_id.key.project, found[2].artifact_id.key.name) == ("ml", "w")
    assert found[2].artifact_id.version == "v3"


@pytest.mark.parametrize(
    ("requires_auth", "anonymous", "has_context"),
    [(False, True, True), (True, False, False), (None, False, False)],
    ids=["false-allows-anonymous", "true-writes-nothing", "absent-writes-nothing"],
)
def test_requires_auth(requires_auth: bool | None, anonymous: bool, has_context: bool) -> None:
    app = {} if requires_auth is None else {"requiresAuth": requires_auth}
    found = spec(**app)
    assert found.HasField("security_context") is has_context
    assert found.security_context.allow_anonymous is anonymous


def test_cluster_pool_cluster_and_images() -> None:
    found = spec(
        clusterPool="gpu-pool", cluster="eu-1", images=[{"tag": "ghcr.io/x:1", "buildJobUrl": "https://b/1"}]
    )
    assert (found.cluster_pool, found.cluster) == ("gpu-pool", "eu-1")
    assert [(image.tag, image.build_job_url) for image in found.images.images] == [
        ("ghcr.io/x:1", "https://b/1")
    ]


def test_stored_only_fields_change_the_spec_not_the_revision() -> None:
    """Flyte's app service ignores them (reference (f)): only the spec annotations differ."""
    plain = plan_stack(minimal_config()).apps[0].kservice
    rich = (
        plan_stack(
            minimal_config(
                profile={"type": "fastapi"},
                links=[{"path": "/docs"}],
                inputs=[{"name": "a", "value": "b"}],
                requiresAuth=False,
                clusterPool="gpu-pool",
                cluster="eu-1",
                runtimeMetadata={"type": "OTHER"},
            )
        )
        .apps[0]
        .kservice
    )
    assert rich["spec"] == plain["spec"]
    assert rich["metadata"]["labels"] == plain["metadata"]["labels"]
    assert (
        rich["metadata"]["annotations"]["flyte.org/spec-sha"]
        != plain["metadata"]["annotations"]["flyte.org/spec-sha"]
    )


# --- problems, by key path, all at once ---------------------------------------------------------------


def test_schema_problems_of_the_new_keys_come_with_the_rules_of_the_valid_ones() -> None:
    """One pass: keys pydantic refuses (an unknown runtime type, a link without ``path``) and the rules
    of the keys it accepts (every input problem) are reported together."""
    raw = minimal_config(
        profile={"type": "streamlit", "colour": "red"},
        links=[{"title": "no path"}],
        inputs=[{"name": "a"}, {"name": "a", "value": "x"}],
        runtimeMetadata={"type": "PYTHON_SDK"},
        requiresAuth="no",
    )
    assert_problems(
        problems(raw),
        [
            (f"{APP}.profile.colour", r"unknown key 'colour'; valid keys: type, name, description, iconUrl"),
            (f"{APP}.links[0].path", r"^is required$"),
            (f"{APP}.runtimeMetadata.type", r"'OTHER', 'FLYTE_SDK' or 'UNION_SDK' \(got 'PYTHON_SDK'\)"),
            (f"{APP}.requiresAuth", r"valid boolean"),
            (f"{APP}.inputs[0]", r"exactly one of value, app or artifact \(got none\)"),
            (f"{APP}.inputs[1].name", r"duplicate input 'a'"),
        ],
    )


def test_rules_of_the_new_keys_name_each_key() -> None:
    raw = minimal_config(
        profile={"description": "x" * 101},
        links=[{"path": "/ok"}, {"path": ""}],
        inputs=[
            {"name": "none"},
            {"name": "several", "value": "a", "app": {"project": "p", "domain": "d", "name": "n"}},
            {"name": "none", "value": "dup"},
            {"name": "", "value": ""},
            {"name": "bad-app", "app": {"project": "", "domain": "d", "name": "-x-"}},
            {"name": "bad-artifact", "artifact": {"key": {"name": "a b"}, "version": "v/1"}},
        ],
    )
    inputs = f"{APP}.inputs"
    assert_problems(
        problems(raw),
        [
            (f"{APP}.profile.description", r"101 characters; Flyte's app spec allows at most 100"),
            (f"{APP}.links[1].path", r"must not be empty"),
            (f"{inputs}[0]", r"exactly one of value, app or artifact \(got none\)"),
            (f"{inputs}[1]", r"exactly one of value, app or artifact \(got value and app\)"),
            (f"{inputs}[2].name", r"duplicate input 'none' \(also at flyte-apps:apps\[0\]\.inputs\[0\]\)"),
            (f"{inputs}[3].name", r"must not be empty"),
            (f"{inputs}[3].value", r"must not be empty"),
            (f"{inputs}[4].app.project", r"must not be empty"),
            (f"{inputs}[4].app.name", r"'-x-' is not a valid Flyte app name"),
            (f"{inputs}[5].artifact.key.name", r"'a b' may hold only letters"),
            (f"{inputs}[5].artifact.version", r"'v/1' may hold only letters"),
        ],
    )


def test_rules_still_run_when_another_key_of_the_app_is_invalid() -> None:
    """One pass: a pydantic error elsewhere in the app does not hide the input rules."""
    raw = minimal_config(stopped="yes", inputs=[{"name": "a"}])
    assert_problems(
        problems(raw),
        [
            (f"{APP}.stopped", r"valid boolean"),
            (f"{APP}.inputs[0]", r"exactly one of value, app or artifact"),
        ],
    )


def test_an_app_input_naming_an_app_of_the_stack_is_fine_and_another_is_a_warning() -> None:
    raw = minimal_config(
        inputs=[
            {"name": "self", "app": {"project": "proj", "domain": "dev", "name": "myapp"}},
            {"name": "elsewhere", "app": {"project": "ml", "domain": "production", "name": "api"}},
            {
                "name": "other-org",
                "app": {"project": "proj", "domain": "dev", "name": "myapp", "org": "acme"},
            },
        ]
    )
    assert plan_stack(raw).warnings == (
        f"{APP}.inputs[1].app: app ml/production/api is not in this stack (fine if another stack deploys it)",
        f"{APP}.inputs[2].app: app proj/dev/myapp (org 'acme') is not in this stack "
        "(fine if another stack deploys it)",
    )


def test_the_always_present_ingress_adds_two_bytes_to_a_public_apps_spec() -> None:
    """What the CHANGELOG promises: a public app's spec gains ``22 00`` (field 4, length 0) and nothing
    else; a cluster-local app's ``ingress {private: true}`` is what it was."""
    public = spec()
    before = app_pb.Spec()
    before.CopyFrom(public)
    before.ClearField("ingress")
    data, old = public.SerializeToString(deterministic=True), before.SerializeToString(deterministic=True)
    assert len(data) == len(old) + 2
    assert bytes([0x22, 0x00]) in data
    private = spec(visibility="cluster-local")
    assert private.ingress == app_pb.IngressConfig(private=True)
