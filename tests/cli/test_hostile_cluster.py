"""A cluster that answers garbage or nothing (issue 17, items 2 and 3): `status`, `logs` and `watch`
end with exit 3 and one error line, in bounded time, never a traceback.

The commands run as subprocesses with a generous outer timeout, so a regression (a loop, a hang)
fails the test instead of hanging the suite; no test asserts a precise wall-clock time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.kube_api import FakeKubeApi
from tests.fakes.kube_semantics import KSERVICES, REVISIONS
from tests.support.config import MINIMAL_NAMESPACE as NS
from tests.support.config import minimal_kservice

FLYTE_APPS = str(Path(sys.executable).with_name("flyte-apps"))
OUTER_TIMEOUT = 90.0
"""Seconds a command may take before the test calls it a hang (the bounds under test are far less)."""
HTML_LOGIN = "<!DOCTYPE html><html><body><form action='/login'>Sign in</form></body></html>"
LOGS = ("logs", "myapp", "--project", "proj", "--domain", "dev")
STATUS = ("status",)
WATCH = ("watch",)


def serving(server: FakeKubeApi) -> str:
    """The stack's app (proj/dev/myapp), reconciled, ready, with one running replica; its pod."""
    manifest = minimal_kservice()
    server.create(KSERVICES, manifest, NS)
    name = str(manifest["metadata"]["name"])
    revision = server.reconcile_kservice(NS, name)
    server.patch(REVISIONS, NS, revision, {"status": {"actualReplicas": 1}}, status=True)
    [pod] = server.add_revision_pods(NS, name, revision, count=1)
    return pod


def run(server: FakeKubeApi, *args: str) -> subprocess.CompletedProcess[str]:
    assert server.kubeconfig_path is not None
    argv = [FLYTE_APPS, *args, "--kubeconfig", str(server.kubeconfig_path), "--namespace", NS]
    return subprocess.run(argv, capture_output=True, text=True, timeout=OUTER_TIMEOUT, check=False)


def errors_of(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The error lines; asserts there is no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def one_error(result: subprocess.CompletedProcess[str]) -> str:
    """Exit 3 with exactly one error line, the last line of stderr; that line."""
    assert result.returncode == 3, (result.returncode, result.stderr)
    [line] = errors_of(result)
    assert result.stderr.splitlines()[-1] == line
    return line


# --- answers of the wrong shape ----------------------------------------------------------------------


@pytest.mark.parametrize("command", [STATUS, LOGS, WATCH], ids=["status", "logs", "watch"])
def test_an_html_login_page_with_status_200_is_a_cluster_error(
    kube_server: FakeKubeApi, command: tuple[str, ...]
) -> None:
    serving(kube_server)
    kube_server.serve_raw_next(None, 200, HTML_LOGIN, "text/html", times=None)
    line = one_error(run(kube_server, *command))
    assert "not a Kubernetes response" in line
    assert "login page" in line


@pytest.mark.parametrize("command", [STATUS, LOGS, WATCH], ids=["status", "logs", "watch"])
def test_an_array_where_the_kservice_belongs_is_a_cluster_error(
    kube_server: FakeKubeApi, command: tuple[str, ...]
) -> None:
    serving(kube_server)
    kube_server.serve_raw_next("/services", 200, "[]", times=None)
    line = one_error(run(kube_server, *command))
    assert "services.serving.knative.dev" in line
    assert "expected a JSON object, got a JSON array" in line


def test_invalid_json_for_the_revisions_is_a_cluster_error_of_status(kube_server: FakeKubeApi) -> None:
    serving(kube_server)
    kube_server.serve_raw_next("/revisions", 200, '{"items": [', times=None)
    line = one_error(run(kube_server, *STATUS))
    assert "revisions.serving.knative.dev" in line


@pytest.mark.parametrize("command", [STATUS, LOGS], ids=["status", "logs"])
@pytest.mark.parametrize(
    "body",
    [
        '{"kind": "PodList", "items": [',
        '{"kind": "PodList", "items": [1, "x"]}',
        '{"items": [{"metadata": []}]}',
    ],
    ids=["invalid-json", "items-not-objects", "metadata-not-an-object"],
)
def test_pods_of_the_wrong_shape_are_a_cluster_error(
    kube_server: FakeKubeApi, command: tuple[str, ...], body: str
) -> None:
    serving(kube_server)
    kube_server.serve_raw_next("/pods", 200, body, times=None)
    line = one_error(run(kube_server, *command))
    assert "pods in namespace" in line
    assert "not a Kubernetes response" in line


@pytest.mark.parametrize("command", [STATUS, LOGS, WATCH], ids=["status", "logs", "watch"])
def test_a_repeating_continue_token_is_an_error_not_a_loop(
    kube_server: FakeKubeApi, command: tuple[str, ...]
) -> None:
    serving(kube_server)
    page = '{"kind": "List", "items": [], "metadata": {"continue": "again"}}'
    kube_server.serve_raw_next("/", 200, page, times=None)
    line = one_error(run(kube_server, *command))
    assert "continue token 'again' repeats" in line


def test_watch_says_why_it_lists_again_and_gives_up_on_garbage_events(kube_server: FakeKubeApi) -> None:
    serving(kube_server)
    kube_server.serve_raw_next("watch=true", 200, '{"type": "ADDED", "object": []}\n', times=None)
    result = run(kube_server, *WATCH)
    line = one_error(result)
    assert "gave up after 5 bad responses in a row" in line
    warnings = [w for w in result.stderr.splitlines() if not w.startswith("error:")]
    assert warnings, result.stderr
    assert all("'object' is not a JSON object: a JSON array" in w and "listing again" in w for w in warnings)
    assert "CREATED  proj/dev/myapp" in result.stdout  # the app was listed before the garbage


# --- silence -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [STATUS, LOGS, WATCH], ids=["status", "logs", "watch"])
def test_a_cluster_that_never_answers_is_given_up_at_the_request_timeout(
    kube_server: FakeKubeApi, command: tuple[str, ...]
) -> None:
    serving(kube_server)
    kube_server.add_latency(OUTER_TIMEOUT)
    line = one_error(run(kube_server, *command, "--request-timeout", "1s"))
    assert "within --request-timeout 1s" in line


@pytest.mark.parametrize("value", ["soon", "-1s", "1.5", "9" * 100])
def test_a_request_timeout_that_is_not_a_duration_is_a_usage_error(
    kube_server: FakeKubeApi, value: str
) -> None:
    result = run(kube_server, *STATUS, "--request-timeout", value)
    assert result.returncode == 2, result.stderr
    [line] = errors_of(result)
    assert line.startswith("error: --request-timeout: ")
    assert len(line) < 200


@pytest.mark.parametrize("value", ["0", "30", "1m", "1m30s"])
def test_request_timeout_takes_kubectls_syntax(kube_server: FakeKubeApi, value: str) -> None:
    serving(kube_server)
    result = run(kube_server, *STATUS, "--request-timeout", value)
    assert result.returncode == 0, result.stderr
    assert "proj/dev/myapp" in result.stdout
