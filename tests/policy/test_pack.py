"""The policy pack as Pulumi runs it: ``python -u -m pulumi.policy`` runs ``policies/__main__.py`` in a
subprocess, which starts pulumi-policy's gRPC analyzer and prints its port; the tests then talk to it
the way the engine does (GetAnalyzerInfo, Configure, Analyze, AnalyzeStack). Also the pack's project
files and the PR workflow."""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import yaml
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy import EnforcementLevel
from pulumi_policy.proxy import UNKNOWN_OBJECT_VALUE, UNKNOWN_STRING_VALUE

from flyte_apps.core import constants as c
from flyte_apps.policy.pack import PACK_NAME, build_policies
from flyte_apps.policy.registry import RULES, ResourceRule
from flyte_apps.policy.runner import load_policy_config
from tests.support.config import REPO_ROOT, minimal_kservice
from tests.support.hosts import policy_pack_command, running_host

POLICIES = REPO_ROOT / "policies"
LEVELS = {"advisory": analyzer_pb2.ADVISORY, "mandatory": analyzer_pb2.MANDATORY}


@dataclass
class Pack:
    stub: Any


@pytest.fixture(scope="module")
def pack() -> Iterator[Pack]:
    """The pack as Pulumi's Python language host starts it: ``python -u -m pulumi.policy <engine>
    <pack dir>`` in the pack's directory (the project is importable the way the pack's venv installs
    it, here through PYTHONPATH)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
    }
    with (
        running_host(policy_pack_command(POLICIES), cwd=POLICIES, env=env) as host,
        grpc.insecure_channel(host.address) as channel,
    ):
        yield Pack(stub=analyzer_pb2_grpc.AnalyzerStub(channel))


def struct(props: dict[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    json_format.ParseDict(props, message)
    return message


def analyze(pack: Pack, props: dict[str, Any], typ: str = c.TYPE_KSERVICE) -> list[Any]:
    request = analyzer_pb2.AnalyzeRequest(
        type=typ, properties=struct(props), urn=f"urn:x::{typ}::r", name="r"
    )
    return list(pack.stub.Analyze(request, timeout=30).diagnostics)


# --------------------------------------------------------------------------------------------------
# The running pack
# --------------------------------------------------------------------------------------------------


def test_pack_reports_every_rule_with_its_level_and_schema(pack: Pack) -> None:
    info = pack.stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    assert info.name == PACK_NAME == "flyte-apps"
    assert [policy.name for policy in info.policies] == [rule.name for rule in RULES]
    for policy, rule in zip(info.policies, RULES, strict=True):
        assert policy.description == rule.description
        assert policy.enforcementLevel == LEVELS[rule.level.value], rule.name
        expected_type = (
            analyzer_pb2.POLICY_TYPE_RESOURCE
            if isinstance(rule, ResourceRule)
            else analyzer_pb2.POLICY_TYPE_STACK
        )
        assert policy.policy_type == expected_type, rule.name
        assert json_format.MessageToDict(policy.configSchema.properties) == {
            key: dict(schema) for key, schema in rule.settings.items()
        }


def test_pack_reports_a_violation_naming_the_field(pack: Pack) -> None:
    diagnostics = analyze(pack, minimal_kservice(container={"image": "nginx:latest"}))
    by_policy = {d.policyName: d for d in diagnostics}
    assert set(by_policy) == {"image-pinned", "resources-set", "autoscaling-bounded"}
    pinned = by_policy["image-pinned"]
    assert pinned.enforcementLevel == analyzer_pb2.ADVISORY
    assert "spec.template.spec.containers[0].image 'nginx:latest' is not pinned" in pinned.message


def test_pack_passes_a_rendered_app_that_breaks_no_rule(pack: Pack) -> None:
    app = {
        "container": {
            "image": "nginx:1.27",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
        },
        "autoscaling": {"maxReplicas": 3},
    }
    assert analyze(pack, minimal_kservice(**app)) == []


def test_pack_survives_unknown_values_during_preview(pack: Pack) -> None:
    props = minimal_kservice(container={"image": "nginx:latest"})
    props["metadata"]["name"] = UNKNOWN_STRING_VALUE
    props["spec"]["template"]["spec"]["containers"][0]["image"] = UNKNOWN_STRING_VALUE
    props["spec"]["template"]["metadata"] = UNKNOWN_OBJECT_VALUE
    diagnostics = analyze(pack, props)
    # Had a rule raised, pulumi-policy would have reported "can't run policy ... during preview".
    assert not any("during preview" in d.message for d in diagnostics)
    assert {d.policyName for d in diagnostics} == {"resources-set"}


def test_pack_runs_stack_rules_and_names_the_offending_resource(pack: Pack) -> None:
    props = minimal_kservice()
    resources = [
        analyzer_pb2.AnalyzerResource(type=c.TYPE_KSERVICE, properties=struct(props), urn=urn, name=urn[-1])
        for urn in ("urn:x::a", "urn:x::b")
    ]
    response = pack.stub.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=resources), timeout=30)
    (diagnostic,) = response.diagnostics
    assert diagnostic.policyName == "kservice-names-unique"
    assert diagnostic.urn == "urn:x::b"
    assert diagnostic.enforcementLevel == analyzer_pb2.MANDATORY


def test_pack_config_sets_levels_and_settings(pack: Pack) -> None:
    config = analyzer_pb2.PolicyConfig(
        enforcementLevel=analyzer_pb2.MANDATORY, properties=struct({"requireDigest": True})
    )
    pack.stub.Configure(
        analyzer_pb2.ConfigureAnalyzerRequest(policyConfig={"image-pinned": config}), timeout=30
    )
    try:
        diagnostics = analyze(pack, minimal_kservice(container={"image": "nginx:1.27"}))
        (pinned,) = [d for d in diagnostics if d.policyName == "image-pinned"]
        assert pinned.enforcementLevel == analyzer_pb2.MANDATORY
        assert "requireDigest is set" in pinned.message
    finally:
        pack.stub.Configure(analyzer_pb2.ConfigureAnalyzerRequest(), timeout=30)


# --------------------------------------------------------------------------------------------------
# The pack's files
# --------------------------------------------------------------------------------------------------


def test_main_only_builds_the_policy_pack() -> None:
    tree = ast.parse((POLICIES / "__main__.py").read_text(encoding="utf-8"))
    statements = [node for node in tree.body if not isinstance(node, ast.Import | ast.ImportFrom)]
    docstring, call = statements
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    assert isinstance(call.value.func, ast.Name) and call.value.func.id == "PolicyPack"
    assert {keyword.arg for keyword in call.value.keywords} >= {"name", "policies"}


def test_build_policies_gives_one_policy_per_rule() -> None:
    policies = build_policies()
    assert [policy.name for policy in policies] == [rule.name for rule in RULES]
    assert [policy.enforcement_level for policy in policies] == [
        EnforcementLevel(rule.level.value) for rule in RULES
    ]


def test_policy_project_file_declares_a_python_pack_with_its_own_virtualenv() -> None:
    project = yaml.safe_load((POLICIES / "PulumiPolicy.yaml").read_text(encoding="utf-8"))
    assert project["runtime"]["name"] == "python"
    assert project["runtime"]["options"]["virtualenv"] == "venv"
    assert project["description"]


def test_policy_requirements_install_the_project_and_pin_the_sdk() -> None:
    lines = [
        line.strip()
        for line in (POLICIES / "requirements.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert "-e .." in lines
    assert f"pulumi-policy=={version('pulumi-policy')}" in lines
    assert "-c ../requirements.lock" in lines
    lock = (REPO_ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines()
    assert f"pulumi_policy=={version('pulumi-policy')}" in lock


def workflow_jobs() -> dict[str, Any]:
    workflow = yaml.safe_load(
        (REPO_ROOT / ".github" / "workflows" / "policy-review.yml").read_text(encoding="utf-8")
    )
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as true
    assert workflow["env"]["POLICY_CONFIG"] == "policies/policy-config.json"
    jobs: dict[str, Any] = workflow["jobs"]
    return jobs


def test_the_offline_check_runs_on_every_stack_file_for_every_pull_request_without_secrets() -> None:
    job = workflow_jobs()["check"]
    assert "secrets." not in json.dumps(job)
    runs = [step.get("run", "") for step in job["steps"]]
    (check,) = [run for run in runs if "-o github" in run]
    assert "for file in Pulumi.*.yaml" in check
    assert '--policy-config "$POLICY_CONFIG"' in check
    upload = next(
        step for step in job["steps"] if str(step.get("uses", "")).startswith("github/codeql-action")
    )
    assert upload["if"] == "always() && github.event.pull_request.head.repo.full_name == github.repository"
    assert job["permissions"]["security-events"] == "write"
    python = next(
        step for step in job["steps"] if str(step.get("uses", "")).startswith("actions/setup-python")
    )
    assert python["with"]["python-version"] == "3.11"


def test_preview_runs_the_pack_on_changed_stacks_only_where_the_secrets_exist() -> None:
    job = workflow_jobs()["preview"]
    assert job["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"
    guarded = [step for step in job["steps"] if step.get("if", "").startswith("env.HAS_SECRETS == 'true'")]
    assert len(guarded) == len(job["steps"]) - 1  # all but the step that says why it skipped
    runs = [step.get("run", "") for step in job["steps"]]
    assert any("git diff --name-only" in run and "Pulumi.*.yaml" in run for run in runs)
    (preview,) = [run for run in runs if "pulumi preview --stack" in run]
    assert "--policy-pack policies" in preview
    assert '--policy-pack-config "$POLICY_CONFIG"' in preview
    assert any(
        step.get("env", {}).get("KUBECONFIG_CONTENT") == "${{ secrets.KUBECONFIG }}" for step in job["steps"]
    )


def test_the_shared_policy_config_is_valid_for_check() -> None:
    settings = load_policy_config(REPO_ROOT / "policies" / "policy-config.json")
    assert settings["no-plaintext-credentials"].level.value == "mandatory"
