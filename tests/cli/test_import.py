"""`flyte-apps import` end to end (real client, fake API server): live KServices built as Flyte's app
service builds them ((c)5, ``tests.support.upstream_kservice``) from specs Flyte's SDK wrote, imported
into a stack file, rendered again and compared byte for byte; then the program under Pulumi mocks."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Final

import pytest
from flyteidl2.app import app_definition_pb2 as app_pb
from typer.testing import CliRunner, Result

from flyte_apps.cli import import_apps as import_command
from flyte_apps.cli import status as status_command
from flyte_apps.cli.stackfile import plan_stack_files, read_stack_config
from flyte_apps.core import constants as c
from flyte_apps.core.adopt_check import compare_kservice
from tests.fakes.kube_api import FakeKubeApi
from tests.fakes.kube_semantics import KSERVICES
from tests.support.cli import command_app
from tests.support.config import REPO_ROOT
from tests.support.pulumi_harness import install, run_program
from tests.support.tokens import TYPE_PROVIDER
from tests.support.upstream_kservice import NAMESPACE, DataPlane, stop, upstream_kservice

SDK: Final = REPO_ROOT / "tests" / "fixtures" / "sdk"
EXACT_FIXTURES: Final = (
    "plain",
    "env",
    "resources",
    "secrets",
    "secrets-service-account",
    "public",
    "pod-template",
    "profile",
    "links",
    "inputs",
    "inputs-artifact",
    "full",
    "timeout",
    "autoscaling-concurrency",
)
GPU_FIXTURE: Final = "gpu"
STACK: Final = """\
# A team's stack: this comment, the key order and the other app must survive an import.
config:
  flyte-apps:platform:
    namespace: flyte   # where Flyte runs its apps
    baseDomain: apps.example.com
  flyte-apps:project: other
  flyte-apps:domain: staging
  flyte-apps:apps:
    # declared by hand
    - name: handmade
      container: {image: "ghcr.io/acme/handmade:1.0"}
