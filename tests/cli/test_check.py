"""``flyte-apps check``: the rules on the rendered stack, offline, with Pulumi's policy-pack config;
and the bridge: the program's registrations under Pulumi mocks violate exactly what ``check`` prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from components.program import MANAGER_NAME, NAMESPACE_NAME
from flyte_apps.cli.check import register
from flyte_apps.cli.stackfile import read_stack_config
from flyte_apps.core import constants as c
from flyte_apps.core.plan import plan_stack
from flyte_apps.policy.runner import evaluate
from flyte_apps.policy.wire import MANAGER_COMPONENT_NAME, NAMESPACE_LOGICAL_NAME, WireResource, to_wire
from tests.support.cli import command_app, without_locations
from tests.support.config import REPO_ROOT, minimal_config, write_stack
from tests.support.manager import MANAGER_IMAGE
from tests.support.pulumi_harness import install, run_program

KSVC = c.TYPE_KSERVICE
NGINX_LATEST = (
    "spec.template.spec.containers[0].image 'nginx:latest' is not pinned: ':latest' moves; name a version "
    "tag or a digest"
)
NO_RESOURCES = (
    "spec.template.spec.containers[0].resources does not set requests.cpu, requests.memory, limits.cpu, "
    "limits.memory"
)
UNBOUNDED = (
    "spec.template.metadata.annotations['autoscaling.knative.dev/max-scale'] is not set, so the public app "
    "scales without bound; set autoscaling.maxReplicas"
)


@pytest.fixture
def app() -> typer.Typer:
    """A typer app with only ``check`` registered."""
    return command_app(register)


def run(app: typer.Typer, *args: str) -> Any:
    return CliRunner().invoke(app, ["check", *args])


def write_policy(tmp_path: Path, content: object) -> Path:
    path = tmp_path / "policy.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def nginx_config() -> dict[str, Any]:
    """One app on ``nginx:latest`` with no resources and no max scale: three advisory violations."""
    return minimal_config(container={"image": "nginx:latest"})


def mixed_config() -> dict[str, Any]:
    """Advisory violations plus a mandatory one (a request timeout above Knative's default maximum),
    and a credential among the platform's default env vars."""
    config = minimal_config(container={"image": "nginx:latest"}, timeouts={"request": "900s"})
    config["flyte-apps:platform"] = {"maxRequestTimeout": "3600s", "defaultEnvVars": [{"API_TOKEN": "abc"}]}
    config["flyte-apps:apps"].append(
        {
            "name": "api",
            "container": {
                "image": "ghcr.io/acme/api:1.0",
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            },
            "autoscaling": {"maxReplicas": 3},
            "visibility": "cluster-local",
        }
    )
    return config


def manager_config() -> dict[str, Any]:
    """The mixed stack plus the Flyte manager (with a credential in its default env vars and no CPU
    limit) and the Knative config patches, whose config-defaults raises the maximum to 3600 s."""
    config = mixed_config()
    config["flyte-apps:manager"] = {
        "image": MANAGER_IMAGE,
        "resources": {"limits": {"cpu": None}},
    }
    config["flyte-apps:knative"] = {"manageConfig": True}
    return config


# --------------------------------------------------------------------------------------------------
# The example stack and the output
# --------------------------------------------------------------------------------------------------


def test_dev_stack_passes_with_no_mandatory_violation(app: typer.Typer) -> None:
    result = run(app, "--stack", "dev", "--project-dir", str(REPO_ROOT))
    assert result.exit_code == 0, result.output
    assert "MANDATORY" not in result.stdout
    assert "0 mandatory" in result.stderr


def test_advisory_violations_print_one_line_each_at_the_stack_key_to_fix(
    app: typer.Typer, tmp_path: Path
) -> None:
    stack = write_stack(tmp_path, nginx_config())
    result = run(app, "--config", str(stack))
    assert result.exit_code == 0, result.output
    obj = f"({KSVC} myapp-proj-dev-kservice)"
    # Lines of the file write_stack wrote: 5 `- name: myapp`, 6 `container:`, 7 `image: nginx:latest`.
    assert result.stdout.splitlines() == [
        f"ADVISORY autoscaling-bounded {stack}:5 flyte-apps:apps[0].autoscaling.maxReplicas: "
        f"{UNBOUNDED} {obj}",
        f"ADVISORY image-pinned {stack}:7 flyte-apps:apps[0].container.image: {NGINX_LATEST} {obj}",
        f"ADVISORY resources-set {stack}:6 flyte-apps:apps[0].container.resources: {NO_RESOURCES} {obj}",
    ]
    assert result.stderr.splitlines()[-1] == "0 mandatory, 3 advisory violation(s)"


def test_a_mandatory_violation_exits_1_and_says_how_to_fix_it(app: typer.Typer, tmp_path: Path) -> None:
    stack = write_stack(tmp_path, mixed_config())
    result = run(app, "--config", str(stack))
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert (
        f"MANDATORY request-timeout-within-knative-max {stack}:9 flyte-apps:apps[0].timeouts.request: "
        "spec.template.spec.timeoutSeconds 900 exceeds Knative's max-revision-timeout-seconds 600 (from the "
        "policy setting maxRevisionTimeoutSeconds): Knative rejects the revision. Fix: lower the app's "
        "timeouts.request to at most 600s, or set flyte-apps:knative.manageConfig: true so the stack raises "
        f"Knative's maximum to platform.maxRequestTimeout ({KSVC} myapp-proj-dev-kservice)"
    ) in lines


def test_a_platform_value_every_app_inherits_is_reported_once(app: typer.Typer, tmp_path: Path) -> None:
    stack = write_stack(tmp_path, mixed_config())
    result = run(app, "--config", str(stack))
    credentials = [line for line in result.stdout.splitlines() if "no-plaintext-credentials" in line]
    assert credentials == [
        f"ADVISORY no-plaintext-credentials {stack}:22 flyte-apps:platform.defaultEnvVars: "
        "spec.template.spec.containers[0].env[0] API_TOKEN carries a literal value; deliver it through "
        "the app's secrets (Flyte's secret store), not env or platform.defaultEnvVars "
        f"({KSVC} api-proj-dev-kservice and 1 more)"
    ]


def test_json_output_is_a_list_of_findings_with_their_stack_key_and_line(
    app: typer.Typer, tmp_path: Path
) -> None:
    stack = write_stack(tmp_path, nginx_config())
    result = run(app, "--config", str(stack), "-o", "json")
    assert result.exit_code == 0, result.output
    violations = json.loads(result.stdout)
    assert violations[1] == {
        "policyName": "image-pinned",
        "enforcementLevel": "advisory",
        "resourceType": KSVC,
        "resourceName": "myapp-proj-dev-kservice",
        "message": NGINX_LATEST,
        "stackKey": "flyte-apps:apps[0].container.image",
        "file": str(stack),
        "line": 7,
    }
    assert [v["policyName"] for v in violations] == ["autoscaling-bounded", "image-pinned", "resources-set"]


def test_json_output_of_a_clean_stack_is_an_empty_list(app: typer.Typer) -> None:
    result = run(app, "--stack", "dev", "--project-dir", str(REPO_ROOT), "--output", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == []


# --------------------------------------------------------------------------------------------------
# --policy-config
# --------------------------------------------------------------------------------------------------


def test_all_mandatory_makes_advisories_blocking(app: typer.Typer, tmp_path: Path) -> None:
    policy = write_policy(tmp_path, {"all": "mandatory"})
    result = run(app, "--config", str(write_stack(tmp_path, nginx_config())), "--policy-config", str(policy))
    assert result.exit_code == 1
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["MANDATORY"] * 3


def test_a_policys_own_level_wins_over_all(app: typer.Typer, tmp_path: Path) -> None:
    policy = write_policy(
        tmp_path, {"all": "mandatory", "image-pinned": "advisory", "resources-set": "disabled"}
    )
    result = run(app, "--config", str(write_stack(tmp_path, nginx_config())), "--policy-config", str(policy))
    assert [line.split()[:2] for line in result.stdout.splitlines()] == [
        ["MANDATORY", "autoscaling-bounded"],
        ["ADVISORY", "image-pinned"],
    ]


def test_require_digest_setting_reaches_the_rule(app: typer.Typer, tmp_path: Path) -> None:
    policy = write_policy(
        tmp_path, {"image-pinned": {"enforcementLevel": "mandatory", "requireDigest": True}}
    )
    result = run(app, "--stack", "dev", "--project-dir", str(REPO_ROOT), "--policy-config", str(policy))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert all(
        line.startswith("MANDATORY image-pinned ") and "requireDigest is set" in line for line in lines
    )
    workloads = {
        to_wire(obj, stack="dev").name
        for obj in plan_stack(read_stack_config(project_dir=REPO_ROOT, stack="dev")).objects()
        if (obj.manifest["apiVersion"], obj.kind)
        in ((c.KNATIVE_API_VERSION, "Service"), ("apps/v1", "Deployment"))
    }
    # Each line ends with the object it was found in: "(<type token> <logical name>)".
    assert {line.rsplit(" ", 1)[1].rstrip(")") for line in lines} == workloads


@pytest.mark.parametrize("level", ["disabled", {"enforcementLevel": "disabled"}])
def test_disabled_rules_do_not_run(app: typer.Typer, tmp_path: Path, level: object) -> None:
    policy = write_policy(tmp_path, {"image-pinned": level, "resources-set": "disabled"})
    result = run(app, "--config", str(write_stack(tmp_path, nginx_config())), "--policy-config", str(policy))
    assert result.exit_code == 0
    assert [line.split()[1] for line in result.stdout.splitlines()] == ["autoscaling-bounded"]


def test_everything_disabled_prints_nothing(app: typer.Typer, tmp_path: Path) -> None:
    policy = write_policy(tmp_path, {"all": "disabled"})
    result = run(app, "--config", str(write_stack(tmp_path, mixed_config())), "--policy-config", str(policy))
    assert (result.exit_code, result.stdout) == (0, "")


def test_remediate_counts_as_mandatory(app: typer.Typer, tmp_path: Path) -> None:
    policy = write_policy(tmp_path, {"image-pinned": "remediate"})
    stack = write_stack(tmp_path, nginx_config())
    result = run(app, "--config", str(stack), "--policy-config", str(policy))
    assert result.exit_code == 1
    assert (
        f"MANDATORY image-pinned {stack}:7 flyte-apps:apps[0].container.image: {NGINX_LATEST} "
        f"({KSVC} myapp-proj-dev-kservice)"
    ) in result.stdout.splitlines()


def test_max_revision_timeout_setting_raises_the_limit(app: typer.Typer, tmp_path: Path) -> None:
    policy = write_policy(
        tmp_path, {"request-timeout-within-knative-max": {"maxRevisionTimeoutSeconds": 3600}}
    )
    result = run(app, "--config", str(write_stack(tmp_path, mixed_config())), "--policy-config", str(policy))
    assert result.exit_code == 0, result.output
    assert "request-timeout-within-knative-max" not in result.stdout


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        (
            {"image-pined": "mandatory"},
            "image-pined: unknown policy 'image-pined'; did you mean 'image-pinned'?",
        ),
        (
            {"image-pinned": {"requireDigests": True}},
            "image-pinned.requireDigests: unknown setting 'requireDigests'; did you mean 'requireDigest'?",
        ),
        (
            {"image-pinned": {"requireDigest": "yes"}},
            'image-pinned.requireDigest: must be a boolean, not "yes"',
        ),
        (
            {"request-timeout-within-knative-max": {"maxRevisionTimeoutSeconds": 0}},
            "request-timeout-within-knative-max.maxRevisionTimeoutSeconds: 0 is below the minimum 1",
        ),
        (
            {"no-plaintext-credentials": {"allowedNames": ["OK", 3]}},
            "no-plaintext-credentials.allowedNames: item 1 must be a string, not 3",
        ),
        (
            {"all": "blocking"},
            'all.enforcementLevel: "blocking" is not one of advisory, mandatory, remediate, disabled',
        ),
        ({"resources-set": 3}, "resources-set: must be an enforcement level or an object, not 3"),
        (["all"], "must be a JSON object of policy names (or 'all') to a level or settings"),
        ("{not json", "is not valid JSON"),
    ],
)
def test_bad_policy_config_exits_2_naming_the_key(
    app: typer.Typer, tmp_path: Path, content: object, complaint: str
) -> None:
    policy = write_policy(tmp_path, content)
    result = run(app, "--stack", "dev", "--project-dir", str(REPO_ROOT), "--policy-config", str(policy))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"error: {policy}" in result.stderr
    assert complaint in result.stderr


