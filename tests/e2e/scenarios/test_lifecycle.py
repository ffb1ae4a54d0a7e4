"""The main stack's life under `pulumi`: up (every live object equals `render`), no changes on a second
run, one image changed (one new Revision, of that app), refresh (no drift). Destroy is last of all
(``test_destroy.py``). Each builds on the stack as the one before left it."""

from __future__ import annotations

import time
from typing import Final

from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.stacks import KNATIVE_REACTION_S, Deployed
from tests.e2e.scenarios.suite import KSERVICES, Suite

POLICY_PACK_RAN: Final = "flyte-apps@v0.1.0"
"""What a preview prints when the policy pack ran (its name and version)."""
CHANGED_APP: Final = "feature-store"
CHANGED_IMAGE: Final = "ghcr.io/example/feature-store:0.9.2"
CHANGED_KSERVICE: Final = "feature-store-ml-serving-production"
NEW_REVISION_S: Final = 60.0


def test_up(suite: Suite, deployed: Deployed, record: Record) -> None:
    """`pulumi preview` (with the pack) then `up`; every live object equals `render` in every field we
    write, every KService has its Revision, and the reaper of an app created stopped (which does not wait
    for Knative) named the revision Knative created."""
    check(POLICY_PACK_RAN in deployed.preview, f"the policy pack did not run:\n{deployed.preview[-2000:]}")
    count = suite.compare_with_render()
    revisions = suite.revisions()
    kservices = {o["metadata"]["name"] for o in suite.get(KSERVICES)["items"]}
    check(set(revisions.values()) == kservices, f"a KService without a Revision: {kservices} vs {revisions}")
    named = {r["inputs"]["kservice_name"]: r["outputs"]["stop_revision"] for r in suite.reapers()}
    check(bool(named), "the main stack has no app created stopped")
    wrong = {kservice: name for kservice, name in named.items() if revisions.get(name) != kservice}
    check(not wrong, f"reapers named revisions Knative did not create: {wrong}; Knative's: {revisions}")
    record(f"{count} objects equal to render; {len(revisions)} revisions, {len(named)} named by reapers")


def generations(suite: Suite) -> dict[str, int]:
    return {k["metadata"]["name"]: k["metadata"]["generation"] for k in suite.get(KSERVICES)["items"]}


def test_no_changes(suite: Suite, deployed: Deployed, record: Record) -> None:
    """Right after `up`: no change in preview or up, no new Revision, no KService generation bump."""
    before = suite.revisions()
    generations_before = generations(suite)
    suite.pulumi("preview", "--expect-no-changes")
    suite.pulumi("up", "--yes", "--expect-no-changes")
    time.sleep(
        KNATIVE_REACTION_S
    )  # give Knative's controller a moment to react to an update, had there been one
    check(suite.revisions() == before, f"revisions changed: {before} -> {suite.revisions()}")
    after = generations(suite)
    check(after == generations_before, f"KService generations changed: {generations_before} -> {after}")
    record(f"no diff, {len(before)} revisions unchanged")


def test_image_change(suite: Suite, deployed: Deployed, record: Record) -> None:
    """One app's image changed: exactly one new Revision, of that app; every object still equals render."""
    before = suite.revisions()
    with suite.edit_stack() as document:
        app = suite.app_entry(document, CHANGED_APP)
        app["container"]["image"] = CHANGED_IMAGE
    suite.pulumi("up", "--yes")
    suite.wait("the new revision", lambda: len(suite.revisions()) > len(before), NEW_REVISION_S)
    time.sleep(KNATIVE_REACTION_S)
    new = {name: svc for name, svc in suite.revisions().items() if name not in before}
    check(
        list(new.values()) == [CHANGED_KSERVICE], f"new revisions: {new} (expected one of {CHANGED_KSERVICE})"
    )
    check(set(before) <= set(suite.revisions()), "a revision disappeared")
    suite.compare_with_render()
    record(f"one new revision: {next(iter(new))}")


def test_refresh(suite: Suite, deployed: Deployed, record: Record) -> None:
    """`pulumi refresh --expect-no-changes`, then `preview --expect-no-changes`: no drift either way."""
    suite.pulumi("refresh", "--yes", "--expect-no-changes")
    suite.pulumi("preview", "--expect-no-changes")
    record("no drift")
