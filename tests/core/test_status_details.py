"""What ``flyte-apps status`` shows beyond Flyte's status (pure): an app's profile and links from its
spec, its custom URLs from the live DomainMappings, and the drift of a mapping that exposes an app that
is stopped or cluster-local."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from flyte_apps.core.domain_status import LiveMapping, mapping_drift, read_mappings
from flyte_apps.core.domains import build_domain_mapping
from flyte_apps.core.stack import load_stack_config
from flyte_apps.core.status import kservice_to_app
from flyte_apps.core.status_details import AppDetails, details_lines, status_extras
from tests.support.config import MINIMAL_KSERVICE, MINIMAL_NAMESPACE, minimal_config, minimal_kservice

NOW: Final = datetime(2026, 11, 30, tzinfo=UTC)
BASE_DOMAIN: Final = "apps.example.com"


def live(ksvc: dict[str, Any]) -> Any:
    return kservice_to_app(
        ksvc, base_domain=BASE_DOMAIN, scheme="https", ingress_apps_port=0, current_replicas=0, now=NOW
    )


def mapping(
    host: str = "churn.acme.dev", *, status: dict[str, Any] | None = None, **app: Any
) -> dict[str, Any]:
    config = load_stack_config(minimal_config(**app)).apps[0]
    manifest = build_domain_mapping(host, config, MINIMAL_NAMESPACE, MINIMAL_KSERVICE, None)
    if status is not None:
        manifest["status"] = status
    return manifest


def test_profile_and_links_come_from_the_live_spec() -> None:
    ksvc = minimal_kservice(
        profile={"type": "streamlit", "name": "Churn dashboard"},
        links=[{"path": "/docs", "title": "API docs", "isRelative": True}, {"path": "https://grafana/d/1"}],
    )
    extras = status_extras([(live(ksvc), ksvc)], [], MINIMAL_NAMESPACE)
    assert extras.details["proj/dev/myapp"] == AppDetails(
        profile="Churn dashboard (streamlit)",
        links=(f"API docs https://myapp-proj-dev.{BASE_DOMAIN}/docs", "https://grafana/d/1"),
    )
    assert extras.lines() == [
        "details:",
        f"  proj/dev/myapp: profile: Churn dashboard (streamlit); links: API docs "
        f"https://myapp-proj-dev.{BASE_DOMAIN}/docs, https://grafana/d/1",
    ]
    assert extras.drift == {}


def test_a_profile_with_only_a_type_and_a_relative_link_without_a_url() -> None:
    ksvc = minimal_kservice(profile={"type": "fastapi"}, links=[{"path": "/docs", "isRelative": True}])
    app = live(ksvc)
    app.status.ClearField("ingress")  # no public URL (no base domain, or stopped)
    (found,) = status_extras([(app, ksvc)], [], MINIMAL_NAMESPACE).details.values()
    assert (found.profile, found.links) == ("fastapi", ("/docs",))


def test_an_app_with_nothing_to_add_has_no_details_line() -> None:
    ksvc = minimal_kservice()
    extras = status_extras([(live(ksvc), ksvc)], [], MINIMAL_NAMESPACE)
    assert not extras.details["proj/dev/myapp"]
    assert extras.lines() == []
    assert extras.json_fields("proj/dev/myapp") == {}


def test_custom_urls_are_the_mappings_urls_and_say_when_one_is_not_ready() -> None:
    ksvc = minimal_kservice()
    mappings = [
        mapping(
            status={"url": "https://churn.acme.dev", "conditions": [{"type": "Ready", "status": "True"}]}
        ),
        mapping(
            "churn.apps.example.com",
            status={"conditions": [{"type": "Ready", "status": "False", "reason": "DomainClaimNotOwned"}]},
        ),
    ]
    extras = status_extras([(live(ksvc), ksvc)], mappings, MINIMAL_NAMESPACE)
    assert extras.details["proj/dev/myapp"].custom_urls == (
        "https://churn.acme.dev",
        "churn.apps.example.com (not ready: DomainClaimNotOwned)",
    )
    assert extras.json_fields("proj/dev/myapp") == {
        "customUrls": ["https://churn.acme.dev", "churn.apps.example.com (not ready: DomainClaimNotOwned)"]
    }


def test_only_mappings_to_a_knative_service_of_the_namespace_count() -> None:
    other_namespace = mapping("a.acme.dev")
    other_namespace["spec"]["ref"]["namespace"] = "elsewhere"
    a_route = mapping("b.acme.dev")
    a_route["spec"]["ref"]["kind"] = "Route"
    no_namespace = mapping("c.acme.dev")
    del no_namespace["spec"]["ref"]["namespace"]  # defaults to the mapping's own
    assert read_mappings([other_namespace, a_route, no_namespace], MINIMAL_NAMESPACE) == [
        LiveMapping(host="c.acme.dev", kservice=MINIMAL_KSERVICE, url="c.acme.dev")
    ]


def test_a_mapping_to_a_stopped_app_is_drift() -> None:
    """The app was stopped through Flyte's UI while the stack's mapping exists: reachable from outside."""
    ksvc = minimal_kservice(stopped=True)
    extras = status_extras([(live(ksvc), ksvc)], [mapping()], MINIMAL_NAMESPACE)
    ((drift,),) = extras.drift.values()
    assert drift.kind == "domain-mapping"
    assert drift.message.startswith("reachable through DomainMapping churn.acme.dev although stopped")


def test_a_mapping_to_a_cluster_local_app_is_drift_and_to_a_public_running_one_is_not() -> None:
    mappings = read_mappings([mapping()], MINIMAL_NAMESPACE)
    (drift,) = mapping_drift(minimal_kservice(visibility="cluster-local"), mappings)
    assert "although cluster-local" in drift.message
    assert mapping_drift(minimal_kservice(), mappings) == []


def test_details_lines_skip_apps_without_details() -> None:
    assert details_lines([("a", AppDetails()), ("b", AppDetails(custom_urls=("https://x.dev",)))]) == [
        "details:",
        "  b: custom URLs: https://x.dev",
    ]


def test_values_from_the_cluster_are_one_bounded_line() -> None:
    ksvc = minimal_kservice(profile={"name": "evil\nname" + "x" * 300})
    (found,) = status_extras([(live(ksvc), ksvc)], [], MINIMAL_NAMESPACE).details.values()
    assert "\n" not in found.profile
    assert len(found.profile) < 200
