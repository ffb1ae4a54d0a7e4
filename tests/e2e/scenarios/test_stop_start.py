"""Stop an app: upstream's stop form, and the RevisionReaper (in the engine's own dynamic-provider host)
deletes every older revision with pods and keeps the stop revision; its DomainMappings go. Then start
it again: a new revision, the reaper gone, the mappings back."""

from __future__ import annotations

from typing import Final

from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.stacks import Deployed
from tests.e2e.scenarios.suite import DOMAIN_MAPPINGS, KSERVICES, LABEL_REVISION, REVISIONS, Suite

APP: Final = "dashboard"
KSERVICE: Final = "dashboard-flytesnacks-development"
RUNNING: Final = f"{KSERVICE}-00001"
STOPPED: Final = f"{KSERVICE}-00002"
STARTED: Final = f"{KSERVICE}-00003"
DOMAIN_MAPPINGS_OF_APP: Final = 2
"""The dashboard's custom hosts: its subdomain and its cname."""
REVISION_WAIT_S: Final = 60.0


def test_stop_start(suite: Suite, deployed: Deployed, record: Record) -> None:
    suite.wait(
        "the running revision's pods",
        lambda: bool(suite.pods_labelled(LABEL_REVISION, RUNNING)),
        REVISION_WAIT_S,
    )
    others = {name: svc for name, svc in suite.revisions().items() if svc != KSERVICE}
    with suite.edit_stack() as document:
        suite.app_entry(document, APP)["stopped"] = True
    suite.pulumi("up", "--yes")
    live = suite.get(KSERVICES, KSERVICE)
    labels, template = live["metadata"]["labels"], live["spec"]["template"]["metadata"]["annotations"]
    check(labels.get("flyte.org/app-stopped") == "true", f"no stopped label: {labels}")
    check(labels.get("networking.knative.dev/visibility") == "cluster-local", f"not cluster-local: {labels}")
    check(
        template.get("autoscaling.knative.dev/min-scale") == "0"
        and template.get("autoscaling.knative.dev/initial-scale") == "0",
        f"not scaled to zero: {template}",
    )
    check(suite.exists(REVISIONS, STOPPED), f"no stop revision {STOPPED}")
    check(suite.revision_ready(STOPPED), f"the stop revision {STOPPED} is not Ready")
    check(not suite.exists(REVISIONS, RUNNING), f"the revision with pods {RUNNING} was not deleted")
    remaining = {name: svc for name, svc in suite.revisions().items() if svc != KSERVICE}
    check(remaining == others, f"other apps' revisions changed: {others} -> {remaining}")
    reaper = suite.reapers(kservice=KSERVICE)
    check(len(reaper) == 1, f"expected one reaper for {KSERVICE} in the state, got {len(reaper)}")
    outputs = reaper[0].get("outputs", {})
    check(outputs.get("stop_revision") == STOPPED, f"reaper's stop revision: {outputs}")
    check(
        outputs.get("deleted_revisions") == [RUNNING], f"reaper deleted: {outputs.get('deleted_revisions')}"
    )
    check(not suite.get(DOMAIN_MAPPINGS)["items"], "a stopped app still has DomainMappings")
    suite.compare_with_render()
    suite.pulumi("preview", "--expect-no-changes")

    with suite.edit_stack() as document:
        del suite.app_entry(document, APP)["stopped"]
    suite.pulumi("up", "--yes")
    live = suite.get(KSERVICES, KSERVICE)
    check("flyte.org/app-stopped" not in live["metadata"]["labels"], "still stopped after start")
    check(not suite.reapers(kservice=KSERVICE), "the reaper outlived the stop")
    suite.wait("the started revision", lambda: suite.exists(REVISIONS, STARTED), REVISION_WAIT_S)
    check(
        len(suite.get(DOMAIN_MAPPINGS)["items"]) == DOMAIN_MAPPINGS_OF_APP,
        "the DomainMappings did not come back",
    )
    suite.compare_with_render()
    record(f"stop kept {STOPPED}, deleted {RUNNING}; start made {STARTED}")
