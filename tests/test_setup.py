"""`make setup` picks a supported interpreter, refuses others before `.venv` exists, and rebuilds a
`.venv` built by another interpreter.

Each test runs the real Makefile and `.ci/pick-python.sh`, copied into a temporary directory, with
fake interpreters: small sh scripts that answer the version query as some Python would, "create" a
venv (a copy of themselves) and log `pip` calls instead of installing. No real Python, no network,
and the project's own `.venv` is never touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make") or "make"

FAKE_PYTHON = """#!/bin/sh
# A stand-in for Python {version} at {executable}.
case "$1" in
  -c) echo "{version} {executable}" ;;
  -m) case "$2" in
        venv) echo "venv $0" >> "{log}"; mkdir -p "$3/bin" && cp "$0" "$3/bin/python" \\
                && echo "home = {home}" > "$3/pyvenv.cfg" && exit {venv_exit} ;;
        pip) echo "pip $0" >> "{log}" ;;
        *) exit 1 ;;
      esac ;;
  *) exit 1 ;;
esac
"""

NOT_A_PYTHON = """#!/bin/sh
# What a pyenv shim does for a version that is not selected.
echo "pyenv: $(basename "$0"): command not found" >&2
exit 127
"""

INSTALLING = "make setup: installing the pinned dependencies and flyte-apps into .venv"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The Makefile and what `make setup` reads, in a fresh directory without `.venv`."""
    root = tmp_path / "project"
    (root / ".ci").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "Makefile", root / "Makefile")
    shutil.copy(REPO_ROOT / ".ci" / "pick-python.sh", root / ".ci" / "pick-python.sh")
    (root / "requirements.lock").write_text("")
    (root / "pyproject.toml").write_text("")
    (tmp_path / "bin").mkdir()
    return root


def log_of(project: Path) -> list[str]:
    log = project.parent / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def fake_python(
    project: Path, name: str, version: str, executable: str | None = None, venv_exit: int = 0
) -> Path:
    """An executable in the temporary `bin/` that claims to be Python `version` at `executable`."""
    path = project.parent / "bin" / name
    executable = executable or f"/opt/python{version}/bin/python{version}"
    path.write_text(
        FAKE_PYTHON.format(
            version=version,
            executable=executable,
            home=executable.rsplit("/", 1)[0],
            log=project.parent / "calls.log",
            venv_exit=venv_exit,
        )
    )
    path.chmod(0o755)
    return path


def pyenv_shim(project: Path, name: str) -> None:
    """A `name` on PATH that exists but does not run (like a pyenv shim of an unselected version)."""
    path = project.parent / "bin" / name
    path.write_text(NOT_A_PYTHON)
    path.chmod(0o755)


