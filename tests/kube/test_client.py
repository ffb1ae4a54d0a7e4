"""The Kubernetes access layer: cluster lookup order, retries, and the errors users see."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from flyte_apps.kube.api import (
    delete_custom_object,
    delete_pod,
    get_custom_object,
    get_pod,
    list_custom_objects,
    list_pods,
)
from flyte_apps.kube.errors import (
    KubeConfigError,
    KubeConflict,
    KubeError,
    KubeForbidden,
    KubeNotFound,
    KubeUnreachable,
)
from flyte_apps.kube.retry import KubeOperation, RetryPolicy, call
from flyte_apps.kube.target import KubeTarget, build_api_client, resolve_target
from tests.fakes.kube_api import FAKE_TOKEN, FakeKubeApi

GROUP, VERSION = "serving.knative.dev", "v1"
NS = "flyte"


class Sleeps:
    """Records backoff delays instead of sleeping, so retry tests are instant."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def policy(sleeps: Sleeps, **overrides: Any) -> RetryPolicy:
    return RetryPolicy(sleep=sleeps, **overrides)


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def kubeconfig_path(server: FakeKubeApi) -> Path:
    assert server.kubeconfig_path is not None
    return server.kubeconfig_path


def namespaces(api: client.ApiClient) -> list[str]:
    items: list[Any] = client.CoreV1Api(api).list_namespace().items
    return [str(ns.metadata.name) for ns in items]