def test_every_policy_config_problem_is_reported_at_once(app: typer.Typer, tmp_path: Path) -> None:
    policy = write_policy(tmp_path, {"nope": "mandatory", "image-pinned": {"requireDigest": 1}})
    result = run(app, "--stack", "dev", "--project-dir", str(REPO_ROOT), "--policy-config", str(policy))
    assert result.exit_code == 2
    assert len([line for line in result.stderr.splitlines() if line.startswith("error: ")]) == 2


def test_missing_policy_config_exits_2(app: typer.Typer, tmp_path: Path) -> None:
    missing = tmp_path / "absent.json"
    result = run(app, "--stack", "dev", "--project-dir", str(REPO_ROOT), "--policy-config", str(missing))
    assert result.exit_code == 2
    assert f"error: {missing}: policy config file not found" in result.stderr


# --------------------------------------------------------------------------------------------------
# Stack config errors
# --------------------------------------------------------------------------------------------------


def test_stack_and_config_together_exit_2(app: typer.Typer, tmp_path: Path) -> None:
    result = run(app, "--stack", "dev", "--config", str(write_stack(tmp_path, nginx_config())))
    assert result.exit_code == 2
    assert "error: give --stack or --config, not both" in result.stderr


def test_bad_stack_config_exits_2_with_its_problems(app: typer.Typer, tmp_path: Path) -> None:
    result = run(app, "--config", str(write_stack(tmp_path, minimal_config(container={"image": ""}))))
    assert result.exit_code == 2
    assert "error: flyte-apps:apps[0].container.image: must not be empty" in without_locations(result.stderr)
    assert result.stdout == ""


