"""The engine benchmark's measures: a stop's span from the times the engine records in the stack's
state, and the program's peak RSS sampled from ``/proc``; and the stacks it writes for our program."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from bench import engine_scale
from bench.engine_scale import (
    APP_FILE_SUFFIX,
    FLOOR_CONFIG_KEY,
    OURS,
    PROGRAM_MARK,
    SAME_GRAPH,
    TYPE_KSERVICE,
    ProgramProbe,
    Projects,
    config_for,
    instant,
    reaper_steps,
    side_on,
    stop_span,
)
from bench.trace import Span
from flyte_apps.cli.stackfile import plan_stack_files
from flyte_apps.core.plan import plan_stack
from tests.e2e import cluster

REAPER = "pulumi-python:dynamic/flyte:RevisionReaper"
PREFIX = "urn:pulumi:s::p::flyte:apps:FlyteApp$"


def resource(type_: str, name: str, **times: str) -> dict[str, Any]:
    return {"urn": f"{PREFIX}{type_}::{name}", "type": type_, **times}


def state(*resources: dict[str, Any]) -> dict[str, Any]:
    return {"deployment": {"resources": list(resources)}}


def test_a_stop_spans_from_the_first_kservice_update_to_the_last_reaper_create() -> None:
    before = state(
        resource(TYPE_KSERVICE, "app-00001-kservice", modified="2026-12-05T10:00:00Z"),
        resource(TYPE_KSERVICE, "app-00002-kservice", modified="2026-12-05T10:00:00Z"),
        resource(TYPE_KSERVICE, "app-00003-kservice", modified="2026-12-05T10:00:00Z"),
    )
    after = state(
        resource(TYPE_KSERVICE, "app-00001-kservice", modified="2026-12-05T10:01:00.250000000Z"),
        resource(TYPE_KSERVICE, "app-00002-kservice", modified="2026-12-05T10:01:00.5Z"),
        resource(TYPE_KSERVICE, "app-00003-kservice", modified="2026-12-05T10:00:00Z"),
        resource(REAPER, "app-00001-reaper", created="2026-12-05T10:01:04.250000001Z"),
        resource(REAPER, "app-00002-reaper", created="2026-12-05T10:01:02Z"),
    )
    span = stop_span(after, before, [{"name": "app-00001"}, {"name": "app-00002"}])
    assert span == pytest.approx(4.0)


def test_a_stop_span_refuses_a_kservice_the_stop_did_not_update() -> None:
    before = state(resource(TYPE_KSERVICE, "app-00001-kservice", modified="2026-12-05T10:00:00Z"))
    after = state(
        resource(TYPE_KSERVICE, "app-00001-kservice", modified="2026-12-05T10:00:00Z"),
        resource(REAPER, "app-00001-reaper", created="2026-12-05T10:01:02Z"),
    )
    with pytest.raises(RuntimeError, match="the KService of app-00001 was not updated"):
        stop_span(after, before, [{"name": "app-00001"}])


def test_a_stop_span_refuses_a_stop_without_its_reaper() -> None:
    before = state(resource(TYPE_KSERVICE, "app-00001-kservice", modified="2026-12-05T10:00:00Z"))
    after = state(resource(TYPE_KSERVICE, "app-00001-kservice", modified="2026-12-05T10:00:01Z"))
    with pytest.raises(RuntimeError, match="expected 1 updated KServices and reapers, found 1 and 0"):
        stop_span(after, before, [{"name": "app-00001"}])


def plugin(start: float, prefix: str) -> Span:
    return Span("newPlugin", start, start + 0.1, {"kind": "resource", "prefix": prefix})


def call(method: str, start: float, end: float, peer: str) -> Span:
    return Span(f"pulumirpc.ResourceProvider/{method}", start, end, {"net.peer.name": peer})


def test_the_reapers_steps_are_the_dynamic_hosts_creates_from_the_first_start_to_the_last_end() -> None:
    # The kubernetes provider updates the KServices and creates nothing the rows count; the host's
    # Check is not a step; the third create waited for one of the first two to end.
    spans = [
        plugin(1.0, "kubernetes (resource)"),
        call("Update", 1.2, 1.5, "127.0.0.1:1"),
        call("Create", 1.3, 1.4, "127.0.0.1:1"),
        plugin(2.0, "pulumi-python (resource)"),
        call("Check", 2.1, 2.2, "127.0.0.1:2"),
        call("Create", 2.5, 4.0, "127.0.0.1:2"),
        call("Create", 2.6, 3.6, "127.0.0.1:2"),
        call("Create", 2.7, 4.5, "127.0.0.1:2"),
    ]
    steps = reaper_steps(spans, 3)
    assert (steps.span, steps.slowest) == pytest.approx((2.0, 1.8))


def test_the_reapers_steps_refuse_a_trace_without_each_reaper() -> None:
    spans = [plugin(2.0, "pulumi-python (resource)"), call("Create", 2.5, 4.0, "127.0.0.1:2")]
    with pytest.raises(RuntimeError, match="expected 2 reaper creates in the trace, found 1"):
        reaper_steps(spans, 2)


def test_state_times_keep_their_fraction_and_zone() -> None:
    assert instant("1970-01-01T00:00:01.123456789Z") == pytest.approx(1.123456)
    assert instant("1970-01-01T01:00:00+01:00") == 0.0


def test_the_peak_rss_is_the_program_process_of_the_project_and_no_other(tmp_path: Path) -> None:
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    grow = "import sys; b = bytearray(int(sys.argv[1]) << 20); sys.stdin.read()"

    def program(cwd: Path, mib: int) -> subprocess.Popen[str]:
        argv = [sys.executable, "-c", grow, str(mib), PROGRAM_MARK]
        return subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, text=True)

    with ProgramProbe(project) as probe:
        ours, theirs = program(project, 64), program(other, 256)
        try:
            for proc, mib in ((ours, 64), (theirs, 256)):
                until(reached(proc.pid, mib), f"{proc.pid} reaches {mib} MiB")
            until(lambda: probe.mib >= 64, "the sampler sees the program's 64 MiB")
        finally:
            for proc in (ours, theirs):
                proc.communicate("", timeout=30)
    assert 64 <= probe.mib < 256
    assert probe.pids == [ours.pid]
    assert probe.lifetime > 0


def test_the_probe_follows_each_run_of_the_program_one_after_another(tmp_path: Path) -> None:
    """`pulumi up` runs the program twice (a preview pass, then the update): both count."""
    grow = "import sys; b = bytearray(int(sys.argv[1]) << 20); sys.stdin.read()"
    runs: list[int] = []
    with ProgramProbe(tmp_path) as probe:
        for mib in (32, 96):
            run = subprocess.Popen(
                [sys.executable, "-c", grow, str(mib), PROGRAM_MARK],
                cwd=tmp_path,
                stdin=subprocess.PIPE,
                text=True,
            )
            try:
                until(reached(run.pid, mib), f"{run.pid} reaches {mib} MiB")
                until(seen_by(probe, run.pid, mib), f"the probe sees {run.pid}")
            finally:
                run.communicate("", timeout=30)
            runs.append(run.pid)
    assert probe.pids == runs
    assert 96 <= probe.mib < 200


def seen_by(probe: ProgramProbe, pid: int, mib: int) -> Callable[[], bool]:
    """Whether the probe has found the process and sampled its ``mib``."""
    return lambda: pid in probe.pids and probe.mib >= mib


def reached(pid: int, mib: int) -> Callable[[], bool]:
    """Whether the process's peak RSS has reached ``mib``."""

    def check() -> bool:
        status = Path(f"/proc/{pid}/status").read_text()
        return int(next(x for x in status.splitlines() if x.startswith("VmHWM:")).split()[1]) >= mib * 1024

    return check


