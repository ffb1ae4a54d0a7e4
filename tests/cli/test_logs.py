"""`flyte-apps logs`: what it prints, when it ends and how it exits, against the fake API server."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import threading

import pytest
import typer
from typer.testing import CliRunner, Result

from flyte_apps.cli.logs import register
from flyte_apps.kube.retry import RetryPolicy
from tests.fakes.kube_api import FakeKubeApi
from tests.kube.test_logs import KSVC, NS, at, drive, log_requests, serving, wait_until
from tests.kube.test_logs import watchdog as watchdog
from tests.support.cli import command_app

RETRY = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02, sleep=lambda _: None)
APP_ARGS = ("myapp", "--project", "proj", "--domain", "dev", "--namespace", NS)


def cli() -> typer.Typer:
    return command_app(lambda app: register(app, poll_interval=0.05, retry=RETRY))


def run(server: FakeKubeApi, *args: str, app_args: tuple[str, ...] = APP_ARGS) -> Result:
    assert server.kubeconfig_path is not None
    argv = ["logs", *app_args, "--kubeconfig", str(server.kubeconfig_path), *args]
    return CliRunner().invoke(cli(), argv)


def no_traceback(result: Result) -> bool:
    output = result.stdout + result.stderr
    return "Traceback" not in output and isinstance(result.exception, SystemExit | None)


# --- output ---------------------------------------------------------------------------------------


def test_text_output_prefixes_each_line_with_its_replica(kube_server: FakeKubeApi) -> None:
    first, second = serving(kube_server, pods=2)
    kube_server.append_log(NS, first, "app", "a", "b", at=at(1))
    kube_server.append_log(NS, second, "app", "c", at=at(2))
    result = run(kube_server)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"{first} | a\n{first} | b\n{second} | c\n"
    assert result.stderr == ""


def test_timestamps_come_before_the_message_in_rfc3339_with_nanoseconds(kube_server: FakeKubeApi) -> None:
    [pod] = serving(kube_server)
    kube_server.append_log(NS, pod, "app", "hello", at=at(1.25))
    result = run(kube_server, "--timestamps")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"{pod} | 2024-01-01T00:00:01.250000000Z hello\n"


def test_one_replica_prints_bare_lines(kube_server: FakeKubeApi) -> None:
    first, second = serving(kube_server, pods=2)
    kube_server.append_log(NS, first, "app", "mine", at=at(1))
    kube_server.append_log(NS, second, "app", "not mine", at=at(1))
    result = run(kube_server, "--replica", first)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "mine\n"


def test_json_output_is_one_object_per_line(kube_server: FakeKubeApi) -> None:
    [pod] = serving(kube_server)
    kube_server.append_log(NS, pod, "app", 'say "hi" ü', at=at(3.5))
    kube_server.append_log(NS, pod, "app", "", at=at(4))
    result = run(kube_server, "-o", "json", "--timestamps")
    assert result.exit_code == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records == [
        {"replica": pod, "timestamp": "2024-01-01T00:00:03.500000000Z", "message": 'say "hi" ü'},
        {"replica": pod, "timestamp": "2024-01-01T00:00:04.000000000Z", "message": ""},
    ]


def test_tail_limits_the_history_of_each_replica(kube_server: FakeKubeApi) -> None:
    first, second = serving(kube_server, pods=2)
    for pod in (first, second):
        kube_server.append_log(NS, pod, "app", "old", "new", at=at(1))
    result = run(kube_server, "--tail", "1")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"{first} | new\n{second} | new\n"
    assert [q["tailLines"] for q in log_requests(kube_server)] == ["1", "1"]


def test_cut_stream_is_resumed_without_repeating_or_losing_lines(kube_server: FakeKubeApi) -> None:
    [pod] = serving(kube_server)
    kube_server.append_log(NS, pod, "app", "one", "two", "three", at=at(1.5))
    kube_server.append_log(NS, pod, "app", "four", at=at(2.5))
    kube_server.cut_streams_after(2, path_contains="/log")
    result = run(kube_server)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [f"{pod} | {m}" for m in ("one", "two", "three", "four")]
    assert len(log_requests(kube_server)) == 2


# --- following ------------------------------------------------------------------------------------


def test_follow_interleaves_replicas_picks_up_a_new_one_and_exits_0_when_all_finish(
    kube_server: FakeKubeApi,
) -> None:
    first, second = serving(kube_server, pods=2)
    third: list[str] = []

    def scenario() -> None:
        wait_until(lambda: len(log_requests(kube_server)) == 2)
        kube_server.append_log(NS, first, "app", "first says hi")
        kube_server.append_log(NS, second, "app", "second says hi")
        third.extend(kube_server.add_revision_pods(NS, KSVC, f"{KSVC}-00001"))
        wait_until(lambda: len(log_requests(kube_server)) == 3)
        kube_server.append_log(NS, third[0], "app", "third says hi")
        for pod in (first, second, third[0]):
            kube_server.finish_pod(NS, pod)

    drive(scenario)
    result = run(kube_server, "--follow")
    assert result.exit_code == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == sorted(
        [f"{first} | first says hi", f"{second} | second says hi", f"{third[0]} | third says hi"]
    )


def test_follow_of_a_scaled_to_zero_app_waits_then_ends_when_the_replica_goes(
    kube_server: FakeKubeApi,
) -> None:
    serving(kube_server, pods=0)
    started: list[str] = []

    def scenario() -> None:
        wait_until(lambda: len(kube_server.requests_matching("GET", "/pods")) >= 2)
        started.extend(kube_server.add_revision_pods(NS, KSVC, f"{KSVC}-00001"))
        wait_until(lambda: len(log_requests(kube_server)) == 1)
        kube_server.append_log(NS, started[0], "app", "cold start done")
        kube_server.finish_pod(NS, started[0])

    drive(scenario)
    result = run(kube_server, "-f")
    assert result.exit_code == 0, result.stderr
    assert "app proj/dev/myapp has no running replicas (scaled to zero)" in result.stderr
    assert result.stdout == f"{started[0]} | cold start done\n"


def printed() -> bytes:
    """What the command wrote to stdout so far: inside ``CliRunner.invoke``, ``sys.stdout`` is the
    runner's wrapper around the bytes it captures."""
    captured = getattr(sys.stdout, "buffer", None)
    return captured.getvalue() if isinstance(captured, io.BytesIO) else b""


