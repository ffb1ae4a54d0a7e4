"""Local files as untrusted input (hostile input round 3, item 9): ``render --out-dir`` writes and
removes only files of its own, never through a symlink; stack files are read only if they are
regular files (a FIFO or ``/dev/stdin`` must not hang the CLI) and an unreadable one is one error
line; ``import`` keeps a symlinked stack file a symlink."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from flyte_apps.cli import stackfile
from flyte_apps.cli.files import MANIFEST
from flyte_apps.cli.main import app
from flyte_apps.cli.stackedit import add_apps
from tests.cli.test_hostile_cluster import FLYTE_APPS
from tests.support.config import minimal_config, write_stack

NAMESPACE_FILE = "001-namespace-flyte.yaml"
SERVICE_FILE = "002-service-myapp-proj-dev.yaml"
OTHER_FILE = "003-service-other-proj-dev.yaml"
OUTER_TIMEOUT = 60.0


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def render_into(tmp_path: Path, out: Path, config: dict[str, Any] | None = None) -> Any:
    stack = write_stack(tmp_path, config or minimal_config())
    return run("render", "--config", str(stack), "--out-dir", str(out))


def two_apps() -> dict[str, Any]:
    config = minimal_config()
    config["flyte-apps:apps"].append({"name": "other", "container": {"image": "nginx:1.27"}})
    return config


# --- render --out-dir ------------------------------------------------------------------------------


def test_a_symlink_named_like_an_output_file_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me", encoding="utf-8")
    (out / SERVICE_FILE).symlink_to(precious)

    result = render_into(tmp_path, out)

    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {out / SERVICE_FILE} is a symlink; render writes only regular files of its own: remove it"
    ]
    assert precious.read_text(encoding="utf-8") == "keep me"
    assert (out / SERVICE_FILE).is_symlink()
    assert sorted(p.name for p in out.iterdir()) == [SERVICE_FILE]  # nothing written before the refusal


def test_a_symlinked_manifest_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST).symlink_to(tmp_path / "elsewhere")
    result = render_into(tmp_path, out)
    assert result.exit_code == 2
    assert f"{out / MANIFEST} is a symlink" in result.stderr
    assert not (tmp_path / "elsewhere").exists()


def test_files_named_like_ours_that_render_did_not_write_are_left_with_a_warning(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / OTHER_FILE).write_text("written by hand\n", encoding="utf-8")

    result = render_into(tmp_path, out)

    assert result.exit_code == 0, result.stderr
    assert (out / OTHER_FILE).read_text(encoding="utf-8") == "written by hand\n"
    assert f"warning: {out}: left {OTHER_FILE}: not written by render (no record of it in {MANIFEST})" in (
        result.stderr.splitlines()
    )


def test_a_stale_file_of_ours_is_removed_unless_it_changed_since(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert render_into(tmp_path, out, two_apps()).exit_code == 0
    assert (out / OTHER_FILE).is_file()
    recorded = json.loads((out / MANIFEST).read_text(encoding="utf-8"))["files"]
    assert sorted(recorded) == [NAMESPACE_FILE, SERVICE_FILE, OTHER_FILE]

    edited = two_apps()
    (out / OTHER_FILE).write_text(
        "# my edit\n" + (out / OTHER_FILE).read_text(encoding="utf-8"), encoding="utf-8"
    )
    result = render_into(tmp_path, out)
    assert result.exit_code == 0, result.stderr
    assert (out / OTHER_FILE).exists()
    assert f"warning: {out}: left {OTHER_FILE}: changed since render wrote it" in result.stderr.splitlines()

    assert render_into(tmp_path, out, edited).exit_code == 0  # rewritten: render's own again
    result = render_into(tmp_path, out)
    assert result.exit_code == 0, result.stderr
    assert not (out / OTHER_FILE).exists()
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, NAMESPACE_FILE, SERVICE_FILE]


def test_the_manifest_is_not_a_file_kubectl_apply_reads() -> None:
    assert Path(MANIFEST).suffix not in {".json", ".yaml", ".yml"}


# --- stack files ---------------------------------------------------------------------------------


def run_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI as a process whose standard input is a pipe nobody writes to (``/dev/stdin`` would block)."""
    with subprocess.Popen(
        [FLYTE_APPS, *args],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=OUTER_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.parametrize("command", ["render", "check"])
def test_a_fifo_as_the_stack_file_is_an_error_not_a_hang(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "Pulumi.dev.yaml"
    os.mkfifo(fifo)
    done = run_process(command, "--config", str(fifo), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"error: {fifo}: is a FIFO, not a regular file; give a stack file"]


@pytest.mark.parametrize("command", ["render", "check"])
def test_a_stack_file_linked_to_dev_stdin_is_an_error_not_a_hang(tmp_path: Path, command: str) -> None:
    (tmp_path / "Pulumi.dev.yaml").symlink_to("/dev/stdin")
    done = run_process(command, "--stack", "dev", "--project-dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1].endswith("is a FIFO, not a regular file; give a stack file")


def test_a_stack_file_that_cannot_be_read_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Running as root, a directory's permissions cannot refuse a read; the error is what the OS raises.
    def refused(path: Path, *, limit: int) -> bytes:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(stackfile, "read_regular", refused)
    result = run("render", "--stack", "dev", "--project-dir", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'Pulumi.yaml'}: cannot be read: Permission denied"
    ]


def test_a_directory_as_the_stack_file_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.dev.yaml").mkdir()
    result = run("render", "--stack", "dev", "--project-dir", str(tmp_path))
    assert result.exit_code == 2
    assert "is a directory, not a regular file" in result.stderr
    assert "Traceback" not in result.stderr


# --- import into a symlinked stack file ---------------------------------------------------------------


def test_adding_apps_to_a_symlinked_stack_file_writes_its_target_and_keeps_the_link(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    target = write_stack(shared, minimal_config(), name="Pulumi.dev.yaml")
    target.chmod(0o640)
    project = tmp_path / "project"
    project.mkdir()
    link = project / "Pulumi.dev.yaml"
    link.symlink_to(target)

    add_apps(link, [{"name": "other", "container": {"image": "nginx:1.27"}}], adopt_namespace=False)

    assert link.is_symlink()
    assert os.readlink(link) == str(target)
    apps = yaml.safe_load(target.read_text(encoding="utf-8"))["config"]["flyte-apps:apps"]
    assert [entry["name"] for entry in apps] == ["myapp", "other"]
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in shared.iterdir()) == ["Pulumi.dev.yaml"]  # no temp file left
