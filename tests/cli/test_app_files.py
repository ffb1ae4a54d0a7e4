"""Apps in files beside the stack file, as the commands read them from disk: a stack too large for
Pulumi to hand to the program fits once its apps are in files, renders what the same apps inline
render, and every file that could hang, leak or lie is refused at its entry with why."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from flyte_apps.cli.main import app
from flyte_apps.core.bounds import MAX_INPUT_BYTES
from flyte_apps.core.stackfile import MAX_ENVIRONMENT_STRING_BYTES, program_config_bytes
from tests.support.config import minimal_config, write_stack

APPS = 300
EXIT_CONFIG = 2


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def many_apps() -> list[dict[str, Any]]:
    """More apps than fit into the one environment variable Pulumi hands the program its config in."""
    return [
        {"name": f"app-{i:03d}", "container": {"image": "nginx:1.27", "env": {"GREETING": "x" * 400}}}
        for i in range(APPS)
    ]


def with_files(directory: Path, own: list[dict[str, Any]], files: dict[str, Any]) -> Path:
    """The stack file ``Pulumi.test.yaml`` in ``directory`` with ``own`` apps and the apps files
    ``files`` (name -> the file's content), listed in that order."""
    for name, content in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else yaml.safe_dump(content), encoding="utf-8")
    config = {**minimal_config(), "flyte-apps:apps": own, "flyte-apps:appFiles": list(files)}
    return write_stack(directory, config)


def test_a_stack_too_large_for_pulumi_fits_with_its_apps_in_files_and_renders_the_same(
    tmp_path: Path,
) -> None:
    apps = many_apps()
    inline = tmp_path / "inline"
    inline.mkdir()
    written = write_stack(inline, {**minimal_config(), "flyte-apps:apps": apps})
    assert program_config_bytes({**minimal_config(), "flyte-apps:apps": apps}) > MAX_ENVIRONMENT_STRING_BYTES
    refused = run("check", "--config", str(written), "--project-dir", str(inline))
    assert refused.exit_code == EXIT_CONFIG, refused.output
    assert "move apps into files listed under flyte-apps:appFiles" in refused.output

    split = tmp_path / "split"
    split.mkdir()
    stack = with_files(split, apps[:10], {"apps/first.yaml": apps[10:150], "apps/second.yaml": apps[150:]})
    checked = run("check", "--config", str(stack), "--project-dir", str(split))
    assert checked.exit_code == 0, checked.output
    from_files = run("render", "--config", str(stack), "--project-dir", str(split))
    from_stack = run("render", "--config", str(written), "--project-dir", str(inline))
    assert from_files.exit_code == 0, from_files.stderr
    assert from_files.stdout == from_stack.stdout
    assert from_stack.stdout.count("kind: Service\n") == APPS


def test_a_problem_in_an_apps_file_is_located_at_its_line_and_named_by_its_place(tmp_path: Path) -> None:
    text = "- name: fine\n  container: {image: nginx:1.27}\n- name: broken\n  container:\n    image: ''\n"
    stack = with_files(tmp_path, [], {"apps/team.yaml": text})
    result = run("render", "--config", str(stack), "--project-dir", str(tmp_path))
    assert result.exit_code == EXIT_CONFIG
    assert f"{tmp_path}/apps/team.yaml:5 flyte-apps:appFiles[0][1].container.image: must not be empty" in (
        result.stderr
    )


def test_files_are_found_in_the_project_directory_whichever_the_working_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = with_files(tmp_path, [], {"apps/a.yaml": [{"name": "a", "container": {"image": "nginx:1.27"}}]})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = run("render", "--config", str(stack), "--project-dir", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert "name: a-proj-dev\n" in result.stdout


def test_a_symlink_out_of_the_project_is_refused_without_showing_what_it_points_to(tmp_path: Path) -> None:
    secret = tmp_path / "outside.yaml"
    secret.write_text("- name: TOKEN-abc123\n", encoding="utf-8")
    project = tmp_path / "project"
    (project / "apps").mkdir(parents=True)
    (project / "apps" / "link.yaml").symlink_to(secret)
    stack = with_files(project, [], {})
    stack.write_text(
        stack.read_text().replace("appFiles: []", "appFiles: [apps/link.yaml]"), encoding="utf-8"
    )
    result = run("check", "--config", str(stack), "--project-dir", str(project))
    assert result.exit_code == EXIT_CONFIG, result.output
    assert "'apps/link.yaml' leads outside the project directory (through a symlink)" in result.output
    assert str(secret) not in result.output
    assert "TOKEN" not in result.output


@pytest.mark.parametrize("kind", ["fifo", "directory", "oversized"])
def test_what_is_not_an_apps_file_is_refused_at_its_entry_without_waiting_or_reading_it_all(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "apps.yaml"
    if kind == "fifo":
        os.mkfifo(path)  # read without a writer, it would wait for ever
        why = "is a FIFO, not a regular file; give an apps file"
    elif kind == "directory":
        path.mkdir()
        why = "is a directory, not a regular file; give an apps file"
    else:
        with path.open("wb") as out:
            out.truncate(MAX_INPUT_BYTES + 1)
        why = "is 16.0 MiB; an apps file may be at most 16.0 MiB"
    stack = with_files(tmp_path, [{"name": "own", "container": {"image": "nginx:1.27"}}], {})
    stack.write_text(stack.read_text().replace("appFiles: []", "appFiles: [apps.yaml]"), encoding="utf-8")
    result = run("check", "--config", str(stack), "--project-dir", str(tmp_path))
    assert result.exit_code == EXIT_CONFIG, result.output
    assert f"flyte-apps:appFiles[0]: 'apps.yaml' {why}" in result.output