def until(condition: Callable[[], bool], what: str) -> None:
    """Wait for ``condition``, at most 2,000 checks 10 ms apart."""
    for _ in range(2_000):
        if condition():
            return
        time.sleep(0.01)
    msg = f"timed out waiting until {what}"
    raise AssertionError(msg)


@pytest.mark.parametrize(("apps", "in_files"), [(100, False), (500, True)])
def test_our_side_keeps_its_apps_in_a_file_only_where_pulumi_could_not_hand_them_to_the_program(
    tmp_path: Path, apps: int, in_files: bool
) -> None:
    plane = SimpleNamespace(kubeconfig=tmp_path / "kubeconfig")
    side = side_on(plane, Projects(tmp_path, tmp_path, tmp_path), OURS)  # type: ignore[arg-type]
    config = config_for(apps, "bench")
    side.write_stack(tmp_path / "Pulumi.s.yaml", config)
    plan, given = plan_stack_files(project_dir=tmp_path, stack="s", as_pulumi_runs_it=True)
    assert [o.manifest for o in plan.objects()] == [o.manifest for o in plan_stack(config).objects()]
    assert (given.app_paths is not None and given.app_paths[0].startswith("flyte-apps:appFiles")) == in_files


@pytest.mark.parametrize(("apps", "files"), [(100, 0), (500, 1)])
def test_the_same_graph_side_carries_our_stack_config_as_ours_writes_it(
    tmp_path: Path, apps: int, files: int
) -> None:
    # The engine hands a dynamic provider the stack's whole config and keeps it in the state: both
    # sides must give it the same, inline or in apps files.
    plane = SimpleNamespace(kubeconfig=tmp_path / "kubeconfig")
    ours_dir, same_dir = tmp_path / "ours", tmp_path / "same"
    ours_dir.mkdir()
    same_dir.mkdir()
    projects = Projects(ours_dir, same_dir, tmp_path)
    config = config_for(apps, "bench")
    side_on(plane, projects, OURS).write_stack(ours_dir / "Pulumi.s.yaml", config)  # type: ignore[arg-type]
    side_on(plane, projects, SAME_GRAPH).write_stack(same_dir / "Pulumi.s.yaml", config)  # type: ignore[arg-type]
    ours = yaml.safe_load((ours_dir / "Pulumi.s.yaml").read_text())["config"]
    same = yaml.safe_load((same_dir / "Pulumi.s.yaml").read_text())["config"]
    assert {k: v for k, v in same.items() if k != FLOOR_CONFIG_KEY} == ours
    ours_files = sorted(path.name for path in ours_dir.glob(f"*{APP_FILE_SUFFIX}"))
    assert len(ours_files) == files
    assert sorted(path.name for path in same_dir.glob(f"*{APP_FILE_SUFFIX}")) == ours_files


