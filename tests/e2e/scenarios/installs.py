"""What must be installed from the network before the scenarios run where there is none.

``python -m tests.e2e.run`` calls ``install_policy_pack`` and ``install_package_venv`` before it
enters its network namespace: the policy pack's virtualenv (``pulumi install`` in ``policies/``), the
component package's virtualenv (``components/plugin/venv``, with this repository's pins) and a
wheelhouse (setuptools, wheel, pip and the Python consumer's ``pulumi``) so that ``pulumi package
add`` and the Python consumer's ``pulumi install`` work with ``PIP_NO_INDEX``. Each writes a stamp of
its inputs and is skipped while the stamp matches; the scenarios' fixtures check the stamps
(``policy_pack_installed``, ``package_venv_installed``) and say what to run when one is stale.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

from tests.e2e import build, cluster
from tests.e2e.package_scenarios import PYTHON_SDK
from tests.e2e.scenarios.environment import WHEELHOUSE, pulumi_environment

REPO: Final = Path(__file__).resolve().parents[3]
POLICY_PACK: Final = REPO / "policies"
POLICY_STAMP: Final = POLICY_PACK / "venv" / ".flyte-apps-e2e"
PACKAGE_PLUGIN: Final = REPO / "components" / "plugin"
PACKAGE_STAMP: Final = PACKAGE_PLUGIN / "venv" / ".flyte-apps-e2e"
WHEELHOUSE_PINS: Final = ("setuptools>=68", "wheel", "pip", f"pulumi=={PYTHON_SDK}")
INSTALL_TIMEOUT_S: Final = 1200.0
FREEZE_TIMEOUT_S: Final = 120.0
ERROR_TAIL_CHARS: Final = 3000


def policy_pack_inputs() -> str:
    digest = hashlib.sha256()
    for path in (POLICY_PACK / "requirements.txt", REPO / "requirements.lock", REPO / "pyproject.toml"):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def policy_pack_installed() -> bool:
    return POLICY_STAMP.is_file() and POLICY_STAMP.read_text() == policy_pack_inputs()


def install_policy_pack(tools: dict[str, build.Built]) -> None:
    """`pulumi install` in policies/ (its virtualenv, from PyPI), unless done for these inputs already."""
    if policy_pack_installed():
        return
    print("e2e: installing the policy pack's virtualenv (pulumi install in policies/)", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="flyte-apps-e2e-install-") as home:
        env = pulumi_environment(Path(home), tools)
        env["PATH"] = os.pathsep.join([str(tools["pulumi"].bin), os.environ.get("PATH", "")])
        for proxy in cluster.PROXY_VARIABLES:  # pip may need the caller's proxy here
            for name in (proxy, proxy.lower()):
                if name in os.environ:
                    env[name] = os.environ[name]
        (Path(home) / "pulumi-home").mkdir()
        argv = [str(tools["pulumi"].binary("pulumi")), "install", "--non-interactive"]
        done = cluster.run_bounded(argv, cwd=POLICY_PACK, env=env, timeout=INSTALL_TIMEOUT_S)
    if done.returncode != 0:
        said = (done.stdout + done.stderr)[-ERROR_TAIL_CHARS:]
        raise build.ToolError(f"pulumi install in policies/ failed:\n{said}")
    POLICY_STAMP.write_text(policy_pack_inputs())


def package_inputs_digest() -> str:
    digest = hashlib.sha256()
    for path in (PACKAGE_PLUGIN / "requirements.txt", REPO / "requirements.lock", REPO / "pyproject.toml"):
        digest.update(path.read_bytes())
    digest.update(repr(WHEELHOUSE_PINS).encode())
    return digest.hexdigest()


def package_venv_installed() -> bool:
    wheelhouse = build.cache_root() / WHEELHOUSE
    return (
        PACKAGE_STAMP.is_file()
        and PACKAGE_STAMP.read_text() == package_inputs_digest()
        and wheelhouse.is_dir()
    )


def install_package_venv() -> None:
    """The component package's virtualenv with the repository's pins (from PyPI), and a wheelhouse with
    the build backend, unless done for these inputs already: inside the network namespace `pulumi package
    add` installs from them alone (``offline_pip``)."""
    if package_venv_installed():
        return
    print("e2e: installing the component package's virtualenv (components/plugin/venv)", file=sys.stderr)
    venv = PACKAGE_PLUGIN / "venv"
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "pip"), "install", "--quiet", "-r", "requirements.txt"],
        # The build backend, and what a Python consumer's virtualenv needs (the SDK's install upgrades
        # pip, setuptools and wheel first).
        [
            str(venv / "bin" / "pip"),
            "download",
            "--quiet",
            "--dest",
            str(build.cache_root() / WHEELHOUSE),
            *WHEELHOUSE_PINS,
        ],
    ]
    for argv in steps:
        done = cluster.run_bounded(argv, cwd=PACKAGE_PLUGIN, timeout=INSTALL_TIMEOUT_S)
        if done.returncode != 0:
            said = (done.stdout + done.stderr)[-ERROR_TAIL_CHARS:]
            raise build.ToolError(f"{' '.join(argv[:3])} failed:\n{said}")
    unpinned = unpinned_packages(venv)
    if unpinned:
        raise build.ToolError(
            f"the package's virtualenv holds versions requirements.lock does not pin: {unpinned}"
        )
    PACKAGE_STAMP.write_text(package_inputs_digest())


def unpinned_packages(venv: Path) -> list[str]:
    """What ``venv`` holds that ``requirements.lock`` does not pin at that version (flyte-apps aside):
    the package's requirements.txt takes the lock as constraints, so this must be empty."""

    def key(name: str) -> str:
        return name.lower().replace("_", "-")

    pins = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        requirement = line.split("#", 1)[0].strip()
        if "==" in requirement:
            name, version = requirement.split("==", 1)
            pins[key(name)] = version.strip()
    frozen = subprocess.run(
        [str(venv / "bin" / "pip"), "freeze", "--exclude", "flyte-apps"],
        capture_output=True,
        text=True,
        timeout=FREEZE_TIMEOUT_S,
        check=True,
    ).stdout.split()
    return [entry for entry in frozen if pins.get(key(entry.split("==")[0])) != entry.split("==")[-1]]
