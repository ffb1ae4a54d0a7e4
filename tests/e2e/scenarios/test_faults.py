"""Faults on the real engine (issue 40; `make e2e-faults`): a `pulumi up` cut off by the API server going
away, exactly where the fault proxy is told (``tests/e2e/faults/proxy.py``), is repaired by the command
docs/operating.md names, loses nothing, and never stops an app that should serve.

Each scenario starts the ``faults`` stack (three apps serving) through the API server itself, then points
the stack at the proxy and runs `pulumi up` into the cut; the proxy is restored before the repair."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final, cast

import kubernetes
import pytest

from tests.e2e.cluster import kill_session, stop_group
from tests.e2e.cluster.processes import Process as RecordedProcess
from tests.e2e.faults.diagnostics import failures
from tests.e2e.faults.proxy import Cut, FaultProxy
from tests.e2e.outcome import ScenarioFailed, check
from tests.e2e.scenarios.probe import Probe, probing
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.running import (
    TERMINAL_PHASES,
    ready_status,
    through_ingress,
    wait_ready,
)
from tests.e2e.scenarios.stacks import Deployed
from tests.e2e.scenarios.suite import (
    DOMAIN_MAPPINGS,
    KSERVICES,
    LABEL_SERVICE,
    REVISIONS,
    STACKS,
    Background,
    Suite,
)

STACK: Final = "faults"
NAMESPACE: Final = "flyte-faults"
SUFFIX: Final = "-faults-development"
SERVING: Final = ("alpha", "beta", "gamma")
STOPPED_APP: Final = SERVING[0]
"""The app the stop scenarios stop."""
ADDED: Final = ("delta", "epsilon", "zeta")
KSERVICES_PATH: Final = rf"/apis/serving\.knative\.dev/v1/namespaces/{NAMESPACE}/services"
KSERVICE_ITEM: Final = rf"{KSERVICES_PATH}/[^/]+"
"""A KService's own path: pulumi-kubernetes 4.25 creates with a server-side apply, a PATCH there."""
REPLACING_OPS: Final = frozenset({"replace", "create-replacement", "delete-replaced"})
REAPER_AGENT: Final = "OpenAPI-Generator/"
"""How the reaper's requests (the official Python client's) introduce themselves."""
FIRED_S: Final = 5.0
"""The cut has happened by the time `pulumi up` ended; this bounds the proxy's hand-over of the news."""
TRACEBACK: Final = "Traceback (most recent call last)"
CLEAN_UP_S: Final = 180.0
KILL_AFTER_S: Final = 120.0
"""The longest a scenario waits for the moment it kills or races `pulumi up` at."""
NEW_IMAGE: Final = "ghcr.io/example/web:1.0"
"""Another image the node has (``stacks.SCENARIO_IMAGES``)."""
KNATIVE_WEBHOOK: Final = "knative-webhook"
"""The control plane's name for Knative's webhook process (``cluster/knative.py``)."""
KNATIVE_CONTROLLER: Final = "knative-controller"
"""... and for Knative's controller, which makes a KService's revisions and reports them Ready."""
REAPER_POLLS: Final = 2
"""The reaper has read its KService this often: it has seen the stop revision not Ready, and waits."""
INTERRUPTED_EXIT_S: Final = 60.0
"""How long `pulumi up` may take to end after SIGINT and SIGTERM (2 s in runs; its reaper's bound is 30 s)."""
ERROR_SHOWN: Final = 160
STATUS_DRIFT: Final = 4
"""`flyte-apps status --exit-code`'s exit code for drift (docs/operating.md)."""
MANAGED_BY: Final = "app.kubernetes.io/managed-by"
"""The label the stack puts on its namespace."""
MAPPED_HOST: Final = "gamma-web.apps.example.com"
"""gamma's custom host (faults.yaml): the name of its DomainMapping."""
ADDED_IMAGE: Final = "ghcr.io/example/app:1.0"
ADDED_APP: Final = {
    "container": {
        "image": ADDED_IMAGE,
        "resources": {"requests": {"cpu": "25m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
    },
    "autoscaling": {"maxReplicas": 1},
}


def kservice(app: str) -> str:
    return f"{app}{SUFFIX}"


def revisions(suite: Suite) -> dict[str, tuple[str, str]]:
    """Every Revision of the namespace -> (its KService, its UID)."""
    items = suite.get(REVISIONS, namespace=NAMESPACE)["items"]
    return {
        r["metadata"]["name"]: (
            r["metadata"]["labels"].get(LABEL_SERVICE, ""),
            r["metadata"]["uid"],
        )
        for r in items
    }


def still_serving(suite: Suite, apps: Sequence[str]) -> None:
    """Each of ``apps`` is Ready and answers through the ingress."""
    for app in apps:
        through_ingress(suite, wait_ready(suite, kservice(app), NAMESPACE))


def serving(suite: Suite) -> dict[str, tuple[str, str]]:
    """Each serving app answers through the ingress; their Revisions (-> KService, UID)."""
    still_serving(suite, SERVING)
    return {name: owner for name, owner in revisions(suite).items() if owner[0] in map(kservice, SERVING)}


def uids(suite: Suite) -> dict[str, str]:
    return {
        k["metadata"]["name"]: k["metadata"]["uid"]
        for k in suite.get(KSERVICES, namespace=NAMESPACE)["items"]
    }


def in_state(suite: Suite) -> set[str]:
    """The KServices the stack's state holds (by their names in the cluster)."""
    return {
        r["outputs"]["metadata"]["name"]
        for r in suite.state_resources(STACK)
        if r["type"] == "kubernetes:serving.knative.dev/v1:Service" and "outputs" in r
    }


@pytest.fixture
def faults_stack(suite: Suite, knative_settings: Deployed, fault_proxy: FaultProxy) -> Iterator[Suite]:
    """The ``faults`` stack up through the API server itself: its three apps created, anew for each
    scenario (Knative reconciles them after `up` returns; a scenario waits for them). After the scenario,
    however it ended: the proxy restored, a lock left by a killed `up` cancelled, pending creates cleared,
    the stack destroyed and removed (if `destroy` fails: removed by force, its namespace deleted, and the
    scenario fails with what `destroy` said)."""
    suite.write_stack(STACK, STACKS / "faults.yaml")
    suite.pulumi("stack", "init", stack=STACK)
    suite.pulumi("up", "--yes", stack=STACK)
    try:
        yield suite
    finally:
        fault_proxy.restore()
        suite.pulumi("cancel", "--yes", stack=STACK, check_rc=False)
        suite.pulumi("refresh", "--yes", "--clear-pending-creates", stack=STACK, check_rc=False)
        destroyed = suite.pulumi("destroy", "--yes", stack=STACK, check_rc=False)
        if destroyed.returncode == 0:
            suite.pulumi("stack", "rm", "--yes", stack=STACK)
        else:
            suite.pulumi("stack", "rm", "--yes", "--force", stack=STACK)
            suite.kubectl("delete", "namespace", NAMESPACE, "--wait=true", f"--timeout={CLEAN_UP_S:.0f}s")
            said = "\n".join(
                " ".join(lines) for lines in failures(destroyed.stdout + destroyed.stderr).values()
            )
            raise ScenarioFailed(f"`pulumi destroy` of the faults stack failed:\n{said}")


def plane_process(suite: Suite, name: str) -> RecordedProcess:
    """The control plane's process ``name`` (its process group is what a scenario stops and continues)."""
    state = suite.plane.state
    check(state is not None, "the control plane recorded no processes")
    assert state is not None
    found = [p for p in state.processes if p.name == name]
    check(len(found) == 1, f"the control plane's processes named {name}: {found}")
    return found[0]


def probed(suite: Suite, apps: Sequence[str]) -> contextlib.AbstractContextManager[Probe]:
    """Requests and `logs -f` lines of ``apps`` counted across the fault (``probe.probing``)."""
    return probing(suite, STACK, {app: kservice(app) for app in apps}, NAMESPACE)


def add_apps(names: Sequence[str]) -> Callable[[Any], None]:
    def change(document: Any) -> None:
        document["config"]["flyte-apps:apps"].extend({"name": name, **ADDED_APP} for name in names)

    return change


def through_proxy(suite: Suite, proxy: FaultProxy, change: Callable[[Any], None]) -> None:
    """Point the stack at the proxy (another address of the same API server) and make ``change`` to its
    document: the preview replaces nothing (the providers' ``clusterIdentifier``)."""
    with suite.edit_stack(STACK) as document:
        document["config"]["kubernetes:kubeconfig"] = str(proxy.kubeconfig(suite.work / "proxy.kubeconfig"))
        change(document)
    preview = json.loads(suite.pulumi("preview", "--json", stack=STACK).stdout)
    replacing = sorted(
        f"{step['op']} {step['urn'].rsplit('::', 1)[-1]}"
        for step in preview.get("steps", [])
        if step["op"] in REPLACING_OPS
    )
    check(not replacing, f"pointing the stack at another address of its cluster replaces: {replacing}")


def cut_off(suite: Suite, proxy: FaultProxy) -> subprocess.CompletedProcess[str]:
    """`pulumi up` into the armed cut: it must fail, the cut must have happened, and what it prints has
    no Python traceback and names the proxy's address in every error."""
    failed = suite.pulumi("up", "--yes", stack=STACK, check_rc=False)
    output = failed.stdout + failed.stderr
    check(failed.returncode != 0, f"`pulumi up` through the cut succeeded:\n{output[-3000:]}")
    proxy.wait_fired(FIRED_S)
    check(TRACEBACK not in output, f"a Python traceback in `pulumi up`'s output:\n{output[-3000:]}")
    address = f"127.0.0.1:{proxy.port}"
    failed_resources = failures(output)
    unnamed = {name: said for name, said in failed_resources.items() if address not in " ".join(said)}
    check(bool(failed_resources), f"no resource failed:\n{output[-3000:]}")
    check(not unnamed, f"failures that do not name the API server's address {address}: {unnamed}")
    return failed


def first_error(failed: subprocess.CompletedProcess[str]) -> str:
    """The end of the first resource failure `pulumi up` printed (its cause; for the scenario's line)."""
    said = [" ".join(lines) for lines in failures(failed.stdout + failed.stderr).values()]
    return f"...{said[0][-ERROR_SHOWN:]}" if said else ""


def test_api_server_gone_at_a_kservice_create(
    faults_stack: Suite, fault_proxy: FaultProxy, record: Record
) -> None:
    """The API server creates the second of three new KServices and is gone before it answers. `pulumi
    refresh` then `pulumi up` with it back: the lost one is taken over (same UID, no new Revision), every
    app that served serves, no Revision with traffic was deleted."""
    suite = faults_stack
    before = serving(suite)
    with probed(suite, SERVING) as probe:
        through_proxy(suite, fault_proxy, change=add_apps(ADDED))
        fault_proxy.arm(Cut("PATCH", KSERVICE_ITEM, nth=2))
        probe.fault()
        failed = cut_off(suite, fault_proxy)
        fault_proxy.restore()

        live = uids(suite)
        lost = sorted(set(live) - in_state(suite))
        pending = suite.pending_creates(STACK)
        check(not pending, f"the failed `up` left pending creates (the repair assumes none): {pending}")
        suite.pulumi("refresh", "--yes", stack=STACK)
        suite.pulumi("up", "--yes", stack=STACK)
        suite.pulumi("up", "--yes", "--expect-no-changes", stack=STACK)
        probe.repaired()
    after = uids(suite)
    check(all(after[name] == live[name] for name in live), f"a KService was replaced: {live} -> {after}")
    check(
        set(after) == {kservice(a) for a in (*SERVING, *ADDED)},
        f"KServices after the repair: {sorted(after)}",
    )
    for name in lost:
        mine = [r for r, (owner, _) in revisions(suite).items() if owner == name]
        check(len(mine) == 1, f"the lost KService {name} has revisions {mine} after the repair")
    now = serving(suite)
    check(
        all(now.get(name) == owner for name, owner in before.items()),
        f"revisions with traffic went: {before} -> {now}",
    )
    record(
        f"cut at the 2nd KService create; lost {lost} taken over by refresh + up; {probe.summary()}; "
        f"first error: {first_error(failed)}"
    )


def stop_app(name: str) -> Callable[[Any], None]:
    def change(document: Any) -> None:
        for app in document["config"]["flyte-apps:apps"]:
            if app["name"] == name:
                app["stopped"] = True

    return change


def test_api_server_gone_while_a_reaper_waits(
    faults_stack: Suite, fault_proxy: FaultProxy, record: Record
) -> None:
    """Stopping ``alpha``: the API server has taken the stop form and goes while the reaper reads the
    KService. The reaper fails in one line naming the address; nothing is deleted; the other apps serve.
    With it back, `pulumi up` finishes the stop: the old revision deleted, the stop revision kept."""
    suite = faults_stack
    before = serving(suite)
    first = next(name for name, (owner, _) in before.items() if owner == kservice(STOPPED_APP))
    with probed(suite, SERVING[1:]) as probe:
        through_proxy(suite, fault_proxy, change=stop_app(STOPPED_APP))
        alpha_path = f"{KSERVICES_PATH}/{kservice('alpha')}"
        fault_proxy.arm(Cut("GET", alpha_path, nth=1, agent=REAPER_AGENT))
        probe.fault()
        failed = cut_off(suite, fault_proxy)
        fault_proxy.restore()
        output = failed.stdout + failed.stderr
        reaper_errors = [said for name, said in failures(output).items() if "RevisionReaper" in name]
        check(
            len(reaper_errors) == 1
            and len(reaper_errors[0]) == 1
            and kservice(STOPPED_APP) in reaper_errors[0][0],
            f"the reaper's failure is not one line naming its app: {reaper_errors}",
        )
        live = suite.get(KSERVICES, kservice(STOPPED_APP), namespace=NAMESPACE)
        stopped = live["metadata"]["labels"].get("flyte.org/app-stopped")
        check(stopped == "true", "the stop form was not applied")
        check(
            first in revisions(suite), f"{first} was deleted while the reaper could not see its stop revision"
        )
        suite.pulumi("up", "--yes", stack=STACK)
        suite.pulumi("up", "--yes", "--expect-no-changes", stack=STACK)
        probe.repaired()
    (reaper,) = suite.reapers(STACK)
    outputs = reaper.get("outputs", {})
    check(outputs.get("deleted_revisions") == [first], f"the reaper's outputs after the repair: {outputs}")
    check(outputs.get("stop_revision") in revisions(suite), f"the stop revision is gone: {outputs}")
    others = {name: owner for name, owner in before.items() if owner[0] != kservice(STOPPED_APP)}
    still_serving(suite, SERVING[1:])
    now = revisions(suite)
    check(all(now.get(name) == owner for name, owner in others.items()), f"a serving revision went: {now}")
    record(
        f"`up` then deleted {first}; beta and gamma: {probe.summary()}; the reaper's line: "
        f"{reaper_errors[0][0][:ERROR_SHOWN]}"
    )


def lock_files(suite: Suite) -> list[Path]:
    return sorted((suite.work / "state" / ".pulumi" / "locks").glob(f"organization/*/{STACK}/*.json"))


def clear_pending_creates_then_up(suite: Suite) -> list[str]:
    """The repair of an `up` cut short with creates in flight (after `pulumi cancel`): `pulumi refresh
    --clear-pending-creates` leaves none pending, `pulumi up` converges, a second changes nothing. The
    creates that were pending."""
    pending = suite.pending_creates(STACK)
    suite.pulumi("refresh", "--yes", "--clear-pending-creates", stack=STACK)
    left = suite.pending_creates(STACK)
    check(not left, f"pending creates after `refresh --clear-pending-creates`: {left}")
    suite.pulumi("up", "--yes", stack=STACK)
    suite.pulumi("up", "--yes", "--expect-no-changes", stack=STACK)
    return pending


def test_up_killed_then_cancel_and_up(faults_stack: Suite, fault_proxy: FaultProxy, record: Record) -> None:
    """`pulumi up` killed outright (SIGKILL to its process group) once the API server has taken two of
    three new KServices: the lock stays and is named; `pulumi cancel` removes it; `pulumi refresh
    --clear-pending-creates` drops the creates it left pending; `pulumi up` converges without replacing
    anything; the serving apps serve throughout."""
    suite = faults_stack
    before = serving(suite)
    with probed(suite, SERVING) as probe:
        through_proxy(suite, fault_proxy, change=add_apps(ADDED))
        up = suite.background_pulumi("up", "--yes", stack=STACK)
        try:
            fault_proxy.wait_for(lambda: fault_proxy.count("PATCH", KSERVICE_ITEM) >= 2, KILL_AFTER_S)
            probe.fault()
            os.killpg(up.process.pid, signal.SIGKILL)
            up.process.wait(timeout=KILL_AFTER_S)
        finally:
            if up.process.poll() is None:
                stop_group(up.process)
        # Its plugins (the provider, the language host: process groups of their own) outlive it, as
        # on a user's machine; they are stopped here, by the session the CLI was started in.
        orphans = kill_session(up.process.pid)
        locks = lock_files(suite)
        check(len(locks) == 1, f"lock files after the kill: {locks}")
        refused = suite.pulumi("up", "--yes", stack=STACK, check_rc=False)
        said = refused.stdout + refused.stderr
        check(
            refused.returncode != 0 and "pulumi cancel" in said,
            f"the next up was not refused naming the lock:\n{said}",
        )
        check(locks[0].name in said, f"the refusal does not name the lock file {locks[0].name}:\n{said}")
        live = uids(suite)
        suite.pulumi("cancel", "--yes", stack=STACK)
        check(not lock_files(suite), "`pulumi cancel` left the lock")
        # The creates in flight at the kill stay pending (counted, not asserted): a plain `refresh` and
        # `up` leave them in the state; `refresh --clear-pending-creates` drops them, and `up` then takes
        # over what the killed `up` created (a server-side apply).
        pending = clear_pending_creates_then_up(suite)
        probe.repaired()
    after = uids(suite)
    check(
        all(after[name] == uid for name, uid in live.items()), f"a KService was replaced: {live} -> {after}"
    )
    now = serving(suite)
    check(all(now.get(name) == owner for name, owner in before.items()), f"a serving revision went: {now}")
    record(
        f"killed after 2 KService applies ({len(orphans)} of its plugins left running, stopped), "
        f"{len(pending)} creates pending; lock named; cancel, refresh "
        f"--clear-pending-creates, up: {len(after)} KServices, none replaced; "
        f"{probe.summary()}"
    )


def test_two_ups_at_once(faults_stack: Suite, fault_proxy: FaultProxy, record: Record) -> None:
    """Two `pulumi up` of one stack at once: the second is refused naming the lock, the first applies
    each change once, and the state loses nothing."""
    suite = faults_stack
    with probed(suite, SERVING) as probe:
        through_proxy(suite, fault_proxy, change=add_apps(ADDED[:1]))
        resources_before = len(suite.state_resources(STACK))
        first = suite.background_pulumi("up", "--yes", stack=STACK)
        try:
            fault_proxy.wait_for(lambda: bool(lock_files(suite)), KILL_AFTER_S)
            probe.fault()
            second = suite.pulumi("up", "--yes", stack=STACK, check_rc=False)
            suite.finish(first)
        finally:
            if first.process.poll() is None:
                stop_group(first.process)
        suite.pulumi("up", "--yes", "--expect-no-changes", stack=STACK)
        probe.repaired()
    said = second.stdout + second.stderr
    check(second.returncode != 0 and "currently locked" in said, f"the second up was not refused:\n{said}")
    added = kservice(ADDED[0])
    mine = [name for name, (owner, _) in revisions(suite).items() if owner == added]
    check(len(mine) == 1, f"{added} has revisions {mine}: applied more than once?")
    resources_after = len(suite.state_resources(STACK))
    check(resources_after > resources_before, f"state resources {resources_before} -> {resources_after}")
    record(
        f"second refused naming the lock; state {resources_before} -> {resources_after} resources; "
        f"{probe.summary()}"
    )


def test_objects_deleted_by_hand(faults_stack: Suite, record: Record) -> None:
    """A KService, another app's DomainMapping and the namespace's label deleted by hand: `status`
    reports each, `pulumi preview --refresh` shows each, `pulumi up --refresh` restores each and the app
    serves again."""
    suite = faults_stack
    serving(suite)
    gone = kservice("beta")
    namespace = suite.get("namespaces", NAMESPACE, namespace=None)
    label = MANAGED_BY
    check(label in namespace["metadata"].get("labels", {}), f"the namespace has no {label}: {namespace}")
    mapping = suite.get(DOMAIN_MAPPINGS, MAPPED_HOST, namespace=NAMESPACE)
    with probed(suite, (SERVING[0], SERVING[2])) as probe:
        probe.fault()
        suite.kubectl("delete", "ksvc", gone, "-n", NAMESPACE, "--wait=true")
        suite.kubectl("delete", DOMAIN_MAPPINGS, MAPPED_HOST, "-n", NAMESPACE, "--wait=true")
        suite.kubectl("label", "namespace", NAMESPACE, f"{label}-")
        status = suite.flyte_apps(
            "status", "--project-dir", str(suite.project), "--stack", STACK, "--exit-code", check_rc=False
        )
        check(
            status.returncode == STATUS_DRIFT,
            f"`status --exit-code` exited {status.returncode}:\n{status.stdout}",
        )
        drift = status.stdout.split("drift:", 1)[-1]
        for said in (
            "faults/development/beta: in the stack but not in the cluster",
            f"DomainMapping {MAPPED_HOST}",
            label,
        ):
            check(said in drift, f"`status` does not report {said!r}:\n{status.stdout}")
        preview = suite.pulumi("preview", "--refresh", "--diff", stack=STACK).stdout
        check(
            all(name in preview for name in (f"{gone}-kservice", "apps-namespace", MAPPED_HOST)),
            f"preview --refresh:\n{preview[-3000:]}",
        )
        suite.pulumi("up", "--yes", "--refresh", stack=STACK)
        restored = suite.get("namespaces", NAMESPACE, namespace=None)["metadata"].get("labels", {})
        check(label in restored, f"the namespace's {label} was not restored: {restored}")
        remapped = suite.get(DOMAIN_MAPPINGS, MAPPED_HOST, namespace=NAMESPACE)
        check(remapped["spec"] == mapping["spec"], f"the DomainMapping came back as {remapped['spec']}")
        serving(suite)
        suite.pulumi("up", "--yes", "--expect-no-changes", stack=STACK)
        probe.repaired()
    record(
        f"{gone}, DomainMapping {MAPPED_HOST} and the namespace's {label} deleted by hand; status exit 4 "
        f"naming each; up --refresh restored all three; alpha and gamma: {probe.summary()}"
    )


def test_up_interrupted_during_a_stop(faults_stack: Suite, fault_proxy: FaultProxy, record: Record) -> None:
    """Stopping ``alpha`` with Knative's controller paused, so that its stop revision cannot be Ready:
    once the reaper has read the KService twice (it waits), `pulumi up` gets SIGINT, then SIGTERM (as CI
    cancels a job), and ends. The reaper never deletes the revision that serves: the proxy holds any
    delete of the old revision and the scenario fails there (while the controller is paused the stop
    revision cannot be Ready). The old revision is still there after the interrupted `up`; the documented
    repair (`pulumi cancel`, `pulumi refresh --clear-pending-creates`, `pulumi up`) finishes the stop."""
    suite = faults_stack
    before = serving(suite)
    first = next(name for name, (owner, _) in before.items() if owner == kservice(STOPPED_APP))
    with probed(suite, SERVING[1:]) as probe:
        through_proxy(suite, fault_proxy, change=stop_app(STOPPED_APP))
        alpha_path = f"{KSERVICES_PATH}/{kservice('alpha')}"
        first_path = rf"/apis/serving\.knative\.dev/v1/namespaces/{NAMESPACE}/revisions/{first}"
        fault_proxy.arm(Cut("DELETE", first_path, agent=REAPER_AGENT, hold=True))
        api = kubernetes.config.new_client_from_config(config_file=str(suite.plane.kubeconfig))  # type: ignore[no-untyped-call]
        objects = kubernetes.client.CustomObjectsApi(api)

        def not_deleted_before_the_stop_revision_is_ready() -> None:
            """At a held delete, read at once, in this process (kubectl would take a moment Knative may
            use): the stop revision must be Ready."""
            if not fault_proxy.fired.is_set():
                return
            found = objects.get_namespaced_custom_object(
                "serving.knative.dev", "v1", NAMESPACE, "services", kservice(STOPPED_APP)
            )
            status = dict(cast("dict[str, Any]", found).get("status", {}))
            created, ready = status.get("latestCreatedRevisionName"), status.get("latestReadyRevisionName")
            check(
                ready not in (None, first) and ready == created,
                f"the reaper deletes {first} while the stop revision is not Ready: {status}",
            )

        def reaper_polled_again() -> bool:
            return fault_proxy.count("GET", alpha_path, agent=REAPER_AGENT) >= REAPER_POLLS

        # The whole interrupted `up` runs with Knative's controller paused: on this cluster the stop
        # revision is Ready within the reaper's start-up, so without the pause a reaper that did not wait
        # could not be told from one that did, and the interruption might come after the stop was done.
        controller = plane_process(suite, KNATIVE_CONTROLLER)
        up: Background | None = None
        try:
            probe.fault()
            os.killpg(controller.pid, signal.SIGSTOP)
            paused_at = time.monotonic()
            try:
                up = suite.background_pulumi("up", "--yes", "--skip-preview", stack=STACK)
                fault_proxy.wait_for(
                    lambda: fault_proxy.fired.is_set() or reaper_polled_again(), KILL_AFTER_S
                )
                not_deleted_before_the_stop_revision_is_ready()
                os.killpg(up.process.pid, signal.SIGINT)
                os.killpg(up.process.pid, signal.SIGTERM)
                try:
                    up.process.wait(timeout=INTERRUPTED_EXIT_S)
                except subprocess.TimeoutExpired:
                    # A delete held since the signals keeps `up` from ending: name it, if it is that.
                    not_deleted_before_the_stop_revision_is_ready()
                    raise
                not_deleted_before_the_stop_revision_is_ready()
            finally:
                os.killpg(controller.pid, signal.SIGCONT)
            paused_s = time.monotonic() - paused_at
        finally:
            # Nothing may stay held or armed: the hold would catch the repair's delete of the old revision.
            fault_proxy.disarm()
            api.close()  # type: ignore[no-untyped-call]
            if up is not None and up.process.poll() is None:
                stop_group(up.process)
        said = up.output.read_text()
        check(TRACEBACK not in said, f"a Python traceback in the interrupted `pulumi up`:\n{said[-3000:]}")
        check(first in revisions(suite), f"the interrupted `up` deleted {first}")
        suite.pulumi("cancel", "--yes", stack=STACK, check_rc=False)
        pending = clear_pending_creates_then_up(suite)
        probe.repaired()
    check(first not in revisions(suite), f"{first} still there after the repair")
    still_serving(suite, SERVING[1:])
    record(
        f"Knative's controller paused {paused_s:.1f} s; interrupted `up` exited {up.process.returncode}, "
        f"{first} kept, {len(pending)} creates pending; cancel, refresh --clear-pending-creates, up "
        f"finished the stop; beta and gamma: {probe.summary()}"
    )


def change_images(names: Sequence[str], image: str) -> Callable[[Any], None]:
    def change(document: Any) -> None:
        for app in document["config"]["flyte-apps:apps"]:
            if app["name"] in names:
                app["container"]["image"] = image

    return change


def images(suite: Suite) -> dict[str, str]:
    """Each KService of the namespace -> its revision template's image."""
    return {
        k["metadata"]["name"]: k["spec"]["template"]["spec"]["containers"][0]["image"]
        for k in suite.get(KSERVICES, namespace=NAMESPACE)["items"]
    }


def test_knatives_webhook_down(faults_stack: Suite, fault_proxy: FaultProxy, record: Record) -> None:
    """Knative's webhook stopped (SIGSTOP: the API server's calls to it time out) while `up --skip-preview`
    changes two apps' images and adds one: `up` fails, each error names the webhook and the object; every
    KService is all old or all new; with the webhook back (SIGCONT), `up` converges and every app serves."""
    suite = faults_stack
    before = images(suite)
    changed = (SERVING[0], SERVING[1])
    webhook = plane_process(suite, KNATIVE_WEBHOOK)

    def change(document: Any) -> None:
        change_images(changed, NEW_IMAGE)(document)
        add_apps(ADDED[:1])(document)

    with probed(suite, SERVING) as probe:
        through_proxy(suite, fault_proxy, change=change)
        probe.fault()
        os.killpg(webhook.pid, signal.SIGSTOP)
        try:  # as CI runs it: no preview first (a preview would fail on the webhook before any update)
            failed = suite.pulumi("up", "--yes", "--skip-preview", stack=STACK, check_rc=False)
        finally:
            os.killpg(webhook.pid, signal.SIGCONT)
        output = failed.stdout + failed.stderr
        check(failed.returncode != 0, f"`pulumi up` with the webhook down succeeded:\n{output[-3000:]}")
        check(TRACEBACK not in output, f"a Python traceback in `pulumi up`'s output:\n{output[-3000:]}")
        errors = failures(output)
        unnamed = {
            name: said
            for name, said in errors.items()
            if "webhook" not in " ".join(said) or SUFFIX not in name
        }
        check(bool(errors), f"no resource failed:\n{output[-3000:]}")
        check(not unnamed, f"failures that do not name the webhook and the object: {unnamed}")
        allowed = {name: {image} for name, image in before.items()}
        for app in changed:
            allowed[kservice(app)].add(NEW_IMAGE)
        allowed[kservice(ADDED[0])] = {ADDED_IMAGE}
        during = images(suite)
        gone = sorted(set(before) - set(during))
        check(not gone, f"KServices gone while the webhook was down: {gone}")
        mixed = {name: image for name, image in during.items() if image not in allowed.get(name, set())}
        check(not mixed, f"KServices neither as before nor as the stack says: {mixed}")
        suite.pulumi("up", "--yes", stack=STACK)
        suite.pulumi("up", "--yes", "--expect-no-changes", stack=STACK)
        probe.repaired()
    after = images(suite)
    check(all(after[kservice(a)] == NEW_IMAGE for a in changed), f"images after the repair: {after}")
    still_serving(suite, (*SERVING, ADDED[0]))
    record(
        f"`up` failed, {len(errors)} errors naming the webhook; with it back, `up` converged, 4 apps serve; "
        f"{probe.summary()}"
    )


NODE_LOST_S: Final = 150.0
"""From the kubelet's stop until Kubernetes marks the node and its pods not Ready: kube-controller-manager's
``--node-monitor-grace-period`` (50 s by default) plus its 5 s ``--node-monitor-period``, with margin."""
NODE_BACK_S: Final = 120.0
"""From the kubelet's return until the node is Ready and its pods Ready again (it posts its status at
once and re-syncs each pod's status within its 10 s period)."""
EVICTION_S: Final = 300.0
"""The default ``tolerationSeconds`` of the unreachable taint: the node must be back before it, or its
pods are evicted (the scenario promises they are not)."""
KUBELET: Final = "kubelet"
NO_READY_REPLICA: Final = "no ready replica"


def node_ready(suite: Suite) -> str:
    (node,) = suite.get("nodes", namespace=None)["items"]
    return ready_status(node)


def app_pods_ready(suite: Suite, apps: Sequence[str]) -> dict[str, dict[str, str]]:
    """Each app's live pods (not finished, not being deleted) -> their Ready condition's status."""
    found: dict[str, dict[str, str]] = {app: {} for app in apps}
    for pod in suite.get("pods", namespace=NAMESPACE)["items"]:
        owner = pod["metadata"].get("labels", {}).get(LABEL_SERVICE, "")
        app = next((a for a in apps if kservice(a) == owner), None)
        finished = pod["status"].get("phase") in TERMINAL_PHASES or pod["metadata"].get("deletionTimestamp")
        if app is not None and not finished:
            found[app][pod["metadata"]["name"]] = ready_status(pod)
    return found


def status_lines(suite: Suite) -> list[str]:
    """`flyte-apps status --stack faults`'s lines that say an app has no ready replica."""
    shown = suite.flyte_apps("status", "--project-dir", str(suite.project), "--stack", STACK).stdout
    return [line.strip() for line in shown.splitlines() if NO_READY_REPLICA in line]


def test_node_lost(faults_stack: Suite, record: Record) -> None:
    """The kubelet stops (SIGSTOP: its containers keep running and it posts nothing, as a node cut off
    from the API server). Once Kubernetes marks the node NotReady, `flyte-apps status` names each serving
    app as having no ready replica, one line each; `pulumi up` adds an app and converges; with the
    kubelet back (before eviction), every app serves again with the same pods and no action."""
    suite = faults_stack
    before = serving(suite)
    pods_before = app_pods_ready(suite, SERVING)
    check(
        all(pods and all(ready == "True" for ready in pods.values()) for pods in pods_before.values()),
        f"a serving app without a ready pod before the fault: {pods_before}",
    )
    kubelet = plane_process(suite, KUBELET)
    with probed(suite, SERVING) as probe:
        stopped_at = time.monotonic()
        probe.fault()
        os.killpg(kubelet.pid, signal.SIGSTOP)
        try:
            suite.wait("the node not Ready", lambda: node_ready(suite) not in ("True", ""), NODE_LOST_S)
            lost_after = time.monotonic() - stopped_at
            suite.wait(
                "every serving app's pods marked not Ready",
                lambda: all(
                    all(ready == "False" for ready in pods.values())
                    for pods in app_pods_ready(suite, SERVING).values()
                ),
                NODE_LOST_S,
            )
            lines = status_lines(suite)
            named = sorted(
                app for app in SERVING if any(f"faults/development/{app}:" in line for line in lines)
            )
            check(
                named == sorted(SERVING) and len(lines) == len(SERVING),
                f"`status` while the node is lost: {lines}",
            )
            check(
                all("which is NotReady" in line for line in lines),
                f"`status` does not say the node is NotReady: {lines}",
            )
            with suite.edit_stack(STACK) as document:
                add_apps(ADDED[:1])(document)
            suite.pulumi("up", "--yes", stack=STACK)
            suite.pulumi("up", "--yes", "--expect-no-changes", stack=STACK)
            check(
                kservice(ADDED[0]) in uids(suite), "`up` did not create the added app while the node was lost"
            )
            check(
                time.monotonic() - stopped_at < EVICTION_S,
                f"the node was lost {time.monotonic() - stopped_at:.0f} s: its pods may be evicted",
            )
        finally:
            os.killpg(kubelet.pid, signal.SIGCONT)
        back_at = time.monotonic()
        lost_s = back_at - stopped_at
        suite.wait("the node Ready again", lambda: node_ready(suite) == "True", NODE_BACK_S)
        suite.wait(
            "every serving app's pods Ready again",
            lambda: all(
                pods and all(ready == "True" for ready in pods.values())
                for pods in app_pods_ready(suite, SERVING).values()
            ),
            NODE_BACK_S,
        )
        ready_after = time.monotonic() - back_at
        pods_after = app_pods_ready(suite, SERVING)
        check(
            {app: set(pods) for app, pods in pods_after.items()}
            == {app: set(pods) for app, pods in pods_before.items()},
            f"pods replaced: {pods_before} -> {pods_after}",
        )
        now = serving(suite)
        check(
            all(now.get(name) == owner for name, owner in before.items()), f"a serving revision went: {now}"
        )
        still_serving(suite, ADDED[:1])
        suite.wait("`status` without a no-ready-replica note", lambda: not status_lines(suite), NODE_BACK_S)
        probe.repaired()
    record(
        f"kubelet stopped {lost_s:.0f} s: node NotReady after {lost_after:.0f} s; status named "
        f"{len(SERVING)} apps; up added {ADDED[0]}; back: pods Ready in {ready_after:.0f} s, same pods; "
        f"{probe.summary()}"
    )
