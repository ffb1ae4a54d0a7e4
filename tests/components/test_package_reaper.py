"""The component package's RevisionReaper: served by the package's provider, its stops run off the
provider's event loop, so several reapers wait at once and the provider answers meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Final, TypeVar

from pulumi.provider.experimental.property_value import PropertyValue
from pulumi.provider.experimental.provider import CreateRequest, CreateResponse

from components import schema
from components.package import FlyteAppsProvider
from flyte_apps.core import constants as c
from tests.fakes.kube_api import FakeKubeApi
from tests.fakes.kube_semantics import KSERVICES, REVISIONS

T = TypeVar("T")
NAMESPACE: Final = "flyte"
SLOW: Final = "slow-proj-dev"
QUICK: Final = "quick-proj-dev"
WAIT_S: Final = 30.0
"""Bounds every wait of the test (the reapers' own timeout is longer: the test, not the reaper, ends)."""


def stopping(server: FakeKubeApi, name: str, *, ready: bool) -> tuple[str, str]:
    """A KService with a running revision (its pod) and a newer stop revision: (running, stop)."""
    server.add_kservice(NAMESPACE, name)
    running = server.reconcile_kservice(NAMESPACE, name)
    server.add_revision_pods(NAMESPACE, name, running, count=1)
    server.patch(
        KSERVICES, NAMESPACE, name, {"spec": {"template": {"metadata": {"annotations": {"x": "0"}}}}}
    )
    return running, server.reconcile_kservice(NAMESPACE, name, ready=ready)


def create_request(name: str, kubeconfig: Path) -> CreateRequest:
    properties = {
        schema.REAPER_NAMESPACE: PropertyValue(NAMESPACE),
        schema.REAPER_KSERVICE: PropertyValue(name),
        schema.REAPER_SPEC_SHA: PropertyValue("sha"),
        schema.REAPER_TIMEOUT: PropertyValue(2 * WAIT_S),
        schema.INPUT_KUBECONFIG: PropertyValue(str(kubeconfig)),
    }
    urn = f"urn:pulumi:dev::p::{c.TYPE_FLYTE_APP}${c.TYPE_PACKAGE_REVISION_REAPER}::{name}-reaper"
    return CreateRequest(urn=urn, properties=properties, timeout=WAIT_S, preview=False)


def on_a_loop_of_its_own(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` on a new event loop, not made current (the Pulumi test harness keeps its own)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(work)
    finally:
        loop.close()


def deleted(response: CreateResponse) -> object:
    return response.properties[schema.REAPER_DELETED].value


def test_two_reapers_stop_at_once_and_each_deletes_only_its_own_old_revision(
    kube_server: FakeKubeApi,
) -> None:
    kubeconfig = kube_server.kubeconfig_path
    assert kubeconfig is not None
    slow_running, slow_stop = stopping(kube_server, SLOW, ready=False)
    quick_running, quick_stop = stopping(kube_server, QUICK, ready=True)
    provider = FlyteAppsProvider("0.0.0")

    async def both() -> tuple[CreateResponse, CreateResponse, bool]:
        slow = asyncio.ensure_future(provider.create(create_request(SLOW, kubeconfig)))
        quick = asyncio.ensure_future(provider.create(create_request(QUICK, kubeconfig)))
        quick_response = await asyncio.wait_for(quick, WAIT_S)  # while the slow one still waits
        slow_was_waiting = not slow.done()
        kube_server.mark_revision_ready(NAMESPACE, SLOW)
        return await asyncio.wait_for(slow, WAIT_S), quick_response, slow_was_waiting

    slow_response, quick_response, slow_was_waiting = on_a_loop_of_its_own(both())
    assert slow_was_waiting, "the quick stop ended only after the slow one: they ran one after another"
    assert deleted(quick_response) == (PropertyValue(quick_running),)
    assert deleted(slow_response) == (PropertyValue(slow_running),)
    names = kube_server.names(REVISIONS, NAMESPACE)
    assert sorted(names) == sorted([slow_stop, quick_stop])


def test_a_preview_of_a_stop_asks_the_cluster_nothing(kube_server: FakeKubeApi) -> None:
    kubeconfig = kube_server.kubeconfig_path
    assert kubeconfig is not None
    stopping(kube_server, QUICK, ready=True)
    before = len(kube_server.requests)
    request = create_request(QUICK, kubeconfig)
    preview = CreateRequest(urn=request.urn, properties=request.properties, timeout=WAIT_S, preview=True)
    response = on_a_loop_of_its_own(FlyteAppsProvider("0.0.0").create(preview))
    assert response.resource_id == f"{NAMESPACE}/{QUICK}"
    assert response.properties == request.properties
    assert len(kube_server.requests) == before
