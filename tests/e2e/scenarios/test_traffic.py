"""Traffic through running apps (issue 37): a new image moves an app's traffic to its new Revision and
leaves every other app's pods alone; an app scales to zero and the next request wakes it through
Knative's activator; and a stop frees its pods, side by side with Knative doing it alone."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from tests.e2e import cluster
from tests.e2e.node.node import PUBLIC_PORT
from tests.e2e.node.traffic import get
from tests.e2e.outcome import ScenarioFailed, check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.running import (
    TERMINAL_PHASES,
    app_pods,
    node_ip,
    public_host,
    through_ingress,
    through_ingress_at_latest,
    wait_ready,
)
from tests.e2e.scenarios.stacks import Deployed
from tests.e2e.scenarios.suite import KSERVICES, REVISIONS, STACKS, Suite

CHANGED: Final = "model-api-ml-serving-production"
CHANGED_APP: Final = "model-api"
NEW_IMAGE: Final = "ghcr.io/example/model-api:2.3.1"
OTHERS: Final = ("dashboard-flytesnacks-development", "search-flytesnacks-development")
NEW_REVISION_S: Final = 120.0
SCALED: Final = "search-flytesnacks-development"
"""minReplicas 0 and no window of its own (the dashboard's 90 s scale-down period would set the pace)."""
KNATIVE_NAMESPACE: Final = "knative-serving"
FAST_AUTOSCALER: Final = {
    "stable-window": "6s",
    "scale-to-zero-grace-period": "6s",
    "scale-to-zero-pod-retention-period": "0s",
}
"""config-autoscaler for a scale to zero within a bounded wait (6 s is the smallest stable window),
for this scenario only: the keys are put back as they were after it."""
SCALE_TO_ZERO_S: Final = 180.0
TWINS: Final = "twins"
TWINS_NAMESPACE: Final = "flyte-twins"
OURS: Final = "ours-twins-development"
THEIRS: Final = "theirs-twins-development"
QUIET_S: Final = 10.0
"""The twins' shared traffic history: one request each, then this long without any before the stop."""
QUEUE_PROXY_DRAIN_S: Final = 30.0
"""queue-proxy's drain after SIGTERM (compiled into knative.dev/serving's pkg/queue: DrainSleepDuration)."""
AFTER_DRAIN_S: Final = 15.0
STOP_S: Final = 300.0
CLOCK_POLL_S: Final = 0.25
STOP_FORM: Final = {
    "metadata": {
        "labels": {"flyte.org/app-stopped": "true", "networking.knative.dev/visibility": "cluster-local"}
    },
    "spec": {
        "template": {
            "metadata": {
                "annotations": {
                    "autoscaling.knative.dev/min-scale": "0",
                    "autoscaling.knative.dev/initial-scale": "0",
                }
            }
        }
    },
}
"""Upstream's Stop, as a merge patch (app_client.go ``Stop``)."""


def pod_uids(suite: Suite, kservices: tuple[str, ...]) -> dict[str, set[str]]:
    return {name: {p["metadata"]["uid"] for p in app_pods(suite, name)} for name in kservices}


def test_new_image(suite: Suite, deployed: Deployed, record: Record) -> None:
    """One app's image changed: its traffic moves to the new Revision, the others' pods are untouched."""
    for name in OTHERS:  # traffic just before: their pods stay up longer than this scenario takes
        through_ingress(suite, wait_ready(suite, name))
    before = pod_uids(suite, OTHERS)
    old = wait_ready(suite, CHANGED)["status"]["latestReadyRevisionName"]
    with suite.edit_stack() as document:
        suite.app_entry(document, CHANGED_APP)["container"]["image"] = NEW_IMAGE
    suite.pulumi("up", "--yes")

    def moved() -> bool:
        kservice = wait_ready(suite, CHANGED)
        return bool(kservice["status"]["latestReadyRevisionName"] != old)

    suite.wait("the new revision Ready", moved, NEW_REVISION_S)
    kservice = wait_ready(suite, CHANGED)
    new = kservice["status"]["latestReadyRevisionName"]
    through_ingress_at_latest(suite, kservice)  # answered by the new revision, or it fails saying which
    after = pod_uids(suite, OTHERS)
    # Untouched: no pod of another app was started (a roll would start new ones) and each keeps a pod it
    # had. The autoscaler may still remove a surplus replica of an app traffic scaled up before.
    started = {name: after[name] - before[name] for name in OTHERS if after[name] - before[name]}
    lost = sorted(name for name in OTHERS if before[name] and not before[name] & after[name])
    check(not started and not lost, f"other apps' pods changed: {before} -> {after}")
    record(f"{CHANGED}: {old} -> {new} serves; {sum(map(len, before.values()))} other pods untouched")


def test_scale_to_zero(suite: Suite, deployed: Deployed, record: Record) -> None:
    """An app with minReplicas 0 reaches zero pods; the next request is answered through the activator."""
    kservice = wait_ready(suite, SCALED)
    saved = suite.get("configmaps", "config-autoscaler", namespace=KNATIVE_NAMESPACE).get("data", {})
    put_back = {key: saved.get(key) for key in FAST_AUTOSCALER}  # None: absent, removed again
    patch_autoscaler(suite, FAST_AUTOSCALER)
    try:
        through_ingress(suite, kservice)
        began = time.monotonic()
        suite.wait("zero pods", lambda: not live_pods(suite, SCALED), SCALE_TO_ZERO_S)
        to_zero = time.monotonic() - began
        began = time.monotonic()
        answer = through_ingress(suite, kservice, "/cold")
        cold = time.monotonic() - began
    finally:
        patch_autoscaler(suite, put_back)
    check(answer["request"]["uri"] == "/cold", f"answered {answer['request']}")
    record(f"zero pods after {to_zero:.0f} s; the cold request answered in {cold:.1f} s")


def patch_autoscaler(suite: Suite, data: Mapping[str, str | None]) -> None:
    body = json.dumps({"data": data})
    suite.kubectl(
        "patch", "configmap", "config-autoscaler", "-n", KNATIVE_NAMESPACE, "--type=merge", "-p", body
    )


def live_pods(suite: Suite, kservice: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """The KService's pod objects (terminating ones too: a pod counts until its object is gone)."""
    return app_pods(suite, kservice, namespace) if namespace else app_pods(suite, kservice)


def stop_revision_ready(suite: Suite) -> str | None:
    """Our twin's stop revision, once Ready (the latest created, initial scale 0)."""
    kservice = suite.get(KSERVICES, OURS, namespace=TWINS_NAMESPACE)
    status = kservice.get("status", {})
    created, ready = status.get("latestCreatedRevisionName"), status.get("latestReadyRevisionName")
    if created and created == ready:
        revision = suite.get(REVISIONS, created, namespace=TWINS_NAMESPACE)
        annotations = revision["metadata"].get("annotations", {})
        if annotations.get("autoscaling.knative.dev/initial-scale") == "0":
            return str(created)
    return None


def clock(what: str, done: Callable[[], bool], timeout: float) -> float:
    """Seconds (monotonic) at which ``done`` first held, polled every ``CLOCK_POLL_S``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return time.monotonic()
        time.sleep(CLOCK_POLL_S)
    raise ScenarioFailed(f"{what}: not after {timeout:.0f} s")


def test_stop_frees_pods(suite: Suite, deployed: Deployed, record: Record) -> None:
    """Two identical apps, one stopped by us (the reaper), one by upstream's stop form alone, in the same
    moment: ours frees its pods within queue-proxy's drain after its stop revision is Ready, and before
    Knative alone does; grace periods kept; the public URL stops serving; a start serves again."""
    suite.write_stack(TWINS, STACKS / "twins.yaml")
    suite.pulumi("stack", "init", stack=TWINS)
    suite.pulumi("up", "--yes", stack=TWINS)
    ours, theirs = wait_ready(suite, OURS, TWINS_NAMESPACE), wait_ready(suite, THEIRS, TWINS_NAMESPACE)
    first_revision = ours["status"]["latestReadyRevisionName"]
    through_ingress(suite, ours)
    through_ingress(suite, theirs)
    time.sleep(QUIET_S)  # the traffic history the two share: one request, then quiet

    with suite.edit_stack(TWINS) as document:
        suite.app_entry(document, "ours")["stopped"] = True
    up = suite.background_pulumi("up", "--yes", stack=TWINS)
    try:
        suite.kubectl(
            "patch", "ksvc", THEIRS, "-n", TWINS_NAMESPACE, "--type=merge", "-p", json.dumps(STOP_FORM)
        )
        theirs_began = time.monotonic()
        ours_began = clock(
            "our stop form accepted",
            lambda: (
                suite.get(KSERVICES, OURS, namespace=TWINS_NAMESPACE)["metadata"]
                .get("labels", {})
                .get("flyte.org/app-stopped")
                == "true"
            ),
            STOP_S,
        )
        graces: set[int] = set()

        def ours_gone() -> bool:
            pods = live_pods(suite, OURS, TWINS_NAMESPACE)
            graces.update(
                int(p["metadata"]["deletionGracePeriodSeconds"])
                for p in pods
                if "deletionGracePeriodSeconds" in p["metadata"]
                and p.get("status", {}).get("phase") not in TERMINAL_PHASES
            )
            return not pods

        stop_ready = clock("our stop revision Ready", lambda: stop_revision_ready(suite) is not None, STOP_S)
        ours_ended = clock("our last pod gone", ours_gone, STOP_S)
        suite.finish(up)
    finally:
        if up.process.poll() is None:
            cluster.stop_group(up.process)
    theirs_ended = clock("their last pod gone", lambda: not live_pods(suite, THEIRS, TWINS_NAMESPACE), STOP_S)
    ours_took, theirs_took = ours_ended - ours_began, theirs_ended - theirs_began
    after_drain = ours_ended - (stop_ready + QUEUE_PROXY_DRAIN_S)
    check(0 not in graces, f"a pod was deleted without its grace period: {graces}")
    check(
        after_drain <= AFTER_DRAIN_S,
        f"ours ended {after_drain:.1f} s after the drain that followed its stop revision",
    )
    check(ours_took < theirs_took, f"ours {ours_took:.1f} s, Knative alone {theirs_took:.1f} s")
    status, _ = get(f"http://{node_ip(suite)}:{PUBLIC_PORT}/stopped", public_host(ours))
    check(status != 200, "the stopped app still serves its public URL")

    with suite.edit_stack(TWINS) as document:
        del suite.app_entry(document, "ours")["stopped"]
    suite.pulumi("up", "--yes", stack=TWINS)
    started = wait_ready(suite, OURS, TWINS_NAMESPACE)
    revision = started["status"]["latestReadyRevisionName"]
    check(revision != first_revision, f"started as {revision}, the revision it ran before the stop")
    through_ingress_at_latest(suite, started)  # answered by that new revision, or it fails saying which
    suite.pulumi("destroy", "--yes", stack=TWINS)
    suite.pulumi("stack", "rm", "--yes", stack=TWINS)
    record(
        f"ours {ours_took:.1f} s (stop revision Ready at {stop_ready - ours_began:.1f} s, queue-proxy drain "
        f"{QUEUE_PROXY_DRAIN_S:.0f} s), Knative alone {theirs_took:.1f} s; started again as {revision}"
    )
