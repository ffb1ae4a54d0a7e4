"""Check requirements.lock for Python versions not installed here: `make compat` (3.12 and 3.13).

For each version, pip resolves the lock as that version would (`--python-version X.Y
--only-binary=:all: --dry-run`, this machine's platform, pip's config), installing nothing. It fails
when a pin has no wheel (nor a pure-Python one) for that version, or when the resolve needs a
package the lock does not pin (it would be installed unpinned there). The versions run in parallel.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

LOCK = Path(__file__).resolve().parent.parent / "requirements.lock"


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[_name(name)] = version.strip()
    return pins


def pip_command(version: str, workdir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--quiet",
        "--disable-pip-version-check",
        "--ignore-installed",
        "--only-binary=:all:",
        "--python-version",
        version,
        "--target",
        str(workdir / "target"),  # required with --python-version; --dry-run never creates it
        "--report",
        str(workdir / f"{version}.json"),
        "-r",
        str(LOCK),
    ]


def check(version: str, returncode: int, workdir: Path, pins: dict[str, str]) -> tuple[list[str], str]:
    """Problems for one version, one line each (none: every pin has a wheel, nothing else is needed),
    and a summary of the wheels."""
    if returncode != 0:
        stderr = (workdir / f"{version}.stderr").read_text(encoding="utf-8").splitlines()
        errors = [line for line in stderr if line.startswith("ERROR")] or stderr[-5:]
        return [f"Python {version}: {line}" for line in errors], ""
    installs = json.loads((workdir / f"{version}.json").read_text(encoding="utf-8"))["install"]
    wheels = [item["download_info"]["url"].rsplit("/", 1)[-1] for item in installs]
    compiled = [wheel for wheel in wheels if not wheel.endswith("-none-any.whl")]
    problems = [f"Python {version}: {wheel} is not a wheel" for wheel in wheels if not wheel.endswith(".whl")]
    for item in installs:
        name, got = _name(item["metadata"]["name"]), item["metadata"]["version"]
        if name not in pins:
            problems.append(f"Python {version}: needs {name}=={got}, which requirements.lock does not pin")
        elif pins[name] != got:
            problems.append(f"Python {version}: resolves {name}=={got}, the lock pins {pins[name]}")
    return problems, f"Python {version}: {len(wheels)} wheels, {len(compiled)} of them compiled"


def main(versions: list[str]) -> int:
    if not versions:
        print("usage: compat_wheels.py X.Y [X.Y ...]", file=sys.stderr)
        return 2
    pins = read_lock(LOCK)
    with tempfile.TemporaryDirectory(prefix="flyte-apps-compat-") as tmp:
        workdir = Path(tmp)
        procs = {}
        for version in versions:
            with (workdir / f"{version}.stderr").open("w", encoding="utf-8") as stderr:
                procs[version] = subprocess.Popen(
                    pip_command(version, workdir), stdout=subprocess.DEVNULL, stderr=stderr
                )
        results = [check(version, proc.wait(), workdir, pins) for version, proc in procs.items()]
    problems = [line for lines, _ in results for line in lines]
    for line in problems:
        print(f"compat: {line}", file=sys.stderr)
    if problems:
        return 1
    summary = "; ".join(summary for _, summary in results)
    print(f"compat: every pin of requirements.lock ({len(pins)}) has a wheel: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
