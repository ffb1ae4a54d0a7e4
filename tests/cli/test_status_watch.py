"""`flyte-apps status` and `flyte-apps watch` end to end: real client, fake API server, exit codes."""

from __future__ import annotations

import copy
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from flyteidl2.app import app_definition_pb2 as app_pb
from flyteidl2.app import replica_definition_pb2 as replica_pb
from flyteidl2.app.app_payload_pb2 import WatchResponse
from google.protobuf.json_format import ParseDict
from typer.testing import CliRunner, Result

from flyte_apps.cli import status as status_command
from flyte_apps.cli import watch as watch_command
from flyte_apps.cli.exits import EXIT_DRIFT
from flyte_apps.core import constants as c
from flyte_apps.core.plan import plan_stack
from tests.fakes.kube_api import FAKE_NODE, FAKE_TOKEN, FakeKubeApi
from tests.fakes.kube_semantics import DOMAIN_MAPPINGS, KSERVICES, NAMESPACES, NODES, PODS, REVISIONS
from tests.support.cli import command_app, without_locations
from tests.support.config import MINIMAL_NAMESPACE as NS
from tests.support.config import minimal_config, minimal_kservice, write_stack
from tests.support.upstream_kservice import upstream_kservice

BASE_DOMAIN = "apps.example.com"
HUB_WATCHES = 2
"""Watches a hub holds open: KServices and Revisions."""


def run(*args: str) -> Result:
    return CliRunner().invoke(command_app(status_command.register, watch_command.register), list(args))


def cluster(server: FakeKubeApi) -> list[str]:
    assert server.kubeconfig_path is not None
    return ["--kubeconfig", str(server.kubeconfig_path), "--base-domain", BASE_DOMAIN]


def config_for(*apps: dict[str, Any]) -> dict[str, Any]:
    raw = minimal_config()
    raw["flyte-apps:apps"] = [{"name": "myapp", "container": {"image": "nginx:1.27"}, **app} for app in apps]
    raw["flyte-apps:platform"] = {"baseDomain": BASE_DOMAIN}
    return raw


STACK_NAMESPACE_LABELS: Final = {"app.kubernetes.io/managed-by": "pulumi"}
"""What `pulumi up` of a stack puts on the apps' namespace."""


def deploy(server: FakeKubeApi, **app: Any) -> str:
    """Create the KService the stack renders for one app (default proj/dev/myapp); its name."""
    manifest = minimal_kservice(**app)
    deploy_manifest(server, manifest)
    return str(manifest["metadata"]["name"])


def deploy_manifest(server: FakeKubeApi, manifest: dict[str, Any]) -> None:
    """Create a KService in the namespace as a stack labels it."""
    server.create(KSERVICES, manifest, NS)
    server.patch(NAMESPACES, "", NS, {"metadata": {"labels": STACK_NAMESPACE_LABELS}})


def running(server: FakeKubeApi, name: str, *, pods: int = 1) -> None:
    """Knative reconciled it: a ready revision with ``pods`` serving pods."""
    revision = server.reconcile_kservice(NS, name)
    server.patch(REVISIONS, NS, revision, {"status": {"actualReplicas": pods}}, status=True)
    server.add_revision_pods(NS, name, revision, count=pods)


def stack_args(tmp_path: Path, raw: dict[str, Any]) -> list[str]:
    return ["--config", str(write_stack(tmp_path, raw)), "--project-dir", str(tmp_path)]


@contextmanager
def later(seconds: float, action: Callable[[], object]) -> Iterator[None]:
    timer = threading.Timer(seconds, action)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


