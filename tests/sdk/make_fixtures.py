"""Build the SDK venv and write tests/fixtures/sdk/ with Flyte's own SDK (tests/sdk/README.md).

Flyte's SDK cannot live in the project's venv (it needs protobuf>=6.30 and an exact flyteidl2; the project
pins protobuf 5.29 for pulumi-policy), so this script makes a venv of its own (default ``.sdk-venv/`` at
the repository root), installs ``tests/sdk/requirements.txt`` there (again only when that file changed),
and runs ``tests/sdk/sdk_generator.py`` with the venv's Python. Standard library only: run it with any
Python 3.11+, e.g. ``python tests/sdk/make_fixtures.py``. Needs PyPI, so it is not part of ``make test``.

    python tests/sdk/make_fixtures.py                   # write tests/fixtures/sdk/*.json
    python tests/sdk/make_fixtures.py --compare DIR     # the SDK's spec comparison on DIR/*.json
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path
from typing import Final

HERE: Final = Path(__file__).resolve().parent
REPO_ROOT: Final = HERE.parents[1]
REQUIREMENTS: Final = HERE / "requirements.txt"
GENERATOR: Final = HERE / "sdk_generator.py"
DEFAULT_VENV: Final = REPO_ROOT / ".sdk-venv"
DEFAULT_OUT: Final = REPO_ROOT / "tests" / "fixtures" / "sdk"
STAMP: Final = ".requirements.sha256"
"""In the venv: the sha256 of the requirements it was installed from."""
ENV_PREFIXES: Final = ("FLYTE", "_F_", "_U_", "UNION")
"""Variables the SDK reads (endpoints, config, sys.path sync): left out, so fixtures do not depend on them."""


def venv_python(path: Path) -> Path:
    return path / "bin" / "python"


def ensure_venv(path: Path, *, reinstall: bool) -> Path:
    """The venv's Python, with the pinned SDK installed (created and installed as needed)."""
    python = venv_python(path)
    if not python.exists():
        print(f"creating {path} with {sys.executable}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True, symlinks=os.name != "nt").create(path)
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    stamp = path / STAMP
    if reinstall or not stamp.exists() or stamp.read_text(encoding="utf-8").strip() != digest:
        print(f"installing {REQUIREMENTS.relative_to(REPO_ROOT)} into {path}", flush=True)
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
        subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True)
        stamp.write_text(digest + "\n", encoding="utf-8")
    return python


def generator_env() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if not name.startswith(ENV_PREFIXES)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="the SDK venv (default: .sdk-venv)")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="where fixtures go (tests/fixtures/sdk)"
    )
    parser.add_argument("--reinstall", action="store_true", help="install the requirements even if unchanged")
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="DIR",
        help="instead of writing fixtures: load spec_b64 from DIR/*.json and record whether the SDK's "
        "comparison (App._app_specs_are_equal) raises on them, alone and against the SDK fixture of the "
        "same name (or the one named by sdk_fixture); exit 1 if it raised",
    )
    parser.add_argument("--report", type=Path, help="with --compare: also write the report (JSON) here")
    args = parser.parse_args(argv)
    if args.report is not None and args.compare is None:
        parser.error("--report goes with --compare")

    python = ensure_venv(args.venv.resolve(), reinstall=args.reinstall)
    command = [str(python), str(GENERATOR)]
    if args.compare is None:
        command += ["generate", "--out", str(args.out.resolve())]
    else:
        command += ["compare", str(args.compare.resolve()), "--fixtures", str(args.out.resolve())]
        if args.report is not None:
            command += ["--report", str(args.report.resolve())]
    return subprocess.run(command, cwd=REPO_ROOT, env=generator_env(), check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
