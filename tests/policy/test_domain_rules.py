"""``domain-mappings-target-public-apps``: no DomainMapping routes to a stopped or cluster-local KService
of the stack (a mapping makes its target reachable from outside even then)."""

from __future__ import annotations

import copy
from typing import Any, Final

from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from flyte_apps.core import constants as c
from flyte_apps.core.domains import build_domain_mapping
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.stack import load_stack_config
from flyte_apps.policy.registry import RULES_BY_NAME, StackRule
from flyte_apps.policy.wire import OfflineStackArgs, WireResource, to_wire
from tests.support.config import minimal_config

RULE: Final = "domain-mappings-target-public-apps"


def check(resources: list[WireResource]) -> list[tuple[str, str | None]]:
    rule = RULES_BY_NAME[RULE]
    assert isinstance(rule, StackRule)
    reports: list[tuple[str, str | None]] = []

    def report(message: str, urn: str | None = None) -> None:
        reports.append((message, urn))

    rule.validate(OfflineStackArgs(resources), report)
    return reports


def rendered(**app: Any) -> list[WireResource]:
    config = minimal_config(ingress={"cname": "churn.acme.dev"}, **app)
    return [to_wire(obj, stack="dev") for obj in plan_stack(config).objects()]


def hand_written_mapping(**app: Any) -> WireResource:
    """The mapping the stack would render for the running app, written by hand next to ``app``."""
    config = load_stack_config(minimal_config(**app))
    manifest = build_domain_mapping("churn.acme.dev", config.apps[0], "flyte", "myapp-proj-dev", None)
    return WireResource(c.TYPE_DOMAIN_MAPPING, "churn.acme.dev", manifest, "urn:dm::churn.acme.dev")


def test_the_rendered_stack_passes_running_stopped_or_cluster_local() -> None:
    for app in ({}, {"stopped": True}, {"visibility": "cluster-local"}):
        assert check(rendered(**app)) == [], app


def test_a_mapping_to_a_stopped_app_is_reported_on_the_mapping() -> None:
    resources = [*rendered(stopped=True), hand_written_mapping()]
    assert check(resources) == [
        (
            "DomainMapping 'churn.acme.dev' routes to KService 'myapp-proj-dev', which is stopped: a "
            "DomainMapping makes its target reachable from outside even when the KService is cluster-local",
            "urn:dm::churn.acme.dev",
        )
    ]


def test_a_mapping_to_a_cluster_local_app_is_reported() -> None:
    ((message, _),) = check([*rendered(visibility="cluster-local"), hand_written_mapping()])
    assert "which is cluster-local" in message


def test_a_mapping_to_a_kservice_outside_the_stack_or_unknown_is_not_judged() -> None:
    elsewhere = hand_written_mapping()
    props = copy.deepcopy(dict(elsewhere.props))
    props["spec"]["ref"]["name"] = "not-ours"
    assert check([*rendered(stopped=True), WireResource(elsewhere.resource_type, "x", props, "urn:x")]) == []
    props["spec"]["ref"]["name"] = UNKNOWN_STRING_VALUE
    assert check([*rendered(stopped=True), WireResource(elsewhere.resource_type, "x", props, "urn:x")]) == []