def existing_venv(project: Path, version: str, executable: str) -> None:
    """A `.venv` that a previous `make setup` built with Python `version` at `executable`."""
    fake = fake_python(project, "previous-python", version, executable)
    (project / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(fake, project / ".venv" / "bin" / "python")
    (project / ".venv" / "pyvenv.cfg").write_text(f"home = {executable.rsplit('/', 1)[0]}\n")
    (project / ".venv" / "marker").write_text("built by the previous interpreter\n")
    (project / ".venv" / ".installed").touch()
    fake.unlink()


def make(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "PYTHON"}}
    env["PATH"] = f"{project.parent / 'bin'}:/usr/bin:/bin"
    return subprocess.run(
        [MAKE, "--no-print-directory", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize("version", ["3.10", "3.14"])
def test_an_unsupported_python_is_refused_before_venv_exists(project: Path, version: str) -> None:
    python = fake_python(project, f"python{version}", version)

    result = make(project, "setup", f"PYTHON={python}")

    assert result.returncode != 0
    (line,) = result.stderr.splitlines()
    assert f"PYTHON={python} is Python {version}" in line
    assert "supports Python 3.11 to 3.13" in line
    assert not (project / ".venv").exists()
    assert log_of(project) == []


def test_a_missing_python_is_refused_before_venv_exists(project: Path) -> None:
    missing = project.parent / "nowhere" / "python3.12"

    result = make(project, "setup", f"PYTHON={missing}")

    assert result.returncode != 0
    (line,) = result.stderr.splitlines()
    assert f"PYTHON={missing}: not found" in line
    assert "supports Python 3.11 to 3.13" in line
    assert not (project / ".venv").exists()


def test_without_a_supported_python_on_path_nothing_is_created(project: Path) -> None:
    pyenv_shim(project, "python3.13")
    pyenv_shim(project, "python3.12")
    fake_python(project, "python3.11", "3.14")
    fake_python(project, "python3", "3.10")

    result = make(project, "setup")

    assert result.returncode != 0
    (line,) = result.stderr.splitlines()
    tried = "python3.13 not found, python3.12 not found, python3.11 is Python 3.14, python3 is Python 3.10"
    assert tried in line
    assert "supports Python 3.11 to 3.13" in line
    assert not (project / ".venv").exists()


def test_the_newest_supported_python_on_path_builds_venv_and_the_stamp_holds(project: Path) -> None:
    pyenv_shim(project, "python3.13")
    python312 = fake_python(project, "python3.12", "3.12")
    fake_python(project, "python3.11", "3.11")

    first = make(project, "setup")
    assert first.returncode == 0, first.stderr
    assert log_of(project) == [f"venv {python312}", "pip .venv/bin/python", "pip .venv/bin/python"]
    assert (project / ".venv" / ".installed").exists()

    again = make(project, "setup")
    assert again.returncode == 0, again.stderr
    assert len(log_of(project)) == 3  # nothing changed: no new venv, no install

    (project / ".venv" / "marker").touch()
    (project / "requirements.lock").write_text("# a new pin\n")
    bumped = make(project, "setup")
    assert bumped.returncode == 0, bumped.stderr
    assert log_of(project)[3:] == ["pip .venv/bin/python", "pip .venv/bin/python"]  # reinstall only
    assert (project / ".venv" / "marker").exists()


@pytest.mark.parametrize(
    ("old_version", "old_executable"),
    [("3.10", "/opt/python3.10/bin/python3.10"), ("3.12", "/usr/local/bin/python3.12")],
    ids=["other-version", "same-version-other-executable"],
)
def test_a_venv_built_by_another_interpreter_is_rebuilt(
    project: Path, old_version: str, old_executable: str
) -> None:
    existing_venv(project, old_version, old_executable)
    python = fake_python(project, "python3.12", "3.12", "/opt/python3.12/bin/python3.12")

    result = make(project, "setup", f"PYTHON={python}")

    assert result.returncode == 0, result.stderr
    line, installing = result.stderr.splitlines()
    assert installing == INSTALLING
    assert f".venv was built by Python {old_version} ({old_executable})" in line
    assert f"rebuilding it with {python} (Python 3.12, /opt/python3.12/bin/python3.12)" in line
    assert not (project / ".venv" / "marker").exists()
    assert log_of(project) == [f"venv {python}", "pip .venv/bin/python", "pip .venv/bin/python"]


def test_a_venv_built_by_the_chosen_interpreter_is_kept(project: Path) -> None:
    existing_venv(project, "3.12", "/opt/python3.12/bin/python3.12")
    python = fake_python(project, "python3.12", "3.12", "/opt/python3.12/bin/python3.12")

    result = make(project, "setup", f"PYTHON={python}")

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert (project / ".venv" / "marker").exists()
    assert log_of(project) == []


def test_make_n_shows_the_rebuild_without_doing_it(project: Path) -> None:
    existing_venv(project, "3.10", "/opt/python3.10/bin/python3.10")
    python = fake_python(project, "python3.13", "3.13")

    result = make(project, "-n", "setup", f"PYTHON={python}")

    assert result.returncode == 0, result.stderr
    assert "rm -rf .venv" in result.stdout.splitlines()
    assert f"{python} -m venv .venv" in result.stdout
    assert (project / ".venv" / "marker").exists()
    assert log_of(project) == []


def test_a_failed_venv_creation_leaves_no_venv(project: Path) -> None:
    python = fake_python(project, "python3.11", "3.11", venv_exit=1)

    result = make(project, "setup", f"PYTHON={python}")

    assert result.returncode != 0
    assert not (project / ".venv").exists()
    assert log_of(project) == [f"venv {python}"]
