"""Options every ``flyte-apps`` command shares (``--version``, ``-h``, completion, ``--no-color`` and
``NO_COLOR``, flags shown as flags, truthful defaults) and ``status -o wide|yaml`` / ``--exit-code``,
through the real command line."""

from __future__ import annotations

import dataclasses
import re
from importlib import metadata
from pathlib import Path

import pytest
import typer.completion
import yaml
from typer.testing import CliRunner, Result

from flyte_apps.cli.common import ClusterFlags, cluster_options
from flyte_apps.cli.exits import EXIT_DRIFT, EXIT_OK
from flyte_apps.cli.main import COMMANDS, app
from tests.cli.test_status_watch import cluster, config_for, deploy, running, stack_args
from tests.fakes.kube_api import FakeKubeApi

ANSI: re.Pattern[str] = re.compile(r"\x1b\[[0-9;]*m")
WIDE: dict[str, str] = {"COLUMNS": "200"}
COMMAND_NAMES = [spec.name for spec in COMMANDS]
LIVE_COMMANDS = ("status", "watch", "logs")
OFFLINE_COMMANDS = ("render", "check")


def cli(*args: str, env: dict[str, str] | None = None, color: bool = False) -> Result:
    return CliRunner().invoke(app, list(args), env={**WIDE, **(env or {})}, color=color)


def help_row(help_text: str, option: str) -> str:
    """The help line of ``option`` (rich's table row, borders dropped)."""
    return next(line for line in help_text.splitlines() if f" {option} " in f"{line} ")


def test_version_prints_the_installed_version() -> None:
    result = cli("--version")
    assert result.exit_code == EXIT_OK
    assert result.stdout == f"flyte-apps {metadata.version('flyte-apps')}\n"


@pytest.mark.parametrize("args", [["-h"], *([name, "-h"] for name in COMMAND_NAMES)], ids=" ".join)
def test_dash_h_is_help(args: list[str]) -> None:
    short = cli(*args)
    assert short.exit_code == EXIT_OK
    assert short.stdout == cli(*args[:-1], "--help").stdout
    assert "Usage: " in short.stdout


def test_help_lists_completion_version_no_color_and_the_exit_codes() -> None:
    text = cli("--help").stdout
    for option in ("--install-completion", "--show-completion", "--version", "--no-color"):
        assert option in text
    assert "Exit codes: 0 ok, 1 not found" in text
    assert "4 drift (status --exit-code)" in text


def test_show_completion_prints_a_script(monkeypatch: pytest.MonkeyPatch) -> None:
    # typer detects the shell from the process tree, which differs between terminals and CI.
    monkeypatch.setattr(typer.completion, "_get_shell_name", lambda: "bash")
    result = cli("--show-completion")
    assert result.exit_code == EXIT_OK, result.output
    assert "complete -o default -F" in result.stdout


@pytest.mark.parametrize("name", COMMAND_NAMES)
def test_flags_are_shown_without_a_bool_metavar(name: str) -> None:
    text = cli(name, "--help").stdout
    assert "<bool>" not in text
    assert "--no-color" in text


def test_logs_follow_and_timestamps_are_flags() -> None:
    text = cli("logs", "--help").stdout
    for option in ("--follow", "--timestamps"):
        row = help_row(text, option)
        assert "<" not in row.split(option, 1)[1].split("  ", 1)[0]


@pytest.mark.parametrize("name", LIVE_COMMANDS)
def test_cluster_commands_do_not_claim_a_default_stack(name: str) -> None:
    text = cli(name, "--help").stdout
    assert "Default: dev" not in text
    assert "no stack is read" in text


@pytest.mark.parametrize("name", OFFLINE_COMMANDS)
def test_offline_commands_say_their_default_stack(name: str) -> None:
    assert "Default: dev" in cli(name, "--help").stdout


def deploy_with_drift(kube_server: FakeKubeApi) -> None:
    """An active app (its phase is coloured) and a stopped one woken up (drift, printed in colour)."""
    running(kube_server, deploy(kube_server), pods=1)
    running(kube_server, deploy(kube_server, name="stopped-one", stopped=True), pods=1)


def coloured_status(kube_server: FakeKubeApi, *extra: str, env: dict[str, str] | None = None) -> Result:
    deploy_with_drift(kube_server)
    return cli(*extra, "status", *cluster(kube_server), env=env, color=True)


def test_status_is_coloured_when_colour_is_on(kube_server: FakeKubeApi) -> None:
    result = coloured_status(kube_server)
    assert result.exit_code == EXIT_OK, result.stderr
    assert ANSI.search(result.stdout)


