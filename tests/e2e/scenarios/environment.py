"""The environment the tools run in during the scenarios: the Pulumi CLI's (its home, backend and
plugins in the work directory, nothing from the network) and the consumer programs' (pip, npm and Go
offline, on what ``installs.py`` and ``make e2e-tools`` put in place beforehand)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from tests.e2e import build, cluster
from tests.e2e.node.node import DATA_PLANE_TOOLS, NODE_TOOLS

REPO: Final = Path(__file__).resolve().parents[3]
PASSPHRASE: Final = "flyte-apps-e2e"
SCENARIO_TOOLS: Final = (
    "pulumi",
    "kubernetes-provider",
    "etcd",
    "kubernetes",
    "knative",
    "nodejs-consumer",
    "go-consumer",
    "spec-judge",
    *NODE_TOOLS,
    *DATA_PLANE_TOOLS,
)
"""What of ``versions.toml`` the scenarios run (``pulumi-yaml`` is bundled into ``pulumi``): a tool
added there for a part the scenarios do not use yet (a node's) does not stop them while it is unbuilt;
it joins this list with the first scenario that needs it."""
WHEELHOUSE: Final = "wheelhouse"
"""Under the tools' cache: the wheels `pulumi package add` needs offline (setuptools, to build flyte-apps
into the package's virtualenv, where every pin is already installed) and the Python consumer's."""


def pulumi_environment(work: Path, tools: Mapping[str, build.Built]) -> dict[str, str]:
    """The Pulumi CLI's environment: its home, backend and HOME in ``work``, the built CLI and this
    repository's virtualenv first on PATH, nothing from the network (no update check, no plugin
    download, no ambient plugins), no colour, wide lines (so diagnostics are not wrapped)."""
    path = os.pathsep.join(
        [str(tools["pulumi"].bin), str(REPO / ".venv" / "bin"), "/usr/sbin", "/usr/bin", "/bin"]
    )
    return cluster.clean_environment(
        {
            "PATH": path,
            "HOME": str(work / "home"),
            "PULUMI_HOME": str(work / "pulumi-home"),
            "PULUMI_BACKEND_URL": f"file://{work / 'state'}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
            "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",
            "NO_COLOR": "1",
            "COLUMNS": "200",
        }
    )


def consumers_environment(work: Path, tools: Mapping[str, build.Built]) -> dict[str, str]:
    """The scenarios' environment: ``pulumi_environment``, with pip, npm and Go offline on what was
    installed and cached beforehand, and node and go on PATH (the consumer programs' toolchains)."""
    env = {**pulumi_environment(work, tools), **offline_pip()}
    env.update(
        build.consumer_environment([t for t in tools.values() if t.tool.kind in build.CONSUMER_KINDS], work)
    )
    env.update(offline_pip())  # after: consumer_environment sets PIP_NO_INDEX alone
    toolchains = [str(Path(found).parent) for found in map(shutil.which, ("node", "go")) if found]
    env["PATH"] = os.pathsep.join([env["PATH"], *dict.fromkeys(toolchains)])
    return env


def offline_pip() -> dict[str, str]:
    """pip without an index: the package's pins are installed, its build backend is in the wheelhouse."""
    return {
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(build.cache_root() / WHEELHOUSE),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