"""
SECRET_VALUE: Final = "hunter2-not-for-files"


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SDK / f"{name}.json").read_text())
    return data


def deploy(server: FakeKubeApi, name: str, *, stopped: bool = False, plane: DataPlane | None = None) -> None:
    data = fixture(name)
    ident = data["app_id"]
    manifest = upstream_kservice(
        data["spec_b64"], ident["project"], ident["domain"], ident["name"], plane=plane
    )
    server.create(KSERVICES, stop(manifest) if stopped else manifest, manifest["metadata"]["namespace"])


def deploy_spec(server: FakeKubeApi, name: str, spec: app_pb.Spec) -> None:
    b64 = base64.b64encode(spec.SerializeToString(deterministic=True)).decode()
    manifest = upstream_kservice(b64, "proj", "dev", name)
    server.create(KSERVICES, manifest, NAMESPACE)


def stack_file(tmp_path: Path, text: str = STACK) -> Path:
    path = tmp_path / "Pulumi.team.yaml"
    path.write_text(text)
    return path


def run(server: FakeKubeApi, path: Path, *args: str) -> Result:
    assert server.kubeconfig_path is not None
    cli = ["import", *args, "--config", str(path), "--kubeconfig", str(server.kubeconfig_path)]
    return CliRunner().invoke(command_app(import_command.register), cli)


def live(server: FakeKubeApi, name: str) -> dict[str, Any]:
    found = server.get(KSERVICES, NAMESPACE, name)
    assert found is not None
    return found


def verdicts(result: Result) -> dict[str, str]:
    """Each app's verdict line (``proj/dev/x: exact``); a dry run's YAML entries are not verdicts."""
    lines = [line for line in result.stdout.splitlines() if ": " in line and not line.startswith(("-", " "))]
    return {line.split(": ")[0]: line.split(": ")[1].split(" (")[0] for line in lines}


def test_import_writes_apps_that_render_the_live_objects_byte_for_byte(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    for name in EXACT_FIXTURES:
        deploy(kube_server, name)
    deploy(kube_server, "port", stopped=True)  # stopped through Flyte
    path = stack_file(tmp_path)
    result = run(kube_server, path)
    assert result.exit_code == 0, result.stderr
    assert set(verdicts(result).values()) == {"exact"}, result.stdout
    assert len(verdicts(result)) == len(EXACT_FIXTURES) + 1
    text = path.read_text()
    # Everything the file held is still there, in its order, with the namespace now adopted.
    assert text.startswith(
        STACK.replace("apps.example.com\n", "apps.example.com\n    adoptNamespace: true\n", 1)
    )
    assert "# declared by hand" in text and "# where Flyte runs its apps" in text
    plan, _ = plan_stack_files(project_dir=tmp_path, config_file=path)
    assert plan.platform.settings.adopt_namespace
    adopted = [app for app in plan.apps if app.config.input.adopt]
    assert len(adopted) == len(EXACT_FIXTURES) + 1
    assert plan.apps[0].key == "other/staging/handmade"
    for app in adopted:
        theirs = live(kube_server, app.kservice_name)
        assert (
            app.kservice["metadata"]["annotations"][c.ANNOTATION_SPEC]
            == (theirs["metadata"]["annotations"][c.ANNOTATION_SPEC])
        ), app.key
        comparison = compare_kservice(theirs, app.kservice, plan.platform, app_timeout=True, path=app.key)
        assert comparison.exact, (app.key, comparison)
        # After the adopting `pulumi up`, the live object carries the force annotation too: still exact.
        assert app.kservice["metadata"]["annotations"][c.ANNOTATION_PATCH_FORCE] == "true"
        theirs["metadata"]["annotations"][c.ANNOTATION_PATCH_FORCE] = "true"
        after = compare_kservice(theirs, app.kservice, plan.platform, app_timeout=True, path=app.key)
        assert after.exact, (app.key, after)
    stopped = next(app for app in adopted if app.config.id.name == "port")
    assert stopped.config.input.stopped


def test_the_program_imports_each_exact_app_and_upserts_the_changed_ones(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    deploy(kube_server, "plain")
    deploy(kube_server, "pod-template")
    deploy(kube_server, GPU_FIXTURE)  # upstream drops GPUs: ours would change it
    path = stack_file(tmp_path)
    result = run(kube_server, path)
    assert result.exit_code == 0, result.stderr
    assert verdicts(result) == {
        "proj/dev/plain": "exact",
        "proj/dev/pod-template": "exact",
        "proj/dev/gpu": "changes",
    }
    assert "nvidia.com/gpu" in result.stdout
    capture, _ = install(read_stack_config(project_dir=tmp_path, config_file=path))
    run_program()
    kservices = {r.inputs["metadata"]["name"]: r for r in capture.of_type(c.TYPE_KSERVICE)}
    assert kservices["plain-proj-dev"].import_id == f"{NAMESPACE}/plain-proj-dev"
    assert kservices["pod-template-proj-dev"].import_id == f"{NAMESPACE}/pod-template-proj-dev"
    assert kservices["gpu-proj-dev"].import_id == ""
    assert kservices["handmade-other-staging"].import_id == ""
    providers = {r.name: r for r in capture.of_type(TYPE_PROVIDER)}
    assert providers["kubernetes-upsert"].inputs["enableServerSideApply"] == "true"
    assert providers["kubernetes-upsert"].inputs["clusterIdentifier"] == "flyte-apps"
    # Both kinds of adoption, and an app the stack creates, force their server-side apply.
    for name in ("plain-proj-dev", "pod-template-proj-dev", "gpu-proj-dev", "handmade-other-staging"):
        assert kservices[name].inputs["metadata"]["annotations"][c.ANNOTATION_PATCH_FORCE] == "true"
    assert kservices["gpu-proj-dev"].provider_urn == providers["kubernetes-upsert"].urn
    assert kservices["plain-proj-dev"].provider_urn == providers["kubernetes"].urn


def test_exact_only_refuses_an_app_that_would_change_and_writes_nothing(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    deploy(kube_server, "plain")
    deploy(kube_server, GPU_FIXTURE)
    path = stack_file(tmp_path)
    result = run(kube_server, path, "--exact-only")
    assert result.exit_code == 2
    assert verdicts(result)["proj/dev/gpu"] == "refused"
    assert path.read_text() == STACK


def test_dry_run_prints_the_entries_and_writes_nothing(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    deploy(kube_server, "env")
    path = stack_file(tmp_path)
    result = run(kube_server, path, "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "- name: env\n" in result.stdout and "adopt: true" in result.stdout
    assert path.read_text() == STACK


def test_dry_run_shows_the_accepted_entries_beside_a_refusal(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    deploy(kube_server, "plain")
    deploy(kube_server, GPU_FIXTURE)
    path = stack_file(tmp_path)
    result = run(kube_server, path, "--dry-run", "--exact-only")
    assert result.exit_code == 2
    assert verdicts(result)["proj/dev/gpu"] == "refused"
    assert "- name: plain\n" in result.stdout  # what the accepted app would add
    assert "- name: gpu\n" not in result.stdout
    assert path.read_text() == STACK


def test_a_filter_imports_only_the_apps_it_names(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    deploy(kube_server, "plain")
    deploy(kube_server, "env")
    path = stack_file(tmp_path)
    result = run(kube_server, path, "env", "-p", "proj", "-d", "dev")
    assert result.exit_code == 0, result.stderr
    assert verdicts(result) == {"proj/dev/env": "exact"}
    plan, _ = plan_stack_files(project_dir=tmp_path, config_file=path)
    assert [app.key for app in plan.apps] == ["other/staging/handmade", "proj/dev/env"]


def test_a_name_that_matches_nothing_exits_1(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    deploy(kube_server, "plain")
    path = stack_file(tmp_path)
    result = run(kube_server, path, "nope")
    assert result.exit_code == 1
    assert path.read_text() == STACK


def test_an_app_the_stack_declares_is_reported_and_left_alone(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    deploy(kube_server, "plain")
    path = stack_file(
        tmp_path, STACK + "    - {name: plain, project: proj, domain: dev, container: {image: x:1}}\n"
    )
    result = run(kube_server, path)
    assert result.exit_code == 0, result.stderr
    assert verdicts(result) == {"proj/dev/plain": "declared"}
    assert path.read_text().count("name: plain") == 1


@pytest.mark.parametrize("name", ["DB_PASSWORD", "LOG_LEVEL"])
def test_a_credential_looking_env_var_is_never_written(
    kube_server: FakeKubeApi, tmp_path: Path, name: str
) -> None:
    spec = app_pb.Spec()
    spec.container.image = "ghcr.io/acme/api:1.0"
    value = SECRET_VALUE if name == "DB_PASSWORD" else "postgres://app:" + SECRET_VALUE + "@db/app"
    spec.container.env.add(key=name, value=value)
    spec.ingress.SetInParent()
    spec.desired_state = app_pb.Spec.DESIRED_STATE_ACTIVE
    deploy_spec(kube_server, "leaky", spec)
    deploy(kube_server, "plain")
    path = stack_file(tmp_path)
    for args in ((), ("--dry-run",)):
        result = run(kube_server, path, *args)
        assert result.exit_code == 2
        assert verdicts(result)["proj/dev/leaky"] == "refused"
        assert name in result.stdout and "secrets:" in result.stdout
        assert SECRET_VALUE not in result.stdout + result.stderr
        assert path.read_text() == STACK


@pytest.mark.parametrize(
    ("plane", "setting"),
    [
        (DataPlane(default_env=(("REGION", "eu"),)), "defaultEnvVars"),
        (DataPlane(default_timeout_seconds=60), "defaultRequestTimeout"),
        (DataPlane(suffix_template="{{ project }}"), "namespacedNameSuffixTemplate"),
    ],
)
def test_other_platform_settings_are_refused_naming_the_setting(
    kube_server: FakeKubeApi, tmp_path: Path, plane: DataPlane, setting: str
) -> None:
    deploy(kube_server, "plain", plane=plane)
    path = stack_file(tmp_path)
    result = run(kube_server, path)
    assert result.exit_code == 2
    assert f"flyte-apps:platform.{setting}" in result.stdout
    assert path.read_text() == STACK


def test_a_kservice_in_another_namespace_than_the_stacks_is_refused(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    kube_server.ensure_namespace("elsewhere")
    deploy(kube_server, "plain", plane=DataPlane(namespace="elsewhere"))
    path = stack_file(tmp_path)
    result = run(kube_server, path, "-n", "elsewhere")
    assert result.exit_code == 2
    assert "KService in namespace 'elsewhere', the stack's is 'flyte' (flyte-apps:platform.namespace)" in (
        result.stdout
    )
    assert path.read_text() == STACK


def test_a_stack_that_would_delete_its_namespace_is_refused(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    deploy(kube_server, "plain")
    text = STACK.replace(
        "baseDomain: apps.example.com", "baseDomain: apps.example.com\n    retainNamespace: false"
    )
    path = stack_file(tmp_path, text)
    result = run(kube_server, path)
    assert result.exit_code == 2
    assert "retainNamespace is false" in result.stderr
    assert path.read_text() == text


def test_a_spec_field_the_config_cannot_express_is_refused(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    spec = app_pb.Spec()
    spec.container.image = "ghcr.io/acme/api:1.0"
    spec.ingress.SetInParent()
    spec.creator.user.SetInParent()
    deploy_spec(kube_server, "created", spec)
    path = stack_file(tmp_path)
    result = run(kube_server, path)
    assert result.exit_code == 2
    assert "creator" in result.stdout
    assert path.read_text() == STACK


def test_status_marks_an_adopt_app_without_a_live_kservice_as_drift(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    path = stack_file(
        tmp_path,
        STACK.replace(
            "baseDomain: apps.example.com", "baseDomain: apps.example.com\n    adoptNamespace: true"
        )
        + "    - {name: gone, container: {image: x:1}, adopt: true}\n",
    )
    assert kube_server.kubeconfig_path is not None
    cli = ["status", "--config", str(path), "--kubeconfig", str(kube_server.kubeconfig_path)]
    result = CliRunner().invoke(command_app(status_command.register), cli)
    assert result.exit_code == 0, result.stderr
    assert "other/staging/gone: adopt: no live KService" in result.stdout


@pytest.mark.parametrize(
    ("adopt", "verdict"),
    [
        ("true", "adopt: the live KService differs (`pulumi up` would refuse to import it"),
        ("upsert", "adopt: changes (`pulumi up` would update the live KService)"),
    ],
)
def test_status_says_what_pulumi_up_does_with_an_adopt_app_whose_live_object_differs(
    kube_server: FakeKubeApi, tmp_path: Path, adopt: str, verdict: str
) -> None:
    # `adopt: true` imports the object as it is, and Pulumi refuses an import whose inputs differ;
    # only `adopt: upsert` updates it (status said "would update" for both).
    spec = app_pb.Spec()
    spec.container.image = "ghcr.io/acme/live:1.0"
    spec.ingress.SetInParent()
    deploy_spec(kube_server, "drifted", spec)
    path = stack_file(
        tmp_path,
        STACK.replace(
            "baseDomain: apps.example.com", "baseDomain: apps.example.com\n    adoptNamespace: true"
        )
        + "    - {name: drifted, project: proj, domain: dev, container: {image: 'ghcr.io/acme/other:2.0'}, "
        f"adopt: {adopt}}}\n",
    )
    assert kube_server.kubeconfig_path is not None
    cli = ["status", "--config", str(path), "--kubeconfig", str(kube_server.kubeconfig_path)]
    result = CliRunner().invoke(command_app(status_command.register), cli)
    assert result.exit_code == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if "proj/dev/drifted: adopt: " in line]
    assert verdict in line


def test_import_reads_the_knative_settings_back_into_the_stack_file(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    data = fixture("plain")
    ident = data["app_id"]
    manifest = upstream_kservice(data["spec_b64"], ident["project"], ident["domain"], ident["name"])
    template = manifest["spec"]["template"]
    template.setdefault("metadata", {}).setdefault("annotations", {}).update(
        {
            c.ANNOTATION_PROGRESS_DEADLINE: "30m0s",
            c.ANNOTATION_SCALE_DOWN_DELAY: "15m0s",
            c.ANNOTATION_TARGET_UTILIZATION: "70.5",
            c.ANNOTATION_INITIAL_SCALE: "2",
        }
    )
    template["spec"][c.FIELD_CONTAINER_CONCURRENCY] = 4
    kube_server.create(KSERVICES, manifest, NAMESPACE)
    path = stack_file(tmp_path)
    result = run(kube_server, path)
    assert result.exit_code == 0, result.stderr
    assert verdicts(result) == {f"{ident['project']}/{ident['domain']}/{ident['name']}": "exact"}
    plan, _ = plan_stack_files(project_dir=tmp_path, config_file=path)
    [adopted] = [app for app in plan.apps if app.config.input.adopt]
    knative = adopted.config.input.knative
    assert knative is not None
    assert (knative.initial_scale, knative.target_utilization_percentage, knative.container_concurrency) == (
        2,
        70.5,
        4,
    )
    comparison = compare_kservice(
        live(kube_server, adopted.kservice_name),
        adopted.kservice,
        plan.platform,
        app_timeout=True,
        path=adopted.key,
    )
    assert comparison.exact, comparison
