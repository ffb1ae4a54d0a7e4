"""The RevisionReaper dynamic resource: registered only for stopped apps, offline in preview,
leak-free when pickled, and doing the real work through the provider against the fake API server."""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from pulumi.dynamic import ConfigureRequest
from pulumi.dynamic.config import Config
from pulumi.dynamic.dynamic import serialize_provider

from components.reaper import RevisionReaperError, RevisionReaperProvider
from flyte_apps.core import constants as c
from tests.fakes.kube_api import FAKE_TOKEN, FakeKubeApi
from tests.fakes.kube_semantics import KSERVICES, REVISIONS
from tests.support.bounded_run import run_bounded
from tests.support.config import MINIMAL_KSERVICE as KSVC
from tests.support.config import MINIMAL_NAMESPACE as NAMESPACE
from tests.support.config import REPO_ROOT, minimal_config
from tests.support.pulumi_harness import install, run_program


def two_apps(*, stopped: bool) -> dict[str, Any]:
    config = minimal_config(stopped=stopped)
    config["flyte-apps:apps"].append({"name": "other", "container": {"image": "nginx:1.27"}})
    return config


def reaper_inputs(config: dict[str, Any]) -> list[dict[str, Any]]:
    capture, _ = install(config)
    run_program()
    return [r.inputs for r in capture.of_type(c.TYPE_DYNAMIC_REVISION_REAPER)]


def test_stopped_apps_get_exactly_one_reaper_and_running_apps_none() -> None:
    (inputs,) = reaper_inputs(two_apps(stopped=True))
    assert inputs["kservice_name"] == KSVC
    assert inputs["namespace"] == NAMESPACE
    assert inputs["timeout_seconds"] == 30
    assert reaper_inputs(two_apps(stopped=False)) == []


def test_the_two_reapers_keep_the_type_tokens_in_every_reaper_urn_of_users_state() -> None:
    # Changing either would make every stopped app's reaper a new resource (a delete and a create).
    assert c.TYPE_DYNAMIC_REVISION_REAPER == "pulumi-python:dynamic/flyte:RevisionReaper"
    assert c.TYPE_PACKAGE_REVISION_REAPER == "flyte:apps:RevisionReaper"


def test_reaper_is_a_child_of_its_app_waiting_for_the_kservice() -> None:
    capture, _ = install(minimal_config(stopped=True))
    run_program()
    app = capture.one(c.TYPE_FLYTE_APP, KSVC)
    kservice = capture.one(c.TYPE_KSERVICE, f"{KSVC}-kservice")
    reaper = capture.one(c.TYPE_DYNAMIC_REVISION_REAPER, f"{KSVC}-reaper")
    assert reaper.parent == app.urn, reaper.urn
    assert kservice.urn in reaper.explicit_dependencies, reaper.urn
    assert reaper.provider is None, "a dynamic resource: not the kubernetes provider"


def test_reaper_uses_the_platform_timeout() -> None:
    config = minimal_config(stopped=True)
    config["flyte-apps:platform"] = {"reaperTimeout": "2m"}
    (inputs,) = reaper_inputs(config)
    assert inputs["timeout_seconds"] == 120


def test_render_mode_registers_no_reaper() -> None:
    config = minimal_config(stopped=True)
    config["flyte-apps:platform"] = {"renderYamlToDirectory": "rendered"}
    assert reaper_inputs(config) == []


def test_unchanged_stopped_stack_changes_nothing() -> None:
    first = reaper_inputs(minimal_config(stopped=True))
    second = reaper_inputs(minimal_config(stopped=True))
    assert first == second
    diff = RevisionReaperProvider().diff("flyte/" + KSVC, first[0], second[0])
    assert diff.changes is False
    assert diff.replaces == []


def test_new_stopped_spec_updates_and_other_kservice_replaces() -> None:
    (old,) = reaper_inputs(minimal_config(stopped=True))
    (new,) = reaper_inputs(minimal_config(stopped=True, container={"image": "nginx:1.28"}))
    diff = RevisionReaperProvider().diff("id", old, new)
    assert diff.changes is True
    assert diff.replaces == []
    moved = {**new, "namespace": "elsewhere"}
    assert RevisionReaperProvider().diff("id", new, moved).replaces == ["namespace"]


def test_pickled_provider_holds_no_credentials(kube_server: FakeKubeApi) -> None:
    provider = RevisionReaperProvider()
    kubeconfig = json.dumps(kube_server.kubeconfig_dict())
    provider.configure(ConfigureRequest(Config({c.CONFIG_KUBECONFIG: kubeconfig}, "flyte-apps")))
    data = base64.b64decode(serialize_provider(provider))
    assert FAKE_TOKEN.encode() not in data
    assert kube_server.url.encode() not in data


PREVIEW_CALLS = """
import sys
from pulumi.dynamic import ConfigureRequest
from pulumi.dynamic.config import Config
from components.reaper import RevisionReaperProvider
provider = RevisionReaperProvider()
config = {"kubernetes:kubeconfig": sys.argv[1], "kubernetes:context": "fake"}
provider.configure(ConfigureRequest(Config(config, "flyte-apps")))
news = {"namespace": "n", "kservice_name": "k", "spec_sha": "a", "timeout_seconds": 5}
provider.check({}, news)
provider.diff("n/k", news, {**news, "spec_sha": "b"})
print(sorted(name for name in sys.modules if name.split(".")[0] == "kubernetes"))
"""


