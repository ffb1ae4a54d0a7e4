"""`flyte-apps render`: output, order, warnings, --out and exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from flyte_apps.cli.files import MANIFEST
from flyte_apps.cli.main import app
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.yamlout import to_yaml
from tests.support.config import REPO_ROOT, minimal_config, write_stack


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def rendered_files(out: Path) -> list[str]:
    """The directory's files but render's manifest (tests/cli/test_local_files.py checks it)."""
    return sorted(p.name for p in out.iterdir() if p.name != MANIFEST)


def test_render_prints_every_object_of_the_example_stack_in_apply_order() -> None:
    result = run("render", "--stack", "dev", "--project-dir", str(REPO_ROOT))
    assert result.exit_code == 0, result.stderr
    documents = list(yaml.safe_load_all(result.stdout))
    kinds = [(d["apiVersion"], d["kind"], d["metadata"]["name"]) for d in documents]
    assert kinds[0] == ("v1", "Namespace", "flyte")
    assert kinds[1] == ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "taskactions.flyte.org")
    cluster_scoped = [d for d in documents if "namespace" not in d["metadata"]]
    assert documents[: len(cluster_scoped)] == cluster_scoped
    services = [name for api, kind, name in kinds if api == "serving.knative.dev/v1"]
    mappings = [name for api, kind, name in kinds if kind == "DomainMapping"]
    expected_tail = [
        *(("serving.knative.dev/v1", "Service", name) for name in sorted(services)),
        *(("serving.knative.dev/v1beta1", "DomainMapping", name) for name in sorted(mappings)),
    ]
    assert mappings == ["dashboard.localhost"]
    assert kinds[-len(expected_tail) :] == expected_tail
    stack = yaml.safe_load((REPO_ROOT / "Pulumi.dev.yaml").read_text(encoding="utf-8"))
    assert len(services) == len(stack["config"]["flyte-apps:apps"])


def test_render_output_parses_back_into_the_planned_manifests(tmp_path: Path) -> None:
    raw = minimal_config(stopped=True, autoscaling={"maxReplicas": 3})
    result = run("render", "--config", str(write_stack(tmp_path, raw)), "--project-dir", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert list(yaml.safe_load_all(result.stdout)) == [obj.manifest for obj in plan_stack(raw).objects()]


def test_render_with_config_file(tmp_path: Path) -> None:
    path = write_stack(tmp_path, minimal_config())
    result = run("render", "--config", str(path), "--project-dir", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    documents = list(yaml.safe_load_all(result.stdout))
    assert documents[1]["metadata"]["name"] == "myapp-proj-dev"


def test_render_stack_and_config_together_is_a_usage_error(tmp_path: Path) -> None:
    path = write_stack(tmp_path, minimal_config())
    result = run("render", "--stack", "dev", "--config", str(path))
    assert result.exit_code == 2
    assert "not both" in result.stderr
    assert result.stdout == ""


def test_render_missing_stack_file_exits_2(tmp_path: Path) -> None:
    result = run("render", "--stack", "nope", "--project-dir", str(tmp_path))
    assert result.exit_code == 2
    assert "Pulumi.nope.yaml: stack config file not found" in result.stderr


def test_render_reads_project_defaults_from_pulumi_yaml(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "flyte-apps",
                "config": {"flyte-apps:project": {"default": "fromproject"}, "domain": "short"},
            }
        )
    )
    config = minimal_config()
    del config["flyte-apps:project"], config["flyte-apps:domain"]
    write_stack(tmp_path, config, "Pulumi.dev.yaml")
    result = run("render", "--project-dir", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert "name: myapp-fromproject-short" in result.stdout


def test_adopted_namespace_is_printed_as_a_patch(tmp_path: Path) -> None:
    config = minimal_config()
    config["flyte-apps:platform"] = {"adoptNamespace": True}
    result = run("render", "--config", str(write_stack(tmp_path, config)), "--project-dir", str(tmp_path))
    assert result.exit_code == 0
    assert result.stdout.startswith("---\n# patch (server-side apply)\napiVersion: v1\nkind: Namespace\n")


ONE_APP_FILES = ["001-namespace-flyte.yaml", "002-service-myapp-proj-dev.yaml"]


def dev_objects() -> list[dict[str, Any]]:
    result = run("render", "--stack", "dev", "--project-dir", str(REPO_ROOT))
    assert result.exit_code == 0, result.stderr
    return list(yaml.safe_load_all(result.stdout))


def test_render_out_dir_writes_one_numbered_file_per_object(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("render", "--stack", "dev", "--project-dir", str(REPO_ROOT), "--out-dir", str(out))
    assert result.exit_code == 0, result.stderr
    files = rendered_files(out)
    assert files[0] == "001-namespace-flyte.yaml"
    assert files[1] == "002-customresourcedefinition-taskactions.flyte.org.yaml"
    objects = dev_objects()
    assert len(files) == len(objects)
    assert [yaml.safe_load((out / name).read_text()) for name in files] == objects
    assert result.stdout.splitlines() == [str(out / name) for name in files]


def test_render_out_dir_removes_its_own_files_for_objects_the_stack_no_longer_has(tmp_path: Path) -> None:
    out = tmp_path / "out"
    two = minimal_config()
    two["flyte-apps:apps"].append({"name": "other", "container": {"image": "nginx:1.27"}})
    assert run("render", "--config", str(write_stack(tmp_path, two)), "--out-dir", str(out)).exit_code == 0
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    (out / "kustomization.yaml").write_text("resources: []\n", encoding="utf-8")
    before = rendered_files(out)
    assert "003-service-other-proj-dev.yaml" in before

    result = run("render", "--config", str(write_stack(tmp_path, minimal_config())), "--out-dir", str(out))
    assert result.exit_code == 0, result.stderr
    after = rendered_files(out)
    assert after == [
        "001-namespace-flyte.yaml",
        "002-service-myapp-proj-dev.yaml",
        "kustomization.yaml",
        "notes.txt",
    ]


def test_render_out_onto_a_file_is_a_one_line_usage_error(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.write_text("x", encoding="utf-8")
    for flag in ("--out-dir", "--out"):
        result = run("render", "--config", str(write_stack(tmp_path, minimal_config())), flag, str(target))
        assert result.exit_code == 2
        assert result.stderr.splitlines()[-1] == f"error: {target} is a file; --out-dir takes a directory"
        assert "Traceback" not in result.stderr
        assert target.read_text() == "x"


def test_render_out_is_a_deprecated_alias_of_out_dir(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run("render", "--config", str(write_stack(tmp_path, minimal_config())), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert "warning: --out is deprecated; use --out-dir" in result.stderr
    assert rendered_files(out) == [
        "001-namespace-flyte.yaml",
        "002-service-myapp-proj-dev.yaml",
    ]


def test_render_output_json_is_one_kubectl_style_list_naming_the_patched_objects() -> None:
    result = run("render", "--stack", "dev", "--project-dir", str(REPO_ROOT), "-o", "json")
    assert result.exit_code == 0, result.stderr
    listing = json.loads(result.stdout)
    assert listing["apiVersion"] == "v1"
    assert listing["kind"] == "List"
    assert listing["items"] == dev_objects()
    patches = listing["metadata"]["annotations"]["flyte-apps/patches"].split(",")
    assert "ConfigMap/knative-serving/config-autoscaler" in patches
    assert all(not ref.startswith("Service/") for ref in patches)


def test_render_out_dir_with_json_writes_json_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = (
        "render",
        "--config",
        str(write_stack(tmp_path, minimal_config())),
        "--out-dir",
        str(out),
        "-o",
        "json",
    )
    assert run(*args).exit_code == 0
    assert rendered_files(out) == [
        "001-namespace-flyte.json",
        "002-service-myapp-proj-dev.json",
    ]
    assert json.loads((out / "002-service-myapp-proj-dev.json").read_text())["kind"] == "Service"


def test_render_warns_when_a_name_is_hashed_or_the_suffix_template_changed(tmp_path: Path) -> None:
    config = minimal_config(name="a-rather-long-application-name")
    config["flyte-apps:domain"] = "development-environment-long"
    config["flyte-apps:platform"] = {"namespacedNameSuffixTemplate": "{{ domain }}"}
    result = run("render", "--config", str(write_stack(tmp_path, config)), "--project-dir", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2
    assert "hashed KService name" in warnings[1]
    assert "namespacedNameSuffixTemplate" in warnings[0]


def test_default_stack_renders_without_warnings() -> None:
    result = run("render", "--project-dir", str(REPO_ROOT))
    assert result.exit_code == 0
    assert "warning" not in result.stderr


def test_example_stack_urls() -> None:
    plan = plan_stack(yaml.safe_load((REPO_ROOT / "Pulumi.dev.yaml").read_text())["config"])
    urls = {app.key: (app.public_url, app.internal_url) for app in plan.apps}
    assert urls["flytesnacks/development/dashboard"] == (
        "http://dashboard-flytesnacks-development.localhost:30081",
        "http://dashboard-flytesnacks-development.flyte.svc.cluster.local",
    )
    # Stopped (cluster-local by upstream's stop patch) and cluster-local apps have no public URL.
    assert urls["flytesnacks/development/notebook"] == (
        None,
        "http://notebook-flytesnacks-development.flyte.svc.cluster.local",
    )
    assert urls["ml-serving/production/feature-store"][0] is None


def test_example_stack_yaml_parses_back_into_every_manifest(example_config: dict[str, Any]) -> None:
    # render dumps through libyaml when available; whatever the dumper, the text must load back exactly.
    objects = plan_stack(example_config).objects()
    assert list(yaml.safe_load_all(to_yaml(objects))) == [obj.manifest for obj in objects]