def test_following_one_replica_prints_each_line_while_its_stream_stays_open(kube_server: FakeKubeApi) -> None:
    [pod] = serving(kube_server)
    shown_while_open: list[bool] = []

    def scenario() -> None:
        wait_until(lambda: len(log_requests(kube_server)) >= 1)
        kube_server.append_log(NS, pod, "app", "hello")
        try:
            wait_until(lambda: b"hello" in printed())
            shown_while_open.append(True)
        except AssertionError:
            shown_while_open.append(False)
        kube_server.finish_pod(NS, pod)

    drive(scenario)
    result = run(kube_server, "--replica", pod, "--follow")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "hello\n"
    assert shown_while_open == [True], "the line came out only when the stream ended"


def test_ctrl_c_while_following_exits_130_without_a_traceback(kube_server: FakeKubeApi) -> None:
    [pod] = serving(kube_server)
    kube_server.append_log(NS, pod, "app", "hello")

    missed: list[AssertionError] = []

    def press_ctrl_c() -> None:
        try:
            wait_until(lambda: len(log_requests(kube_server)) >= 1)
            wait_until(lambda: b"hello" in printed())  # Ctrl-C while following, after the line is out
        except AssertionError as exc:  # no Ctrl-C then: the watchdog ends the command instead
            missed.append(exc)
            return
        os.kill(os.getpid(), signal.SIGINT)

    drive(press_ctrl_c)
    result = run(kube_server, "--follow")
    assert not missed, f"the line never reached stdout: {result.stdout!r} {result.stderr!r}"
    assert result.exit_code == 130, result.stderr
    assert result.stdout == f"{pod} | hello\n"
    assert no_traceback(result)


