"""`make e2e`: the real Pulumi engine against a real control plane with Knative, scenario by scenario.

The scenarios are pytest tests (``tests/e2e/scenarios``, their fixtures in its ``conftest.py``); this
launcher does what must happen before pytest, then becomes it:

1. outside any network namespace, install what needs PyPI: the policy pack's virtualenv (``pulumi
   install`` in ``policies/``), the component package's virtualenv and the wheelhouse
   (``scenarios/installs.py``), each skipped while its inputs are unchanged;
2. re-execute itself in a network namespace of its own with only ``lo`` up (nothing can leave
   loopback), unless ``--no-netns``;
3. there, exec ``python -m pytest tests/e2e/scenarios`` with every other argument passed through.

Each step replaces the process (``exec``), so a Ctrl-C or a SIGTERM reaches pytest itself, whose
fixtures then stop every process the run started, by PID.

    python -m tests.e2e.run [--no-netns] [--work DIR] [--keep] [pytest args: -k NAME, -x, --durations=0, ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final, NoReturn

from tests.e2e import build, cluster
from tests.e2e.scenarios.environment import SCENARIO_TOOLS, pulumi_environment
from tests.e2e.scenarios.installs import install_package_venv, install_policy_pack
from tests.e2e.scenarios.suite import NETNS_MARKER, install_kubernetes_plugin, link_project

__all__ = ["install_kubernetes_plugin", "link_project", "main", "pulumi_environment"]
"""What ``bench/engine_scale.py`` takes from here (the set-up lives in ``scenarios/``)."""

REPO: Final = Path(__file__).resolve().parents[2]
SCENARIOS: Final = "tests/e2e/scenarios"
PYTEST_DEFAULTS: Final = ("-o", "console_output_style=classic", "--tb=short")
"""Before the caller's arguments (which may override them): no progress column beside the scenarios'
own lines, short tracebacks under them."""
NETNS_SHELL: Final = 'ip link set lo up && exec "$0" -m tests.e2e.run "$@"'


def pytest_argv(argv: Sequence[str]) -> list[str]:
    """``python -m pytest`` over the scenarios, the caller's arguments last."""
    return [sys.executable, "-m", "pytest", SCENARIOS, *PYTEST_DEFAULTS, *argv]


def netns_argv(prefix: Sequence[str], argv: Sequence[str]) -> list[str]:
    """This module again, under ``prefix`` (``unshare ... --net``), with ``lo`` brought up first."""
    return [*prefix, "sh", "-c", NETNS_SHELL, sys.executable, *argv]


def exec_argv(argv: Sequence[str], env: dict[str, str]) -> NoReturn:
    sys.stdout.flush()
    sys.stderr.flush()
    os.chdir(REPO)
    os.execvpe(argv[0], list(argv), env)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="python -m tests.e2e.run",
        description=__doc__.split("\n\n")[0],
        epilog="Every other argument goes to pytest (with the scenarios' own --work DIR and --keep).",
        allow_abbrev=False,
    )
    parser.add_argument("--no-netns", action="store_true", help="run on the host's loopback instead")
    known, _ = parser.parse_known_args(argv)
    try:
        if os.environ.get(NETNS_MARKER) != "1":
            tools = build.locate(SCENARIO_TOOLS)
            install_policy_pack(tools)
            install_package_venv()
            if not known.no_netns:
                prefix = cluster.network_namespace_prefix()
                exec_argv(netns_argv(prefix, argv), {**os.environ, NETNS_MARKER: "1"})
    except (build.ToolError, cluster.ClusterError) as exc:
        print(f"e2e: {exc}", file=sys.stderr)
        return 1
    except subprocess.TimeoutExpired as exc:
        print(f"e2e: `{' '.join(map(str, exc.cmd))[:200]}` ran past {exc.timeout:.0f} s", file=sys.stderr)
        return 1
    exec_argv(pytest_argv(argv), dict(os.environ))


if __name__ == "__main__":
    sys.exit(main())