def test_configure_check_and_diff_leave_the_kubernetes_client_unimported(tmp_path: Path) -> None:
    # The SDK's host configures the provider and checks and diffs every reaper in each preview and
    # each `up` with nothing to change; the client's import cost 0.3-0.5 s of it on the engine (issue 39).
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    done = run_bounded(
        [sys.executable, "-c", PREVIEW_CALLS, str(kubeconfig)],
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def configured_provider(kubeconfig: Path) -> RevisionReaperProvider:
    provider = RevisionReaperProvider()
    provider.configure(
        ConfigureRequest(
            Config({c.CONFIG_KUBECONFIG: str(kubeconfig), c.CONFIG_KUBE_CONTEXT: "fake"}, "flyte-apps")
        )
    )
    return provider


def props(timeout: float = 5) -> dict[str, Any]:
    return {"namespace": NAMESPACE, "kservice_name": KSVC, "spec_sha": "abc", "timeout_seconds": timeout}


def test_provider_create_deletes_the_old_revision_through_the_stack_kubeconfig(
    kube_server: FakeKubeApi,
) -> None:
    assert kube_server.kubeconfig_path is not None
    kube_server.add_kservice(NAMESPACE, KSVC)
    running = kube_server.reconcile_kservice(NAMESPACE, KSVC)
    kube_server.add_revision_pods(NAMESPACE, KSVC, running, count=2)
    kube_server.patch(
        KSERVICES, NAMESPACE, KSVC, {"spec": {"template": {"metadata": {"annotations": {"x": "0"}}}}}
    )
    stop = kube_server.reconcile_kservice(NAMESPACE, KSVC)

    result = configured_provider(kube_server.kubeconfig_path).create(props())

    assert result.id == f"{NAMESPACE}/{KSVC}"
    assert result.outs is not None
    assert result.outs["deleted_revisions"] == [running]
    assert result.outs["stop_revision"] == stop
    assert kube_server.names(REVISIONS, NAMESPACE) == [stop]


def test_what_a_preview_calls_of_the_reaper_asks_the_cluster_nothing(kube_server: FakeKubeApi) -> None:
    """A preview reaches the dynamic reaper only through ``check`` and ``diff`` (the engine never
    creates in a preview): neither may make a request, so a preview of stopped apps is offline."""
    assert kube_server.kubeconfig_path is not None
    kube_server.add_kservice(NAMESPACE, KSVC)
    before = len(kube_server.requests)
    provider = configured_provider(kube_server.kubeconfig_path)
    checked = provider.check({}, props())
    assert checked.inputs == props()
    assert provider.diff(f"{NAMESPACE}/{KSVC}", props(), {**props(), "spec_sha": "new"}).changes
    assert len(kube_server.requests) == before


def test_provider_create_of_missing_kservice_succeeds(kube_server: FakeKubeApi) -> None:
    assert kube_server.kubeconfig_path is not None
    result = configured_provider(kube_server.kubeconfig_path).create(props())
    assert result.outs is not None
    assert result.outs["deleted_revisions"] == []


def test_provider_fails_clearly_when_knative_never_settles(kube_server: FakeKubeApi) -> None:
    assert kube_server.kubeconfig_path is not None
    kube_server.add_kservice(NAMESPACE, KSVC)
    kube_server.patch(
        KSERVICES, NAMESPACE, KSVC, {"spec": {"template": {"metadata": {"labels": {"x": "0"}}}}}
    )
    kube_server.reconcile_kservice(NAMESPACE, KSVC, ready=False)  # a stop (generation 2) never Ready
    with pytest.raises(RevisionReaperError, match=r"timed out after 0\.5s waiting for Knative"):
        configured_provider(kube_server.kubeconfig_path).create(props(timeout=0.5))


# --- only the stack's cluster (hostile input round 3, item 3) --------------------------------------


@pytest.fixture
def decoy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Another cluster as the ambient KUBECONFIG: it must receive no request."""
    server = FakeKubeApi()
    server.start()
    try:
        monkeypatch.setenv("KUBECONFIG", str(server.write_kubeconfig(tmp_path / "decoy-kubeconfig")))
        monkeypatch.setenv("HOME", str(tmp_path))
        yield server
    finally:
        server.stop()


def test_a_secret_cluster_input_is_read_through_not_past(
    kube_server: FakeKubeApi, decoy: FakeKubeApi
) -> None:
    from pulumi.runtime.rpc import wrap_rpc_secret

    from components.reaper import stack_cluster

    assert kube_server.kubeconfig_path is not None
    cluster = stack_cluster(str(kube_server.kubeconfig_path), None, kube_server.kubeconfig_path.parent)
    result = RevisionReaperProvider().create({**props(), "cluster": wrap_rpc_secret(cluster)})
    assert result.outs is not None and result.outs["deleted_revisions"] == []
    assert kube_server.requests
    assert decoy.requests == ()


def test_no_record_of_the_cluster_is_refused_not_the_ambient_cluster(decoy: FakeKubeApi) -> None:
    with pytest.raises(RevisionReaperError, match="cannot tell which cluster the stack names"):
        RevisionReaperProvider().create(props())
    assert decoy.requests == ()


def test_no_record_but_a_configured_cluster_uses_that_one(
    kube_server: FakeKubeApi, decoy: FakeKubeApi
) -> None:
    assert kube_server.kubeconfig_path is not None
    configured_provider(kube_server.kubeconfig_path).create(props())
    assert kube_server.requests
    assert decoy.requests == ()