@pytest.fixture
def closed_port_kubeconfig(tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig naming a local port that refuses connections for the whole test.

    Regression: the port used to be bound, released, then used, so another process could take it
    in between and the test saw a live server (or a hang) instead of a refusal. Now a socket keeps
    the port bound, without SO_REUSEADDR so no one else can bind it, and never listens: on Linux a
    connect to a bound port with no listener is refused at once (ECONNREFUSED).
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
            "users": [{"name": "u", "user": {"token": FAKE_TOKEN}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
        }
        path = tmp_path / "closed-kubeconfig"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        yield path


# --- status ----------------------------------------------------------------------------------------


def test_status_table_shows_phase_replicas_url_age_and_message(kube_server: FakeKubeApi) -> None:
    running(kube_server, deploy(kube_server), pods=2)
    deploy(kube_server, name="stopped-one", stopped=True)
    result = run("status", *cluster(kube_server))
    assert result.exit_code == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["APP", "PHASE", "REPLICAS", "URL", "AGE", "MESSAGE"]
    app, phase, replicas, url, age = rows[0].split()[:5]
    assert (app, phase, replicas, url) == (
        "proj/dev/myapp",
        "ACTIVE",
        "2",
        f"https://myapp-proj-dev.{BASE_DOMAIN}",
    )
    assert age in ("0s", "1s", "2s")
    assert rows[0].endswith("  Service is ready")
    assert rows[1].split()[:4] == [
        "proj/dev/stopped-one",
        "STOPPED",
        "0",
        "-",  # stopped apps are cluster-local: no public URL
    ]
    assert rows[1].endswith("App scaled to zero")


HOSTILE_MESSAGE = "pull failed\x1b]0;owned\x07\nproj/dev/evil  ACTIVE  9  https://evil.example"


def test_cluster_text_cannot_add_rows_or_reach_the_terminal(kube_server: FakeKubeApi) -> None:
    name = deploy(kube_server)
    running(kube_server, name)
    conditions = [
        {"type": "Ready", "status": "False", "reason": "RevisionFailed", "message": HOSTILE_MESSAGE}
    ]
    kube_server.patch(KSERVICES, NS, name, {"status": {"conditions": conditions}}, status=True)
    result = run("status", *cluster(kube_server))
    assert result.exit_code == 0, result.stderr
    _header, *rows = result.stdout.splitlines()
    assert len(rows) == 1, rows  # no row of the message's making
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert rows[0].endswith("pull failed\\x1b]0;owned\\x07\\nproj/dev/evil  ACTIVE  9  https://evil.example")


def test_status_json_parses_back_into_apps_and_replicas(kube_server: FakeKubeApi) -> None:
    running(kube_server, deploy(kube_server), pods=2)
    result = run("status", "myapp", "-o", "json", *cluster(kube_server))
    assert result.exit_code == 0, result.stderr
    (entry,) = json.loads(result.stdout)
    app = ParseDict(entry["app"], app_pb.App())
    replicas = [ParseDict(item, replica_pb.Replica()) for item in entry["replicas"]]
    assert app.metadata.id == app_pb.Identifier(org="flyte", project="proj", domain="dev", name="myapp")
    assert app.status.current_replicas == 2
    assert app.status.ingress.public_url == f"https://myapp-proj-dev.{BASE_DOMAIN}"
    assert [r.status.deployment_status for r in replicas] == ["ACTIVE", "ACTIVE"]
    assert all(r.metadata.id.app_id == app.metadata.id for r in replicas)
    assert "drift" not in entry


def test_status_filters_by_project_and_domain(kube_server: FakeKubeApi) -> None:
    deploy(kube_server)
    deploy(kube_server, project="other")
    result = run("status", "-p", "other", "-o", "json", *cluster(kube_server))
    assert result.exit_code == 0, result.stderr
    assert [entry["app"]["metadata"]["id"]["project"] for entry in json.loads(result.stdout)] == ["other"]


def test_status_flags_spec_and_stop_drift_from_the_stack(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    name = deploy(kube_server)
    deploy(kube_server, name="second")
    annotations = {c.ANNOTATION_SPEC_SHA: "0123456789abcdef"}
    kube_server.patch(
        KSERVICES, NS, name, {"metadata": {"annotations": annotations}}
    )  # changed in Flyte's UI
    stack = stack_args(tmp_path, config_for({}, {"name": "second", "stopped": True}, {"name": "third"}))
    assert kube_server.kubeconfig_path is not None
    result = run("status", *stack, "--kubeconfig", str(kube_server.kubeconfig_path))
    assert result.exit_code == 0, result.stderr
    drift = result.stdout.split("drift:\n", 1)[1].splitlines()
    assert drift[0].startswith(
        "  proj/dev/myapp: live flyte.org/spec-sha 0123456789abcdef differs from the stack's "
    )
    assert drift[0].endswith(
        "someone changed it through Flyte's UI; `pulumi up --refresh` puts the stack's version back"
    )
    assert drift[1].startswith("  proj/dev/second: app is running but the stack has it stopped")
    assert drift[2] == (
        "  proj/dev/third: in the stack but not in the cluster: `pulumi up --refresh` creates it (a plain "
        "`pulumi up` does not see an object deleted by hand)"
    )

    as_json = run("status", *stack, "-o", "json", "--kubeconfig", str(kube_server.kubeconfig_path))
    assert [[d["kind"] for d in e.get("drift", [])] for e in json.loads(as_json.stdout)] == [
        ["spec"],
        ["stopped"],
    ]


def test_status_flags_a_stopped_app_that_has_replicas(kube_server: FakeKubeApi) -> None:
    running(kube_server, deploy(kube_server, stopped=True), pods=1)  # in-cluster traffic woke it
    result = run("status", "myapp", *cluster(kube_server))
    assert result.exit_code == 0, result.stderr
    assert "proj/dev/myapp: app is stopped but has 1 replica: in-cluster traffic" in result.stdout


def test_status_of_an_ambiguous_name_exits_2_listing_the_apps(kube_server: FakeKubeApi) -> None:
    deploy(kube_server)
    deploy(kube_server, project="other")
    result = run("status", "myapp", *cluster(kube_server))
    assert result.exit_code == 2
    assert result.stderr == (
        "error: app name 'myapp' matches several apps: other/dev/myapp, proj/dev/myapp; "
        "pass --project and --domain\n"
    )


def test_status_of_a_missing_app_exits_1(kube_server: FakeKubeApi) -> None:
    result = run("status", "nope", *cluster(kube_server))
    assert result.exit_code == 1
    assert result.stderr == "error: app 'nope' not found in namespace flyte\n"
    result = run("status", "myapp", "-p", "proj", "-d", "dev", *cluster(kube_server))
    assert result.exit_code == 1
    assert (
        result.stderr == "error: app proj/dev/myapp not found: KService flyte/myapp-proj-dev does not exist\n"
    )


def test_status_with_no_apps_says_so_and_succeeds(kube_server: FakeKubeApi) -> None:
    result = run("status", *cluster(kube_server))
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == "no apps found in namespace flyte\n"


def test_status_against_an_unreachable_cluster_exits_3_with_one_line(closed_port_kubeconfig: Path) -> None:
    result = run("status", "--kubeconfig", str(closed_port_kubeconfig))
    assert result.exit_code == 3
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: cannot reach the Kubernetes API at http://127.0.0.1:")
    assert FAKE_TOKEN not in result.stderr
    assert result.stdout == ""


def test_status_with_a_bad_stack_config_exits_2(tmp_path: Path) -> None:
    result = run("status", *stack_args(tmp_path, {"flyte-apps:apps": [{"name": "x"}]}))
    assert result.exit_code == 2
    assert "error: flyte-apps:apps[0].container: is required" in without_locations(result.stderr)


# --- watch ----------------------------------------------------------------------------------------


def test_watch_json_lines_parse_back_into_watch_responses(kube_server: FakeKubeApi) -> None:
    name = deploy(kube_server)
    deploy(kube_server, project="other")
    args = ("watch", "-o", "json", "--max-events", "3", "--timeout", "10", *cluster(kube_server))
    with later(0.3, lambda: kube_server.reconcile_kservice(NS, name)):
        result = run(*args)
    assert result.exit_code == 0, result.stderr
    events = [ParseDict(json.loads(line), WatchResponse()) for line in result.stdout.splitlines()]
    assert [e.WhichOneof("event") for e in events] == ["create_event", "create_event", "update_event"]
    assert [e.create_event.app.metadata.id.project for e in events[:2]] == ["other", "proj"]
    assert events[2].update_event.updated_app.status.conditions[0].message == "Service is ready"
    assert not events[2].update_event.old_app.status.conditions


def test_watch_text_prints_one_line_per_event_with_phase_changes(kube_server: FakeKubeApi) -> None:
    name = deploy(kube_server)

    def reconcile_once_watched() -> None:
        # Once the watch is open (its first list done), not at a fixed delay: a slow start under load
        # would list the KService already reconciled, and no UPDATED event would follow.
        for _ in range(1000):
            if kube_server.open_watches >= HUB_WATCHES:
                break
            time.sleep(0.01)
        kube_server.reconcile_kservice(NS, name)

    threading.Thread(target=reconcile_once_watched, daemon=True).start()
    result = run("watch", "myapp", "--max-events", "2", "--timeout", "10", *cluster(kube_server))
    assert result.exit_code == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first.split()[1:] == [
        "CREATED",
        "proj/dev/myapp",
        "UNKNOWN",
        "replicas",
        "0",
        f"https://myapp-proj-dev.{BASE_DOMAIN}",
    ]
    assert second.split()[1:5] == ["UPDATED", "proj/dev/myapp", "UNKNOWN", "->"]
    assert second.endswith("ACTIVE  replicas 0  https://myapp-proj-dev.apps.example.com  Service is ready")


def test_watch_text_shows_cluster_text_as_escapes(kube_server: FakeKubeApi) -> None:
    name = deploy(kube_server)
    conditions = [
        {"type": "Ready", "status": "False", "reason": "RevisionFailed", "message": HOSTILE_MESSAGE}
    ]
    kube_server.patch(KSERVICES, NS, name, {"status": {"conditions": conditions}}, status=True)
    result = run("watch", "myapp", "--max-events", "1", "--timeout", "10", *cluster(kube_server))
    assert result.exit_code == 0, result.stderr
    [line] = result.stdout.splitlines()
    assert "\x1b" not in line and line.endswith("\\nproj/dev/evil  ACTIVE  9  https://evil.example")


def test_watch_of_one_app_ignores_namesakes_in_other_projects(kube_server: FakeKubeApi) -> None:
    deploy(kube_server)
    other = deploy(kube_server, project="other")
    with later(0.3, lambda: kube_server.reconcile_kservice(NS, other)):
        result = run("watch", "myapp", "-p", "proj", "-d", "dev", "--timeout", "1", *cluster(kube_server))
    assert result.exit_code == 0, result.stderr
    assert [line.split()[2] for line in result.stdout.splitlines()] == ["proj/dev/myapp"]


def test_watch_waits_for_an_app_that_does_not_exist_yet(kube_server: FakeKubeApi) -> None:
    with later(0.3, lambda: deploy(kube_server, name="later", project="other")):
        result = run("watch", "later", "--max-events", "1", "--timeout", "10", *cluster(kube_server))
    assert result.exit_code == 0, result.stderr
    assert result.stderr == "app 'later' not found yet; waiting for */*/later in namespace flyte\n"
    assert result.stdout.split()[1:3] == ["CREATED", "other/dev/later"]


def test_watch_of_an_ambiguous_name_exits_2(kube_server: FakeKubeApi) -> None:
    deploy(kube_server)
    deploy(kube_server, project="other")
    result = run("watch", "myapp", "--timeout", "1", *cluster(kube_server))
    assert result.exit_code == 2
    assert "matches several apps: other/dev/myapp, proj/dev/myapp" in result.stderr


def test_watch_ends_on_ctrl_c_with_exit_130_and_no_traceback(
    kube_server: FakeKubeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(watch_command, "stream", interrupted)
    result = run("watch", *cluster(kube_server))
    assert result.exit_code == 130
    assert "Traceback" not in result.stderr + result.stdout
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_watch_against_an_unreachable_cluster_exits_3_with_one_line(closed_port_kubeconfig: Path) -> None:
    result = run("watch", "--timeout", "1", "--kubeconfig", str(closed_port_kubeconfig))
    assert result.exit_code == 3
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: cannot reach the Kubernetes API at http://127.0.0.1:")


# --- the kube layer's warnings --------------------------------------------------------------------

REVISIONS_LIST_FORBIDDEN = "/revisions"
"""The first request to a Revision path is the command's LIST of them (fail_next matches in order)."""
NO_SUCH_RESOURCE_TYPE = "the server could not find the requested resource"


def test_status_prints_the_kube_layers_revision_fallback_as_one_warning(kube_server: FakeKubeApi) -> None:
    running(kube_server, deploy(kube_server), pods=2)
    kube_server.fail_next(403, times=1, method="GET", path_contains=REVISIONS_LIST_FORBIDDEN)
    result = run("status", *cluster(kube_server))
    assert result.exit_code == 0, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("warning: forbidden")
    assert line.endswith(
        "; reading each app's Revision instead (grant list on revisions.serving.knative.dev to avoid it)"
    )
    assert result.stdout.splitlines()[1].split()[:3] == ["proj/dev/myapp", "ACTIVE", "2"]


def test_watch_prints_the_hubs_revision_fallback_as_one_warning(kube_server: FakeKubeApi) -> None:
    running(kube_server, deploy(kube_server), pods=2)
    kube_server.fail_next(403, times=1, method="GET", path_contains=REVISIONS_LIST_FORBIDDEN)
    result = run("watch", "--max-events", "1", "--timeout", "10", *cluster(kube_server))
    assert result.exit_code == 0, result.stderr
    (line,) = result.stderr.splitlines()  # said once, by the hub's start (no thread involved)
    assert line.startswith("warning: forbidden")
    assert "; reading each app's Revision per event instead (grant list and watch on " in line
    assert result.stdout.split()[1:6] == ["CREATED", "proj/dev/myapp", "ACTIVE", "replicas", "2"]


@pytest.mark.parametrize("revisions", [403, 404], ids=["revisions-forbidden", "revisions-missing"])
def test_watch_that_cannot_list_kservices_prints_only_the_error(
    kube_server: FakeKubeApi, revisions: int
) -> None:
    """The hub's Revision list fails first (a refusal, or no Knative); the KService list then fails:
    the hub never starts, and nothing about Revisions comes before the one-line error."""
    kube_server.fail_next(revisions, times=1000, path_contains="/revisions", message=NO_SUCH_RESOURCE_TYPE)
    kube_server.fail_next(404, times=1000, path_contains="/services", message=NO_SUCH_RESOURCE_TYPE)
    result = run("watch", "--timeout", "1", *cluster(kube_server))
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        "error: Knative Serving is not installed in this cluster (no services.serving.knative.dev)"
    ]


GARBAGE_SHAPES = {
    "conditions-a-string": {"status": {"conditions": "broken"}},
    "conditions-a-map": {"status": {"conditions": {"type": "Ready"}}},
    "conditions-of-strings": {"status": {"conditions": ["Ready", "True"]}},
    "status-a-list": {"status": ["Ready"]},
    "annotations-a-list": {"metadata": {"annotations": ["flyte.org/app-id"]}},
    "replicas-a-string": {"status": {"actualReplicas": "many"}},
}


@pytest.mark.parametrize("shape", list(GARBAGE_SHAPES.values()), ids=list(GARBAGE_SHAPES))
@pytest.mark.parametrize("command", [["status"], ["watch", "--max-events", "1", "--timeout", "3"]], ids=str)
def test_objects_of_any_shape_never_crash_status_or_watch(
    kube_server: FakeKubeApi, shape: dict[str, Any], command: list[str]
) -> None:
    manifest = minimal_kservice()
    for part, value in shape.items():
        manifest[part] = {**manifest.get(part, {}), **value} if isinstance(value, dict) else value
    deploy_manifest(kube_server, manifest)
    result = run(*command, *cluster(kube_server))
    assert result.exit_code == 0, (result.output, result.exception)
    assert "Traceback" not in result.output


def test_status_reports_knative_settings_lost_when_flyte_starts_a_stopped_app(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    # Flyte's app service starts a stopped app by rebuilding its KService from the spec (upstream's
    # Deploy), and the spec does not hold the app's `knative` settings: they are gone, and that is drift.
    knative = {"scaleDownDelay": "15m", "containerConcurrency": 2}
    ours = minimal_kservice(knative=knative)
    rebuilt = upstream_kservice(ours["metadata"]["annotations"][c.ANNOTATION_SPEC], "proj", "dev", "myapp")
    deploy_manifest(kube_server, rebuilt)
    stack = stack_args(tmp_path, config_for({"knative": knative}))
    assert kube_server.kubeconfig_path is not None
    result = run("status", *stack, "--kubeconfig", str(kube_server.kubeconfig_path), "--exit-code")
    drift = result.stdout.split("drift:\n", 1)[1].splitlines()
    assert drift == [
        "  proj/dev/myapp: autoscaling.knative.dev/scale-down-delay is missing on the live revision "
        "template, the stack's '15m0s' (Flyte's app service rebuilds the KService from the spec, which "
        "does not hold it): `pulumi up --refresh` puts the stack's version back",
        "  proj/dev/myapp: containerConcurrency is missing on the live revision template, the stack's 2 "
        "(Flyte's app service rebuilds the KService from the spec, which does not hold it): "
        "`pulumi up --refresh` puts the stack's version back",
    ]
    assert result.exit_code == EXIT_DRIFT
    kube_server.delete(KSERVICES, NS, str(ours["metadata"]["name"]))
    deploy_manifest(kube_server, ours)  # what `pulumi up` deploys: no drift
    again = run("status", *stack, "--kubeconfig", str(kube_server.kubeconfig_path), "--exit-code")
    assert "drift:" not in again.stdout, again.stdout


def drift_lines(result: Result) -> list[str]:
    if "drift:\n" not in result.stdout:
        return []
    section = result.stdout.split("drift:\n", 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in section.splitlines() if line.strip()]


def edit_first_container(server: FakeKubeApi, name: str, edit: Callable[[dict[str, Any]], None]) -> None:
    """``kubectl edit`` of the revision template's first container (merge patches replace lists)."""
    live = server.get(KSERVICES, NS, name)
    assert live is not None
    containers = live["spec"]["template"]["spec"]["containers"]
    edit(containers[0])
    server.patch(KSERVICES, NS, name, {"spec": {"template": {"spec": {"containers": containers}}}})


def test_status_reports_a_hand_edited_image_and_env_var_naming_each_field(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    app = {"container": {"image": "nginx:1.27", "env": {"LOG_LEVEL": "info"}}}
    name = deploy(kube_server, **app)

    def hand_edit(container: dict[str, Any]) -> None:
        container["image"] = "example.com/someone/else:hand-edit"
        next(var for var in container["env"] if var["name"] == "LOG_LEVEL")["value"] = "debug"

    edit_first_container(kube_server, name, hand_edit)
    stack = stack_args(tmp_path, config_for(app))
    assert kube_server.kubeconfig_path is not None
    result = run("status", *stack, "--kubeconfig", str(kube_server.kubeconfig_path), "--exit-code")
    assert result.exit_code == EXIT_DRIFT, result.stdout
    put_back = "(changed outside the stack): `pulumi up --refresh` puts the stack's version back"
    assert drift_lines(result) == [
        "proj/dev/myapp: spec.template.spec.containers[0].image is 'example.com/someone/else:hand-edit' "
        f"live, the stack's 'nginx:1.27' {put_back}",
        "proj/dev/myapp: spec.template.spec.containers[0].env[0].value is 'debug' live, "
        f"the stack's 'info' {put_back}",
    ]
    as_json = run("status", *stack, "-o", "json", "--kubeconfig", str(kube_server.kubeconfig_path))
    assert [d["kind"] for d in json.loads(as_json.stdout)[0]["drift"]] == ["field", "field"]


def test_fields_the_stack_does_not_render_and_the_servers_defaults_are_no_drift(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    app = {"container": {"image": "nginx:1.27", "ports": [{"containerPort": 8080}]}}
    name = deploy(kube_server, **app)

    def defaults(container: dict[str, Any]) -> None:
        # What Knative's webhook and the CRD's schema defaults add (tests/e2e/defaults.yaml).
        container["readinessProbe"] = {"successThreshold": 1, "tcpSocket": {"port": 0}}
        container["ports"][0]["protocol"] = "TCP"

    edit_first_container(kube_server, name, defaults)
    someone_elses = {"metadata": {"annotations": {"team.example.com/owner": "ml"}, "labels": {"cost": "a"}}}
    kube_server.patch(KSERVICES, NS, name, {**someone_elses, "spec": {"template": someone_elses}})
    stack = stack_args(tmp_path, config_for(app))
    assert kube_server.kubeconfig_path is not None
    result = run("status", *stack, "--kubeconfig", str(kube_server.kubeconfig_path), "--exit-code")
    assert result.exit_code == 0, result.stdout
    assert drift_lines(result) == []


def test_status_names_what_flytes_rebuild_of_a_private_gpu_app_took_away(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    # Flyte's app service rebuilds a KService from the spec alone when it updates it (a Deploy of
    # another spec-sha): the visibility label, GPU counts and accelerator placement are gone.
    app = {
        "visibility": "cluster-local",
        "container": {"image": "nginx:1.27", "resources": {"requests": {"gpu": 1}, "limits": {"gpu": 1}}},
        "accelerator": {"device": "nvidia-tesla-a100"},
    }
    ours = minimal_kservice(**app)
    rebuilt = upstream_kservice(ours["metadata"]["annotations"][c.ANNOTATION_SPEC], "proj", "dev", "myapp")
    deploy_manifest(kube_server, rebuilt)
    stack = stack_args(tmp_path, config_for(app))
    assert kube_server.kubeconfig_path is not None
    result = run("status", *stack, "--kubeconfig", str(kube_server.kubeconfig_path), "--exit-code")
    assert result.exit_code == EXIT_DRIFT, result.stdout
    named = [line.split(": ", 1)[1].split(" is ", 1)[0] for line in drift_lines(result)]
    assert named == [
        "metadata.labels.networking.knative.dev/visibility",
        "spec.template.spec.containers[0].resources.requests",
        "spec.template.spec.containers[0].resources.limits",
        "spec.template.spec.affinity",
        "spec.template.spec.tolerations",
    ]
    assert "spec-sha" not in result.stdout  # the spec is Flyte's own bytes: no spec drift


def test_knatives_default_container_concurrency_is_no_drift(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    # Knative's webhook writes containerConcurrency: 0 on every revision template (found by the real
    # engine): that is its default, not a setting the stack lacks.
    manifest = minimal_kservice()
    manifest["spec"]["template"]["spec"][c.FIELD_CONTAINER_CONCURRENCY] = 0
    deploy_manifest(kube_server, manifest)
    stack = stack_args(tmp_path, config_for({}))
    assert kube_server.kubeconfig_path is not None
    result = run("status", *stack, "--kubeconfig", str(kube_server.kubeconfig_path), "--exit-code")
    assert result.exit_code == 0, result.stdout
    assert "drift:" not in result.stdout


def test_status_reports_the_namespace_label_removed_by_hand(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    """Someone removed the label the stack puts on the apps' namespace: drift (exit 4), one line naming it."""
    running(kube_server, deploy(kube_server))
    kube_server.patch(NAMESPACES, "", NS, {"metadata": {"labels": {"app.kubernetes.io/managed-by": None}}})
    stack = stack_args(tmp_path, config_for({}))
    assert kube_server.kubeconfig_path is not None
    result = run("status", *stack, "--exit-code", "--kubeconfig", str(kube_server.kubeconfig_path))
    assert result.exit_code == EXIT_DRIFT, result.stderr
    assert result.stdout.split("drift:\n", 1)[1].splitlines() == [
        f"  namespace {NS}: label app.kubernetes.io/managed-by is missing, the stack's 'pulumi': "
        "`pulumi up --refresh` puts the stack's version back"
    ]


def test_status_reports_the_namespace_gone_and_someone_elses_labels_are_no_drift(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    stack = stack_args(tmp_path, config_for({}))
    assert kube_server.kubeconfig_path is not None
    kubeconfig = ("--kubeconfig", str(kube_server.kubeconfig_path))
    gone = run("status", *stack, "--exit-code", *kubeconfig)
    assert gone.exit_code == EXIT_DRIFT
    assert f"  namespace {NS}: namespace {NS} is not in the cluster: `pulumi up --refresh` creates it" in (
        gone.stdout.splitlines()
    )
    running(kube_server, deploy(kube_server))
    kube_server.patch(NAMESPACES, "", NS, {"metadata": {"labels": {"team": "ml"}}})
    assert run("status", *stack, "--exit-code", *kubeconfig).exit_code == 0


LOST_NODE_STATUS: Final = {
    "conditions": [
        {
            "type": "Ready",
            "status": "Unknown",
            "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.",
        }
    ]
}
LOST_NODE_SAYS: Final = "NotReady (NodeStatusUnknown: Kubelet stopped posting node status.)"


def lose_the_node(server: FakeKubeApi) -> dict[str, str]:
    """What Kubernetes writes once the node stops reporting: the Node's Ready condition Unknown, and each
    of its pods' Ready condition False (the containers' statuses stay as the kubelet left them). Each
    pod's name -> its KService."""
    server.create(NODES, {"metadata": {"name": FAKE_NODE}, "status": LOST_NODE_STATUS})
    pods = {}
    for name in server.names(PODS, NS):
        pod = server.get(PODS, NS, name)
        assert pod is not None
        conditions = [{"type": "Ready", "status": "False"}]
        server.patch(PODS, NS, name, {"status": {"conditions": conditions}}, status=True)
        pods[name] = pod["metadata"]["labels"][c.LABEL_KNATIVE_SERVICE]
    return pods


def note_lines(result: Result) -> list[str]:
    return result.stdout.split("notes:\n", 1)[1].splitlines() if "notes:\n" in result.stdout else []


def test_status_names_each_app_whose_replicas_are_on_a_lost_node(kube_server: FakeKubeApi) -> None:
    """Flyte's replica status stays ACTIVE (upstream's table reads containers); a note, one line per app,
    says it has no ready replica, naming the pod and the node's state. An app scaled to zero has no
    replica and no note. A note is not drift: `--exit-code` stays 0."""
    running(kube_server, deploy(kube_server))
    running(kube_server, deploy(kube_server, name="other"))
    deploy(kube_server, name="idle")
    pods = {kservice: pod for pod, kservice in lose_the_node(kube_server).items()}
    result = run("status", *cluster(kube_server), "--exit-code")
    assert result.exit_code == 0, result.stdout
    assert note_lines(result) == [
        f"  proj/dev/{app}: no ready replica: its replica is not Ready: pod {pods[f'{app}-proj-dev']} "
        f"on node {FAKE_NODE}, which is {LOST_NODE_SAYS}"
        for app in ("myapp", "other")
    ]
    entries = json.loads(run("status", *cluster(kube_server), "-o", "json").stdout)
    replicas = [r["status"]["deploymentStatus"] for entry in entries for r in entry["replicas"]]
    assert replicas == ["ACTIVE", "ACTIVE"]
    notes = {entry["app"]["metadata"]["id"]["name"]: entry.get("notes") for entry in entries}
    assert notes["idle"] is None
    assert [n["kind"] for n in notes["myapp"]] == ["no-ready-replica"]


def test_status_without_permission_to_read_nodes_still_names_the_unready_pod(
    kube_server: FakeKubeApi,
) -> None:
    running(kube_server, deploy(kube_server))
    (pod,) = lose_the_node(kube_server)
    kube_server.fail_next(403, times=10, method="GET", path_contains="/nodes/")
    result = run("status", *cluster(kube_server))
    assert result.exit_code == 0, result.stderr
    assert note_lines(result) == [
        f"  proj/dev/myapp: no ready replica: its replica is not Ready: pod {pod} on node {FAKE_NODE}: not "
        "Ready (Running)"
    ]
    assert result.stderr == ""


def test_status_reports_a_domain_mapping_deleted_by_hand(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    """The stack maps a custom host to a running public app and the cluster has no DomainMapping for it:
    drift (exit 4), one line naming the host and the repair."""
    raw = config_for({"ingress": {"subdomain": "dash"}})
    (planned,) = plan_stack(raw).apps
    deploy_manifest(kube_server, copy.deepcopy(planned.kservice))
    running(kube_server, planned.kservice_name)
    stack = stack_args(tmp_path, raw)
    result = run("status", *stack, *cluster(kube_server), "--exit-code")
    assert result.exit_code == EXIT_DRIFT, result.stdout
    assert drift_lines(result) == [
        f"proj/dev/myapp: DomainMapping dash.{BASE_DOMAIN} is in the stack but not in the cluster: `pulumi "
        "up --refresh` creates it (a plain `pulumi up` does not see an object deleted by hand)"
    ]
    kube_server.create(DOMAIN_MAPPINGS, copy.deepcopy(planned.domains.mappings[0]), NS)
    assert run("status", *stack, *cluster(kube_server), "--exit-code").exit_code == 0