def test_unknown_stack_exits_2(app: typer.Typer) -> None:
    result = run(app, "--stack", "nope", "--project-dir", str(REPO_ROOT))
    assert result.exit_code == 2
    assert "stack config file not found" in result.stderr


# --------------------------------------------------------------------------------------------------
# The bridge to the Pulumi program
# --------------------------------------------------------------------------------------------------


def test_logical_names_are_the_programs() -> None:
    assert NAMESPACE_LOGICAL_NAME == NAMESPACE_NAME
    assert MANAGER_COMPONENT_NAME == MANAGER_NAME


def registered_as_wire(config: dict[str, Any]) -> list[WireResource]:
    """Run ``__main__.py`` under mocks; every registration as the pack would receive it."""
    capture, _ = install(config)
    run_program()
    return [WireResource(r.typ, r.name, r.inputs, r.urn) for r in capture.registered]


@pytest.mark.parametrize("adopt", [False, True], ids=["created-namespace", "adopted-namespace"])
def test_check_sees_each_object_as_the_program_registers_it(adopt: bool) -> None:
    config = manager_config()
    config["flyte-apps:platform"]["adoptNamespace"] = adopt
    registered = {(r.resource_type, r.name): r.props for r in registered_as_wire(config)}
    objects = list(plan_stack(config).objects())
    assert objects, "the stack renders objects"
    for obj in objects:
        wire = to_wire(obj, stack="dev")
        assert (wire.resource_type, wire.name) in registered, (
            f"{wire.resource_type} {wire.name} is not registered"
        )
        assert registered[(wire.resource_type, wire.name)] == wire.props


