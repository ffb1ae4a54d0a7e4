"""Hostile stack files through the real ``flyte-apps`` process, as a fork's pull request meets
``render`` and ``check`` in CI: each is refused as a config error (exit 2), one short line per
problem, and the process ends. Run as subprocesses with a generous timeout and a cap on their address
space, so a regression (a hang, a quadratic parse, an expanded alias bomb) fails the test instead of
hanging or swapping the machine; no test here asserts how fast a refusal is."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from flyte_apps.core.bounds import MAX_INPUT_BYTES
from tests.support.config import REPO_ROOT

FLYTE_APPS = str(Path(sys.executable).with_name("flyte-apps"))
TIMEOUT_S = 120
"""Far above a refusal (about a second) and far below what the unbounded reader took (forever)."""
ADDRESS_SPACE = 1 << 30
"""1 GiB: the CLI needs a fraction of it; the alias bomb's expanded value needs much more."""
LONG_LINE = 400
EXIT_CONFIG = 2
HEAD = "config:\n  flyte-apps:project: proj\n  flyte-apps:domain: dev\n"
APP = "  flyte-apps:apps:\n    - name: myapp\n      container:\n        image: nginx:1.27\n"


def billion_laughs() -> str:
    lines = [HEAD, "  lol0: &a0 [" + ", ".join(['"lol"'] * 9) + "]\n"]
    for level in range(1, 10):
        lines.append(f"  lol{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]\n")
    return "".join(lines) + APP + "        env:\n          BOMB: *a9\n"


def nested(levels: int) -> str:
    return HEAD + APP + "        env:\n          DEEP: " + "[" * levels + "]" * levels + "\n"


def nested_block(levels: int) -> str:
    keys = "".join(" " * (12 + depth) + f"k{depth}:\n" for depth in range(levels))
    return HEAD + APP + "        env:\n          DEEP:\n" + keys


def platform(setting: str) -> str:
    return HEAD + f"  flyte-apps:platform:\n    {setting}\n" + APP


def pod_templates(apps: int) -> str:
    """``apps`` apps, each with a pod template of about 66 values (a sidecar, env, volumes)."""
    entry = (
        "    - name: app{i}\n"
        "      pod:\n"
        "        spec:\n"
        "          containers:\n"
        "            - name: app\n"
        "              image: nginx:1.27\n"
        "              env: [" + ", ".join(f"{{name: E{j}, value: x}}" for j in range(10)) + "]\n"
        "            - {name: side, image: 'busybox:1.36', args: [" + ", ".join("a" * 10) + "]}\n"
        "          volumes: [" + ", ".join(f"{{name: v{j}, emptyDir: {{}}}}" for j in range(5)) + "]\n"
    )
    return HEAD + "  flyte-apps:apps:\n" + "".join(entry.replace("{i}", str(i)) for i in range(apps))


def many_values(count: int) -> str:
    """One app whose env holds a list of ``count`` values: a file of 2 MB, within the byte bound."""
    return HEAD + APP + "        env:\n          BIG: [" + "1," * count + "]\n"


HOSTILE: dict[str, tuple[Callable[[], str], str]] = {
    "pod-templates-beyond-the-cost-bound": (
        lambda: pod_templates(1_600),
        "the apps' pod templates (flyte-apps:apps[*].pod) hold more than 100,000 values together",
    ),
    "values-beyond-the-cost-bound": (
        lambda: many_values(1_000_001),
        "the stack holds more than 1,000,000 values",
    ),
    "alias-bomb": (billion_laughs, "aliases (*name); a stack file may use at most 20"),
    "500-levels": (lambda: nested(500), "nests maps and lists deeper than 64 levels"),
    "3000-levels": (lambda: nested_block(3000), "exceeded maximum nesting depth"),
    "huge-file": (
        lambda: HEAD + APP + "        env: {BIG: '" + "x" * (MAX_INPUT_BYTES + 1024) + "'}\n",
        "a stack file may be at most 16.0 MiB",
    ),
    "60000-digit-duration": (
        lambda: platform("reaperTimeout: " + "9" * 60_000 + "s"),
        "flyte-apps:platform.reaperTimeout: '9999",
    ),
    "60000-digit-duration-without-unit": (
        lambda: platform('reaperTimeout: "' + "9" * 60_000 + '"'),
        "flyte-apps:platform.reaperTimeout: '9999",
    ),
    "60000-digit-int": (lambda: platform("watchBufferSize: " + "9" * 60_000), "is longer than 40 characters"),
    "1e23-for-an-int": (lambda: platform("watchBufferSize: 1e23"), "flyte-apps:platform.watchBufferSize:"),
    "int-beyond-its-bound": (
        lambda: platform("watchBufferSize: 100000000000"),
        "flyte-apps:platform.watchBufferSize: input should be less than or equal to 100000",
    ),
    "100000-character-name": (
        lambda: HEAD.replace("project: proj", "project: " + "p" * 100_000) + APP,
        "characters) is not a valid Kubernetes label value",
    ),
}


def cap_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run(command: str, stack_file: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [FLYTE_APPS, command, "--project-dir", str(stack_file.parent), "--config", str(stack_file)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        preexec_fn=cap_address_space,
        check=False,
    )


@pytest.mark.parametrize("command", ["render", "check"])
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_stack_file_is_one_line_config_error(tmp_path: Path, case: str, command: str) -> None:
    build, expected = HOSTILE[case]
    stack_file = tmp_path / "Pulumi.hostile.yaml"
    stack_file.write_text(build(), encoding="utf-8")

    done = run(command, stack_file)

    assert done.returncode == EXIT_CONFIG, done.stderr[-2000:]
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines, "no error line"
    assert all(line.startswith("error: ") for line in lines), [line[:200] for line in lines]
    assert all(len(line) <= LONG_LINE for line in lines), [line[:200] for line in lines]
    assert "Traceback" not in done.stderr
    assert any(expected in line for line in lines), lines