def plane_running(*children: subprocess.Popen[bytes]) -> SimpleNamespace:
    """A stand-in for a control plane whose recorded processes are ``children``."""
    processes = [
        cluster.Process(f"p{child.pid}", child.pid, [], "", cluster.start_time(child.pid) or 0)
        for child in children
    ]
    return SimpleNamespace(state=SimpleNamespace(processes=processes), dead=lambda: None)


BUSY_FOR = (
    "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass\ntime.sleep(60)"
)


def test_a_step_waits_until_the_control_plane_has_gone_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_scale, "QUIET_WINDOW_S", 0.5)
    monkeypatch.setattr(engine_scale, "SETTLE_S", 60.0)  # a quiet plane never seen fails, naming it
    busy = subprocess.Popen([sys.executable, "-c", BUSY_FOR.format(seconds=3)])
    try:
        waited = engine_scale.settle(plane_running(busy))  # type: ignore[arg-type]
        assert waited > 2.5
    finally:
        busy.kill()
        busy.wait()


def test_a_control_plane_that_never_goes_quiet_is_an_error_that_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(engine_scale, "QUIET_WINDOW_S", 0.5)
    monkeypatch.setattr(engine_scale, "SETTLE_S", 2.0)
    busy = subprocess.Popen([sys.executable, "-c", BUSY_FOR.format(seconds=60)])
    try:
        with pytest.raises(cluster.ClusterError, match="a quiet control plane: not ready after 2 s"):
            engine_scale.settle(plane_running(busy))  # type: ignore[arg-type]
    finally:
        busy.kill()
        busy.wait()
