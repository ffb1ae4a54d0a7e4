"""The e2e harness's own pieces that run without the built tools: the versions file against the
wrapper modules, the cache key, the relays that join network namespaces, process identity."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from tests.e2e import build, cluster, package_scenarios


def requirements(go_mod: Path) -> dict[str, str]:
    """module -> version of every require line (single and block form) of a go.mod."""
    found = {}
    for line in go_mod.read_text().splitlines():
        match = re.match(r"^\s*(?:require\s+)?([\w./-]+\.[\w./-]+)\s+(v\S+)", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


@pytest.mark.parametrize("name", list(build.load_tools()))
def test_each_wrapper_requires_exactly_the_versions_the_versions_file_names(name: str) -> None:
    tool = build.load_tools()[name]
    required = requirements(tool.wrapper_dir / "go.mod")
    assert (tool.wrapper_dir / "go.sum").is_file()
    for module in (*tool.modules, *([tool.module_files_from] if tool.module_files_from else [])):
        path, version = module.split("@")
        assert required.get(path) == version, f"{tool.wrapper}/go.mod requires {path} {required.get(path)}"


def test_the_versions_file_names_a_go_and_what_each_tool_builds() -> None:
    document = tomllib.loads(build.VERSIONS_FILE.read_text())
    assert document["go"]["version"].startswith("go1.")
    for tool in build.load_tools().values():
        assert tool.binaries and tool.wrapper_dir.is_dir()


def test_the_cache_key_follows_the_wrapper_files_and_the_go_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = build.load_tools()["etcd"]
    copy = tmp_path / "tools" / tool.wrapper
    shutil.copytree(tool.wrapper_dir, copy)
    monkeypatch.setattr(build, "WRAPPERS_DIR", tmp_path / "tools")
    key = build.tool_key(tool, "go1.26.8")
    assert build.tool_key(tool, "go1.26.8") == key
    assert build.tool_key(tool, "go1.27.0") != key
    (copy / "go.sum").write_text((copy / "go.sum").read_text() + "\n")
    assert build.tool_key(tool, "go1.26.8") != key


def test_locate_names_every_tool_that_is_not_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(build, "go_version", lambda: "go1.26.8")
    with pytest.raises(build.ToolError, match="not built yet: etcd, knative"):
        build.locate(["etcd", "knative"])


def test_a_relay_joins_a_unix_socket_to_a_tcp_port(tmp_path: Path) -> None:
    with socket.socket() as server:
        server.bind((cluster.LOOPBACK, 0))
        server.listen()
        server.settimeout(10)
        port = server.getsockname()[1]
        sock = tmp_path / "relay.sock"
        relay = subprocess.Popen(
            [sys.executable, "-m", cluster.SELF, "_relay", f"unix:{sock}=tcp:{cluster.LOOPBACK}:{port}"],
            cwd=cluster.REPO,
        )
        try:
            for _ in range(100):
                if sock.exists():
                    break
                time.sleep(0.1)
            with socket.socket(socket.AF_UNIX) as client:
                client.settimeout(10)
                client.connect(str(sock))
                conn, _ = server.accept()
                with conn:
                    client.sendall(b"ping")
                    assert conn.recv(4) == b"ping"
                    conn.sendall(b"pong")
                    assert client.recv(4) == b"pong"
        finally:
            relay.terminate()
            relay.wait(10)


def test_an_endpoint_is_unix_or_tcp() -> None:
    assert cluster.parse_endpoint("unix:/tmp/a.sock") == ("unix", "/tmp/a.sock", 0)
    assert cluster.parse_endpoint("tcp:127.0.0.1:6443") == ("tcp", "127.0.0.1", 6443)
    with pytest.raises(ValueError, match="not an endpoint"):
        cluster.parse_endpoint("http://x")


def test_a_recorded_process_is_known_by_its_start_time_not_only_its_pid() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        started = cluster.start_time(child.pid)
        assert started is not None
        alive = cluster.Process("sleeper", child.pid, [sys.executable], os.devnull, started)
        assert cluster.runs_recorded_command(alive)
        reused = cluster.Process("sleeper", child.pid, [sys.executable], os.devnull, started + 1)
        assert not cluster.runs_recorded_command(reused)
        cluster.stop_processes([alive])
        assert not cluster.runs_recorded_command(alive)
    finally:
        child.kill()
        child.wait()


def test_cpu_seconds_count_what_running_recorded_processes_used_and_nothing_of_a_reused_pid() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    # The sleeper outlives the bounded wait below, so the idle check measures a running process.
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        recorded = [
            cluster.Process(name, child.pid, [sys.executable], os.devnull, cluster.start_time(child.pid) or 0)
            for name, child in (("busy", busy), ("idle", idle))
        ]
        busy_before, idle_before = (cluster.cpu_seconds([process]) for process in recorded)

        def busy_used() -> bool:
            return cluster.cpu_seconds(recorded[:1]) - busy_before > 0.3

        def spinning() -> str | None:
            return None if busy.poll() is None else "the spinning process"

        cluster.wait_until("the spinning process's CPU counted", busy_used, 30, alive=spinning)
        assert idle.poll() is None
        assert cluster.cpu_seconds(recorded[1:]) - idle_before < 0.05
        reused = cluster.Process("busy", busy.pid, [sys.executable], os.devnull, recorded[0].started + 1)
        assert cluster.cpu_seconds([reused]) == 0
        busy.kill()
        busy.wait()
        assert cluster.cpu_seconds(recorded) == cluster.cpu_seconds(recorded[1:])
    finally:
        for child in (busy, idle):
            child.kill()
            child.wait()


PLUGIN_LIKE = """
import subprocess, sys, time
from pathlib import Path
plugin = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], process_group=0)
Path(sys.argv[1]).write_text(str(plugin.pid))
time.sleep(60)
"""
"""A command that starts a child in a process group of its own (as the Pulumi CLI starts each plugin)."""


def started_with_a_plugin(tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    pid_file = tmp_path / "plugin.pid"
    command = subprocess.Popen(
        [sys.executable, "-c", PLUGIN_LIKE, str(pid_file)], start_new_session=True, text=True
    )
    deadline = time.monotonic() + 30
    while not pid_file.is_file() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the command did not start its plugin"
        time.sleep(0.05)
    return command, int(pid_file.read_text())


def test_stopping_a_command_stops_what_it_started_in_process_groups_of_its_own(tmp_path: Path) -> None:
    command, plugin = started_with_a_plugin(tmp_path)
    try:
        assert os.getpgid(plugin) == plugin != command.pid
        assert sorted(cluster.session_members(command.pid)) == sorted([command.pid, plugin])
        cluster.stop_group(command)
        assert command.returncode is not None
        assert cluster.start_time(plugin) is None
        assert cluster.session_members(command.pid) == []
    finally:
        cluster.kill_session(command.pid)
        command.wait(timeout=30)


def test_a_command_killed_alone_leaves_its_plugins_to_be_killed_by_its_session(tmp_path: Path) -> None:
    command, plugin = started_with_a_plugin(tmp_path)
    try:
        os.killpg(command.pid, signal.SIGKILL)
        command.wait(timeout=30)
        assert cluster.start_time(plugin) is not None
        assert cluster.kill_session(command.pid) == [plugin]
        assert cluster.start_time(plugin) is None
    finally:
        cluster.kill_session(command.pid)


def test_the_go_consumer_is_written_in_the_generated_sdks_types() -> None:
    document = json.loads((package_scenarios.PLUGIN / "schema.json").read_text())
    inputs = document["resources"]["flyte:apps:FlyteApp"]["inputProperties"]
    types = document["types"]
    container = {"image": "x:1", "ports": [{"containerPort": 80}], "resources": {"requests": {"cpu": "1"}}}
    assert package_scenarios.go_value(container, inputs["container"], types) == (
        '&apps.ContainerArgs{Image: pulumi.String("x:1"), '
        "Ports: apps.PortArray{apps.PortArgs{ContainerPort: pulumi.Int(80)}}, "
        'Resources: &apps.ResourcesArgs{Requests: pulumi.StringMap{"cpu": pulumi.String("1")}}}'
    )
    assert package_scenarios.go_value(True, inputs["stopped"], types) == "pulumi.Bool(true)"