@pytest.mark.parametrize(
    ("before", "after", "env"),
    [
        ((), ("--no-color",), {}),
        (("--no-color",), (), {}),
        ((), (), {"NO_COLOR": "1"}),
    ],
    ids=["command-flag", "root-flag", "NO_COLOR"],
)
def test_no_color_removes_every_ansi_escape(
    kube_server: FakeKubeApi, before: tuple[str, ...], after: tuple[str, ...], env: dict[str, str]
) -> None:
    deploy_with_drift(kube_server)
    result = cli(*before, "status", *cluster(kube_server), *after, env=env, color=True)
    assert result.exit_code == EXIT_OK, result.stderr
    assert "drift:" in result.stdout
    assert not ANSI.search(result.output)


def test_an_empty_no_color_keeps_colour(kube_server: FakeKubeApi) -> None:
    result = coloured_status(kube_server, env={"NO_COLOR": ""})
    assert ANSI.search(result.stdout)


def test_render_warnings_obey_no_color(tmp_path: Path) -> None:
    args = ["render", *stack_args(tmp_path, config_for({})), "--out", str(tmp_path / "out")]
    assert ANSI.search(cli(*args, color=True).stderr)
    assert not ANSI.search(cli(*args, "--no-color", color=True).stderr)


def test_status_wide_adds_pod_names_and_revisions(kube_server: FakeKubeApi) -> None:
    running(kube_server, deploy(kube_server), pods=2)
    result = cli("status", "-o", "wide", *cluster(kube_server))
    assert result.exit_code == EXIT_OK, result.stderr
    header, row = result.stdout.splitlines()[:2]
    assert header.split() == ["APP", "PHASE", "REPLICAS", "URL", "AGE", "PODS", "REVISION", "MESSAGE"]
    pods, revision = row.split()[5:7]
    assert revision == "myapp-proj-dev-00001"
    assert [pod.startswith(f"{revision}-deployment-") for pod in pods.split(",")] == [True, True]
    assert row.endswith("  Service is ready")


def test_status_yaml_is_the_json_data(kube_server: FakeKubeApi) -> None:
    running(kube_server, deploy(kube_server), pods=2)
    as_yaml = cli("status", "-o", "yaml", *cluster(kube_server))
    as_json = cli("status", "-o", "json", *cluster(kube_server))
    assert as_yaml.exit_code == EXIT_OK, as_yaml.stderr
    loaded = yaml.safe_load(as_yaml.stdout)
    assert [entry["app"]["metadata"]["id"]["name"] for entry in loaded] == ["myapp"]
    assert len(loaded[0]["replicas"]) == 2
    assert loaded[0].keys() == yaml.safe_load(as_json.stdout)[0].keys()


@pytest.mark.parametrize("output", ["table", "json", "yaml"])
def test_exit_code_is_4_with_drift_and_0_without(
    kube_server: FakeKubeApi, tmp_path: Path, output: str
) -> None:
    deploy(kube_server)
    in_sync = stack_args(tmp_path, config_for({}))
    args = ["--exit-code", "-o", output, "--kubeconfig", str(kube_server.kubeconfig_path)]
    clean = cli("status", *in_sync, *args)
    assert clean.exit_code == EXIT_OK, clean.stdout + clean.stderr
    drifting = stack_args(tmp_path, config_for({}, {"name": "third"}))
    drifted = cli("status", *drifting, *args)
    assert drifted.exit_code == EXIT_DRIFT, drifted.stderr
    without_flag = cli("status", *drifting, "-o", output, "--kubeconfig", str(kube_server.kubeconfig_path))
    assert without_flag.exit_code == EXIT_OK


def test_the_render_help_block_in_the_docs_lists_exactly_renders_options() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "stack-config.md").read_text(encoding="utf-8")
    block = docs.split("$ flyte-apps render --help\n", 1)[1].split("```", 1)[0]
    documented = set(re.findall(r"^  (--[a-z-]+)", block, re.MULTILINE))
    shown = set(re.findall(r"(--[a-z][a-z-]+)", ANSI.sub("", cli("render", "--help").stdout)))
    assert documented == shown - {"--help"}


def test_cluster_options_take_the_place_of_flags_and_reach_the_command_gathered() -> None:
    seen: list[ClusterFlags] = []

    def command(name: str, *, flags: ClusterFlags, last: bool = False) -> None:
        seen.append(flags)
        assert (name, last) == ("myapp", True)

    tool = typer.Typer()
    tool.command()(cluster_options()(command))
    tool.command("other")(lambda: None)
    argv = ["command", "myapp", "--last", "-n", "apps", "--context", "b", "--request-timeout", "5s"]
    result = CliRunner().invoke(tool, [*argv, "--project-dir", "proj", "-s", "prod"])
    assert result.exit_code == 0, result.output
    assert seen == [
        ClusterFlags(
            stack="prod", project_dir=Path("proj"), context="b", namespace="apps", request_timeout="5s"
        )
    ]
    options = [p.name for p in typer.main.get_command(tool).commands["command"].params]  # type: ignore[attr-defined]
    assert options[1:-1] == [f.name for f in dataclasses.fields(ClusterFlags)]
