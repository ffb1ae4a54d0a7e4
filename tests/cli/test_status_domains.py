"""`flyte-apps status` end to end (real client, fake API server) for what issues 12 and 13 add: the
profile and links of each app, its custom URLs from the live DomainMappings, and a mapping that
exposes a stopped app reported as drift."""

from __future__ import annotations

import json
from typing import Any, Final

from typer.testing import CliRunner, Result

from flyte_apps.cli import status as status_command
from flyte_apps.core.domains import build_domain_mapping
from flyte_apps.core.stack import load_stack_config
from tests.fakes.kube_api import FakeKubeApi
from tests.fakes.kube_semantics import DOMAIN_MAPPINGS, KSERVICES
from tests.support.cli import command_app
from tests.support.config import MINIMAL_NAMESPACE as NS
from tests.support.config import minimal_config, minimal_kservice

BASE_DOMAIN: Final = "apps.example.com"
HOST: Final = "churn.acme.dev"


def run(server: FakeKubeApi, *args: str) -> Result:
    assert server.kubeconfig_path is not None
    cluster = ["--kubeconfig", str(server.kubeconfig_path), "--base-domain", BASE_DOMAIN]
    return CliRunner().invoke(command_app(status_command.register), ["status", *args, *cluster])


def deploy(server: FakeKubeApi, **app: Any) -> str:
    manifest = minimal_kservice(**app)
    server.create(KSERVICES, manifest, NS)
    return str(manifest["metadata"]["name"])


def map_host(
    server: FakeKubeApi, kservice: str, host: str = HOST, status: dict[str, Any] | None = None
) -> None:
    """The DomainMapping the stack renders for a running app, as Knative reconciled it."""
    app = load_stack_config(minimal_config()).apps[0]
    manifest = build_domain_mapping(host, app, NS, kservice, None)
    manifest["status"] = status or {
        "url": f"https://{host}",
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    server.create(DOMAIN_MAPPINGS, manifest, NS)


def test_status_shows_profile_links_and_custom_urls_under_the_table(kube_server: FakeKubeApi) -> None:
    name = deploy(
        kube_server,
        profile={"type": "streamlit", "name": "Churn dashboard"},
        links=[{"path": "/docs", "title": "API docs", "isRelative": True}],
    )
    map_host(kube_server, name)
    result = run(kube_server)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split("\n\n", 1)[1] == (
        "details:\n"
        f"  proj/dev/myapp: profile: Churn dashboard (streamlit); links: API docs "
        f"https://myapp-proj-dev.{BASE_DOMAIN}/docs; custom URLs: https://{HOST}\n"
    )
    assert "drift" not in result.stdout


def test_status_json_carries_custom_urls_next_to_the_app(kube_server: FakeKubeApi) -> None:
    map_host(kube_server, deploy(kube_server))
    deploy(kube_server, name="other")
    result = run(kube_server, "-o", "json")
    assert result.exit_code == 0, result.stderr
    entries = {entry["app"]["metadata"]["id"]["name"]: entry for entry in json.loads(result.stdout)}
    assert entries["myapp"]["customUrls"] == [f"https://{HOST}"]
    assert "customUrls" not in entries["other"]


def test_a_mapping_that_exposes_a_stopped_app_is_drift(kube_server: FakeKubeApi) -> None:
    """Stopped through Flyte's UI while the stack's mapping exists: still reachable from outside."""
    map_host(kube_server, deploy(kube_server, stopped=True))
    result = run(kube_server)
    assert result.exit_code == 0, result.stderr
    drift = result.stdout.split("drift:\n", 1)[1].splitlines()
    assert drift == [
        f"  proj/dev/myapp: reachable through DomainMapping {HOST} although stopped: a DomainMapping "
        "exposes its KService even when it is cluster-local; delete the mapping, or start the app and make "
        "it public"
    ]
    as_json = json.loads(run(kube_server, "-o", "json").stdout)
    assert [d["kind"] for d in as_json[0]["drift"]] == ["domain-mapping"]


def test_status_without_permission_to_list_mappings_still_shows_the_apps(kube_server: FakeKubeApi) -> None:
    deploy(kube_server)
    kube_server.fail_next(403, times=10, method="GET", path_contains="/domainmappings")
    result = run(kube_server)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1].startswith("proj/dev/myapp")
    assert result.stderr.startswith(
        "warning: custom domains not read: forbidden: RBAC must allow verb 'list' on "
    )
    assert "domainmappings.serving.knative.dev" in result.stderr