def isolated_env(tmp_path: Path, **values: str) -> dict[str, str]:
    """An environment whose home has no kubeconfig, plus ``values``."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), **values}


# --- building clients ------------------------------------------------------------------------


def test_builds_client_from_explicit_kubeconfig_path(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    api = build_api_client(KubeTarget(str(kubeconfig_path(kube_server))), isolated_env(tmp_path))
    assert api.configuration.host == kube_server.url
    assert namespaces(api) == ["default"]


@pytest.mark.parametrize("encode", [yaml.safe_dump, json.dumps], ids=["yaml", "json"])
def test_builds_client_from_kubeconfig_content(kube_server: FakeKubeApi, tmp_path: Path, encode: Any) -> None:
    content = encode(kube_server.kubeconfig_dict())
    target = KubeTarget(content)
    assert target.kubeconfig_is_content
    assert namespaces(build_api_client(target, isolated_env(tmp_path))) == ["default"]


def test_builds_client_from_first_existing_kubeconfig_env_path(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    env = isolated_env(
        tmp_path, KUBECONFIG=os.pathsep.join([str(tmp_path / "missing"), str(kubeconfig_path(kube_server))])
    )
    assert namespaces(build_api_client(None, env)) == ["default"]


def test_falls_back_to_home_kube_config(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    env = isolated_env(tmp_path)
    (Path(env["HOME"]) / ".kube").mkdir()
    (Path(env["HOME"]) / ".kube" / "config").write_text(kubeconfig_path(kube_server).read_text())
    assert namespaces(build_api_client(None, env)) == ["default"]


def test_stack_kubeconfig_is_used_when_no_explicit_one_is_given(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    env = isolated_env(tmp_path, KUBECONFIG=str(tmp_path / "elsewhere"))
    api = build_api_client(None, env, stack=KubeTarget(str(kubeconfig_path(kube_server))))
    assert namespaces(api) == ["default"]


def test_context_selects_the_cluster(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    config = kube_server.kubeconfig_dict()
    config["clusters"].append({"name": "dead", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}})
    config["contexts"].append({"name": "dead", "context": {"cluster": "dead", "user": "fake"}})
    config["current-context"] = "dead"
    path = tmp_path / "two-contexts"
    path.write_text(yaml.safe_dump(config))
    env = isolated_env(tmp_path)

    assert namespaces(build_api_client(KubeTarget(str(path), context="fake"), env)) == ["default"]
    by_stack = build_api_client(None, env, stack=KubeTarget(str(path), context="fake"))
    assert by_stack.configuration.host == kube_server.url
    assert build_api_client(KubeTarget(str(path)), env).configuration.host != kube_server.url


def test_unknown_context_is_a_config_error(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="context 'nope'"):
        build_api_client(
            KubeTarget(str(kubeconfig_path(kube_server)), context="nope"), isolated_env(tmp_path)
        )


def test_missing_explicit_kubeconfig_file_is_a_config_error_that_does_not_show_the_value(
    tmp_path: Path,
) -> None:
    # pulumi-kubernetes takes a value it cannot stat for content, so it may be content: never shown.
    with pytest.raises(KubeConfigError, match="names no existing file") as err:
        build_api_client(KubeTarget(str(tmp_path / "absent")), isolated_env(tmp_path))
    assert "absent" not in str(err.value)


def test_malformed_kubeconfig_content_error_does_not_quote_secrets(tmp_path: Path) -> None:
    content = f"apiVersion: v1\nusers:\n- name: u\n  user: {{token: {FAKE_TOKEN}: oops}}\n"
    with pytest.raises(KubeConfigError) as err:
        build_api_client(KubeTarget(content), isolated_env(tmp_path))
    assert str(err.value).startswith("the kubeconfig content is not valid YAML/JSON at line 4")
    assert FAKE_TOKEN not in str(err.value)


def test_nothing_found_names_every_source_tried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    env = isolated_env(tmp_path)
    with pytest.raises(KubeConfigError) as err:
        build_api_client(None, env)
    message = str(err.value)
    assert "no Kubernetes configuration found" in message
    assert "kubernetes:kubeconfig" in message
    assert "KUBECONFIG (unset)" in message
    assert str(Path(env["HOME"]) / ".kube" / "config") in message
    assert "in-cluster service account" in message


def test_building_a_client_leaves_the_global_default_configuration_alone(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    build_api_client(KubeTarget(str(kubeconfig_path(kube_server))), isolated_env(tmp_path))
    assert client.Configuration.get_default_copy().host != kube_server.url


def test_urllib3_retries_are_disabled_so_ours_are_the_only_ones(
    kube_server: FakeKubeApi, tmp_path: Path
) -> None:
    api = build_api_client(KubeTarget(str(kubeconfig_path(kube_server))), isolated_env(tmp_path))
    assert api.configuration.retries.total == 0
    kube_server.fail_next(503, times=1, retry_after="0")
    with pytest.raises(client.ApiException):
        client.CoreV1Api(api).list_namespace()  # urllib3 would retry a 503 with Retry-After


# --- target resolution -------------------------------------------------------------------------


def test_explicit_kubeconfig_wins_and_keeps_its_own_context(tmp_path: Path) -> None:
    resolved = resolve_target(
        KubeTarget("/explicit"), KubeTarget("/stack", context="stack-ctx"), isolated_env(tmp_path)
    )
    assert resolved == KubeTarget("/explicit", None)


def test_explicit_context_overrides_the_stack_context(tmp_path: Path) -> None:
    resolved = resolve_target(
        KubeTarget(context="mine"), KubeTarget("/stack", context="stack-ctx"), isolated_env(tmp_path)
    )
    assert resolved == KubeTarget("/stack", "mine")


def test_no_kubeconfig_anywhere_resolves_to_in_cluster(tmp_path: Path) -> None:
    assert resolve_target(None, None, isolated_env(tmp_path)) == KubeTarget(None, None)


@pytest.mark.parametrize(
    ("value", "is_content"),
    [
        ("{existing}", False),
        ("{missing}", True),  # pulumi-kubernetes takes a value it cannot stat for content
        ('{{"apiVersion": "v1"}}', True),
        ("apiVersion: v1", True),
        ("\ufeffapiVersion: v1", True),
        ("--- {{apiVersion: v1, users: [{{user: {{token: x}}}}]}}", True),
        ("clusters: []\ncontexts: []\n", True),
    ],
)
def test_kubeconfig_content_is_told_apart_from_paths(value: str, is_content: bool, tmp_path: Path) -> None:
    existing = tmp_path / "kubeconfig"
    existing.write_text("apiVersion: v1\n")
    given = value.format(existing=existing, missing=tmp_path / "missing")
    assert KubeTarget(given).kubeconfig_is_content is is_content


# --- retries -----------------------------------------------------------------------------------


def test_retries_two_503s_then_succeeds(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    kube_server.add_kservice(NS, "web")
    kube_server.fail_next(503, times=2, path_contains="/services/web")
    sleeps = Sleeps()
    obj = get_custom_object(
        kube_api,
        group=GROUP,
        version=VERSION,
        plural="services",
        namespace=NS,
        name="web",
        retry=policy(sleeps),
    )
    assert obj["metadata"]["name"] == "web"
    assert sleeps.delays == [0.2, 0.4]
    assert len(kube_server.requests_matching("GET", "/services/web")) == 3


def test_retry_after_on_429_is_honoured_and_capped(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.fail_next(429, times=1, retry_after="0.5")
    kube_server.fail_next(429, times=1, retry_after="120")
    sleeps = Sleeps()
    list_pods(kube_api, namespace=NS, retry=policy(sleeps, max_retry_after=3.0))
    assert sleeps.delays == [0.5, 3.0]


def test_gives_up_after_the_attempt_budget(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    kube_server.fail_next(500, times=100)
    sleeps = Sleeps()
    with pytest.raises(KubeError) as err:
        list_pods(kube_api, namespace=NS, retry=policy(sleeps, attempts=3, base_delay=1.0, max_delay=1.5))
    assert err.value.status == 500
    assert "cannot list pods in namespace 'flyte': HTTP 500" in str(err.value)
    assert "after 3 attempts" in str(err.value)
    assert sleeps.delays == [1.0, 1.5]
    assert len(kube_server.requests) == 3


def test_not_found_is_not_retried(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    sleeps = Sleeps()
    with pytest.raises(KubeNotFound) as err:
        get_custom_object(
            kube_api,
            group=GROUP,
            version=VERSION,
            plural="services",
            namespace=NS,
            name="x",
            retry=policy(sleeps),
        )
    assert err.value.status == 404
    assert str(err.value).startswith("services.serving.knative.dev 'flyte/x' not found")
    assert sleeps.delays == []
    assert len(kube_server.requests) == 1


def test_forbidden_is_not_retried_and_names_verb_resource_and_namespace(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.fail_next(403, method="DELETE")
    sleeps = Sleeps()
    with pytest.raises(KubeForbidden) as err:
        delete_custom_object(
            kube_api,
            group=GROUP,
            version=VERSION,
            plural="revisions",
            namespace=NS,
            name="web-00001",
            retry=policy(sleeps),
        )
    message = str(err.value)
    assert message.startswith(
        "forbidden: RBAC must allow verb 'delete' on 'revisions.serving.knative.dev' in namespace 'flyte' ("
    )
    assert 'cannot delete resource "revisions"' in message  # the server's own words follow
    assert FAKE_TOKEN not in message
    assert err.value.status == 403
    assert sleeps.delays == []


def test_conflict_is_raised_to_the_caller_not_retried(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_kservice(NS, "web")
    sleeps = Sleeps()
    body = {"metadata": {"name": "web"}, "spec": {}}
    with pytest.raises(KubeConflict, match="already exists"):
        call(
            client.CustomObjectsApi(kube_api).create_namespaced_custom_object,
            GROUP,
            VERSION,
            NS,
            "services",
            body,
            op=KubeOperation("create", "services.serving.knative.dev", NS, "web"),
            retry=policy(sleeps),
        )
    assert sleeps.delays == []


def test_read_timeout_is_retried(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    kube_server.add_latency(1.0, times=1)
    sleeps = Sleeps()
    assert list_pods(kube_api, namespace=NS, retry=policy(sleeps), request_timeout=0.2) == []
    assert sleeps.delays == [0.2]


def test_connection_refused_is_unreachable_and_bounded(tmp_path: Path) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}],
        "users": [{"name": "u", "user": {"token": FAKE_TOKEN}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    api = build_api_client(KubeTarget(json.dumps(config)), isolated_env(tmp_path))
    sleeps = Sleeps()
    with pytest.raises(KubeUnreachable) as err:
        list_pods(api, namespace=NS, retry=policy(sleeps))
    message = str(err.value)
    assert message.startswith(f"cannot reach the Kubernetes API at {api.configuration.host}: ")
    assert "Connection refused" in message
    assert "list pods in namespace 'flyte'; 4 attempts" in message
    assert FAKE_TOKEN not in message
    assert err.value.status is None
    assert sleeps.delays == [0.2, 0.4, 0.8]  # the backoff was asked for, never slept


# --- helpers -----------------------------------------------------------------------------------


def test_list_helpers_follow_continue_tokens(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    for i in range(5):
        kube_server.add_pod(NS, f"p{i}", labels={"app": "x"})
    kube_server.add_pod(NS, "other", labels={"app": "y"})
    pods = list_pods(kube_api, namespace=NS, label_selector="app=x", page_size=2)
    assert [p.metadata.name for p in pods if p.metadata] == [f"p{i}" for i in range(5)]
    assert len(kube_server.requests_matching("GET", "/pods")) == 3

    kube_server.add_kservice(NS, "web")
    for _ in range(3):
        kube_server.reconcile_kservice(NS, "web")
    revisions = list_custom_objects(
        kube_api, group=GROUP, version=VERSION, plural="revisions", namespace=NS, page_size=2
    )
    assert [r["metadata"]["name"] for r in revisions] == ["web-00001", "web-00002", "web-00003"]


def test_delete_reports_whether_the_object_was_still_there(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    kube_server.add_kservice(NS, "web")
    revision = kube_server.reconcile_kservice(NS, "web")
    args: dict[str, Any] = {"group": GROUP, "version": VERSION, "plural": "revisions", "namespace": NS}
    assert delete_custom_object(kube_api, name=revision, **args) is True
    assert delete_custom_object(kube_api, name=revision, **args) is False


def test_pod_helpers_read_and_delete_pods(kube_server: FakeKubeApi, kube_api: client.ApiClient) -> None:
    kube_server.add_pod(NS, "p", labels={"app": "x"})
    pod: Any = get_pod(kube_api, namespace=NS, name="p")
    assert pod.metadata.labels == {"app": "x"}
    assert delete_pod(kube_api, namespace=NS, name="p") is True
    assert delete_pod(kube_api, namespace=NS, name="p") is False
    with pytest.raises(KubeNotFound, match="pods 'flyte/p' not found"):
        get_pod(kube_api, namespace=NS, name="p")


# --- credentials (hostile input round 3, item 4) -------------------------------------------------


def user_kubeconfig(
    server: FakeKubeApi, tmp_path: Path, user: dict[str, Any], *, url: str | None = None
) -> Path:
    config = server.kubeconfig_dict()
    config["users"][0]["user"] = user
    if url is not None:
        config["clusters"][0]["cluster"]["server"] = url
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("written", [f"{FAKE_TOKEN}\n", f"  {FAKE_TOKEN}\r\n", f"{FAKE_TOKEN}\n\n"])
def test_a_token_file_is_trimmed_as_kubectl_trims_it(
    kube_server: FakeKubeApi, tmp_path: Path, written: str
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(written)  # `echo $TOKEN > token` leaves a newline; the header cannot carry it
    path = user_kubeconfig(kube_server, tmp_path, {"tokenFile": str(token_file)})
    assert namespaces(build_api_client(KubeTarget(str(path)), isolated_env(tmp_path))) == ["default"]


def test_a_password_in_the_server_url_is_never_in_an_error(kube_server: FakeKubeApi, tmp_path: Path) -> None:
    url = f"http://admin:{FAKE_TOKEN}@127.0.0.1:{free_port()}/?access_token={FAKE_TOKEN}"
    path = user_kubeconfig(kube_server, tmp_path, {"token": "t"}, url=url)
    api = build_api_client(KubeTarget(str(path)), isolated_env(tmp_path))
    with pytest.raises(KubeUnreachable) as err:
        list_custom_objects(
            api, group="serving.knative.dev", version="v1", plural="services", namespace="flyte",
            retry=RetryPolicy(attempts=1, base_delay=0.0),
        )  # fmt: skip
    assert FAKE_TOKEN not in str(err.value)
    assert "***@127.0.0.1" in str(err.value)


def test_an_exec_plugin_that_fails_stops_without_printing_its_output(
    kube_server: FakeKubeApi, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    plugin = tmp_path / "plugin"
    plugin.write_text(f"#!/bin/sh\necho 'refresh failed for token {FAKE_TOKEN}' >&2\nexit 1\n")
    plugin.chmod(0o755)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(plugin),
            "interactiveMode": "Never",
        }
    }
    path = user_kubeconfig(kube_server, tmp_path, user)
    with pytest.raises(KubeConfigError, match="credential plugin failed") as err:
        build_api_client(KubeTarget(str(path)), isolated_env(tmp_path))
    printed = capfd.readouterr()
    assert FAKE_TOKEN not in str(err.value) + printed.out + printed.err
    assert kube_server.requests == ()