def test_follow_whose_stream_keeps_breaking_exits_3_and_stops_the_other_readers(
    kube_server: FakeKubeApi,
) -> None:
    broken, healthy = serving(kube_server, pods=2)
    kube_server.append_log(NS, broken, "app", "never delivered", at=at(1))  # the fake cuts at a chunk
    kube_server.cut_streams_after(0, times=100, path_contains=f"/pods/{broken}/log")
    result = run(kube_server, "--follow")
    assert result.exit_code == 3
    assert f"the log stream of replica 'flyte/{broken}' broke 3 times in a row" in result.stderr
    assert len(log_requests(kube_server, broken)) == RETRY.attempts
    assert len(log_requests(kube_server, healthy)) == 1
    wait_until(lambda: not [t for t in threading.enumerate() if t.name.startswith("logs-")])


# --- not found, scaled to zero, errors ------------------------------------------------------------


def test_scaled_to_zero_says_so_on_stderr_and_exits_0(kube_server: FakeKubeApi) -> None:
    serving(kube_server, pods=0)
    result = run(kube_server)
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == "app proj/dev/myapp has no running replicas (scaled to zero)\n"


def test_missing_app_exits_1(kube_server: FakeKubeApi) -> None:
    result = run(kube_server)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: app proj/dev/myapp not found: no KService 'myapp-proj-dev'")
    assert no_traceback(result)


def test_app_name_unknown_to_the_cluster_exits_1(kube_server: FakeKubeApi) -> None:
    result = run(kube_server, app_args=("ghost", "--namespace", NS))  # resolved through labels
    assert result.exit_code == 1
    assert "app 'ghost' not found in namespace flyte" in result.stderr


@pytest.mark.parametrize(
    ("replica", "message"),
    [
        ("theirs", "pod 'flyte/theirs' is not a replica of app proj/dev/myapp"),
        ("ghost", "replica 'ghost' of app proj/dev/myapp not found in namespace 'flyte'"),
    ],
)
def test_replica_that_is_not_the_apps_exits_1(kube_server: FakeKubeApi, replica: str, message: str) -> None:
    serving(kube_server)
    kube_server.add_pod(NS, "theirs", labels={"serving.knative.dev/service": "other-proj-dev"})
    kube_server.append_log(NS, "theirs", "app", "secret", at=at(1))
    result = run(kube_server, "--replica", replica)
    assert result.exit_code == 1
    assert message in result.stderr
    assert result.stdout == ""


def test_pod_without_user_container_exits_1_naming_it(kube_server: FakeKubeApi) -> None:
    kube_server.add_kservice(NS, KSVC)
    revision = kube_server.reconcile_kservice(NS, KSVC)
    [pod] = kube_server.add_revision_pods(NS, KSVC, revision, containers=["queue-proxy"])
    result = run(kube_server)
    assert result.exit_code == 1
    assert result.stderr == f"error: no user container found in pod {NS}/{pod}\n"


def test_forbidden_exits_3(kube_server: FakeKubeApi) -> None:
    serving(kube_server)
    kube_server.fail_next(403, path_contains="/pods")
    result = run(kube_server)
    assert result.exit_code == 3
    assert "forbidden: RBAC must allow verb 'list' on 'pods' in namespace 'flyte'" in result.stderr


def test_unreachable_cluster_exits_3(kube_server: FakeKubeApi) -> None:
    kube_server.stop()
    result = run(kube_server)
    assert result.exit_code == 3
    assert "cannot reach the Kubernetes API" in result.stderr
    assert no_traceback(result)


@pytest.mark.parametrize(
    "args",
    [("--tail", "-2"), ("-o", "yaml"), ("--stack", "dev", "--config", "Pulumi.dev.yaml")],
)
def test_bad_arguments_exit_2(kube_server: FakeKubeApi, args: tuple[str, ...]) -> None:
    result = run(kube_server, *args)
    assert result.exit_code == 2
    assert log_requests(kube_server) == []
