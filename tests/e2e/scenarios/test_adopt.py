"""KServices created the way Flyte's app service creates them (one plain `kubectl create`) are taken
over by `flyte-apps import` and `pulumi up` (the ``adopted`` fixture), as `adopt: true` (Pulumi's
import) and `adopt: upsert` while they serve: the same UIDs, no new Revision for the exact one (its
pods neither replaced nor restarted), at most one for the other, and no diff afterwards."""

from __future__ import annotations

from typing import Final

from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.stacks import ADOPT_NAMESPACE, ADOPT_STACK, Adoption, pod_restarts
from tests.e2e.scenarios.suite import KSERVICES, Suite

IMPORTED_AS: Final = {"handmade": None, "legacy": True, "legacy-gpu": "upsert"}
"""``adopt:`` of each app after the import: the hand-written one untouched."""
PREVIEW_TAIL_CHARS: Final = 3000


def test_adopt(suite: Suite, adopted: Adoption, record: Record) -> None:
    exact, changed = adopted.names
    check(adopted.adopt == IMPORTED_AS, f"import wrote adopt: {adopted.adopt}\n{adopted.imported}")
    check(
        "1 to import" in adopted.preview,
        f"the exact app is not imported:\n{adopted.preview[-PREVIEW_TAIL_CHARS:]}",
    )
    for name in adopted.names:
        uid = suite.get(KSERVICES, name, ADOPT_NAMESPACE)["metadata"]["uid"]
        check(uid == adopted.uids[name], f"{name} was re-created ({adopted.uids[name]} -> {uid})")
    after = suite.revisions(ADOPT_NAMESPACE)
    new = sorted(r for r in after if r not in adopted.before)
    check(not [r for r in new if r.startswith(exact)], f"the exact adoption made a revision: {new}")
    check(
        len([r for r in new if r.startswith(changed)]) <= 1, f"the upsert made more than one revision: {new}"
    )
    check(bool(adopted.exact_pods), f"{exact} had no running pod when the stack took it over")
    kept = pod_restarts(suite, exact)
    check(kept == adopted.exact_pods, f"{exact}'s pods changed or restarted: {adopted.exact_pods} -> {kept}")
    suite.pulumi("preview", "--expect-no-changes", stack=ADOPT_STACK)
    suite.compare_with_render(ADOPT_STACK)
    record(f"adopted {', '.join(adopted.names)} with the same UIDs; new revisions: {new or 'none'}")