@pytest.mark.parametrize(
    "config",
    [nginx_config(), mixed_config(), manager_config()],
    ids=["nginx-latest", "mixed", "with-manager"],
)
def test_rules_on_the_programs_registrations_find_what_check_prints(
    app: typer.Typer, tmp_path: Path, config: dict[str, Any]
) -> None:
    from_program = evaluate(registered_as_wire(config))
    result = run(app, "--config", str(write_stack(tmp_path, config, "Pulumi.dev.yaml")), "-o", "json")
    from_check = json.loads(result.stdout)
    assert from_check, "the config was meant to violate something"
    # Each finding is one violation plus the same one in other objects (alsoIn); unfold them.
    as_violations = [
        {
            key: finding[key]
            for key in ("policyName", "enforcementLevel", "resourceType", "resourceName", "message")
        }
        for finding in from_check
    ] + [
        {**{key: finding[key] for key in ("policyName", "enforcementLevel", "message")}, **other}
        for finding in from_check
        for other in finding.get("alsoIn", [])
    ]
    assert sorted(json.dumps(v, sort_keys=True) for v in as_violations) == sorted(
        json.dumps(v.as_json(), sort_keys=True) for v in from_program
    )


def test_a_stack_too_large_for_pulumi_to_hand_to_the_program_is_a_config_error(
    app: typer.Typer, tmp_path: Path
) -> None:
    """Pulumi puts the whole config into one environment variable, which Linux caps at 128 KiB: 300
    apps of this size do not fit, and `check` says so (where `pulumi preview` would fail to start)."""
    config = minimal_config()
    config["flyte-apps:apps"] = [
        {"name": f"app-{i:03d}", "container": {"image": "nginx:1.27", "env": {"GREETING": "x" * 400}}}
        for i in range(300)
    ]
    result = run(app, "--config", str(write_stack(tmp_path, config)))
    assert result.exit_code == 2, result.output
    assert "flyte-apps:apps" in result.output
    assert "in one environment variable (PULUMI_CONFIG); Linux allows 128 KiB" in result.output
    fewer = dict(config, **{"flyte-apps:apps": config["flyte-apps:apps"][:100]})
    assert run(app, "--config", str(write_stack(tmp_path, fewer))).exit_code == 0


def test_a_stack_too_large_for_pulumi_is_reported_with_the_files_other_problems(
    app: typer.Typer, tmp_path: Path
) -> None:
    config = minimal_config()
    config["flyte-apps:apps"] = [
        {"name": f"app-{i:03d}", "container": {"image": "nginx:1.27", "env": {"GREETING": "x" * 400}}}
        for i in range(300)
    ]
    config["flyte-apps:apps"][7]["replicas"] = 2
    result = run(app, "--config", str(write_stack(tmp_path, config)))
    assert result.exit_code == 2, result.output
    assert "flyte-apps:apps[7].replicas: unknown key 'replicas'" in result.output
    assert "in one environment variable (PULUMI_CONFIG)" in result.output
