"""A user's first day (issue 36): on a Knative nothing has touched, with the apps' namespace already
there (as on every Flyte cluster), apps that Knative admits only with this program's settings patches.

Without ``knative.manageConfig`` the preview refuses them before anything is registered, one line per
app naming the flags; with it, one `pulumi preview` succeeds (pulumi-kubernetes asks the API server for
a dry run of each object in a namespace that exists, which Knative's webhook refused until the patches
were applied) and one `pulumi up` deploys every app, equal to `render`."""

from __future__ import annotations

from typing import Final

from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.suite import KSERVICES, STACKS, Suite, diagnostics_of

STACK: Final = "first-day"
UNMANAGED: Final = "first-day-unmanaged"
NAMESPACE: Final = "flyte-first-day"
KNATIVE_KEY: Final = "flyte-apps:knative"
APPS: Final = ("gpu-llm", "placed", "slow", "paused")
NEEDING_FLAGS: Final = {
    "gpu-llm": "kubernetes.podspec-affinity, kubernetes.podspec-tolerations",
    "placed": "kubernetes.podspec-nodeselector, kubernetes.podspec-tolerations",
}
WEBHOOK_REFUSAL: Final = "admission webhook"


def test_first_day_without_manage_config(suite: Suite, record: Record) -> None:
    """Without ``knative.manageConfig``: the first preview names each app and the flags it needs."""
    suite.first_deploy_ground(NAMESPACE)
    suite.write_stack(UNMANAGED, STACKS / "first-day.yaml")
    with suite.edit_stack(UNMANAGED) as document:
        del document["config"][KNATIVE_KEY]
    suite.pulumi("stack", "init", stack=UNMANAGED)
    done = suite.pulumi("preview", stack=UNMANAGED, check_rc=False)
    output = done.stdout + done.stderr
    check(done.returncode != 0, "the preview of apps needing disabled flags succeeded")
    diagnostics = diagnostics_of(output)
    for app, flags in NEEDING_FLAGS.items():
        lines = [
            line
            for line in diagnostics
            if f"app ml/production/{app} needs Knative's feature flag(s) {flags}," in line
        ]
        check(len(lines) == 1, f"{app}: expected one line naming {flags}, got {lines}\n{output}")
        check("flyte-apps:knative.manageConfig: true" in lines[0], f"{app}: the setting is not named")
    check(WEBHOOK_REFUSAL not in output, f"Knative's webhook text reached the user:\n{output}")
    check("Traceback" not in output, f"a traceback:\n{output}")
    registered = [r["type"] for r in suite.state_resources(UNMANAGED) if r["type"] != "pulumi:pulumi:Stack"]
    check(not registered, f"registered: {registered}")
    suite.pulumi("stack", "rm", "--yes", stack=UNMANAGED)
    record(f"{len(NEEDING_FLAGS)} apps refused by name, nothing registered")


def test_first_day(suite: Suite, record: Record) -> None:
    """One preview and one up deploy every app on a Knative nothing has touched."""
    suite.first_deploy_ground(NAMESPACE)
    suite.write_stack(STACK, STACKS / "first-day.yaml")
    suite.pulumi("stack", "init", stack=STACK)
    preview = suite.pulumi("preview", stack=STACK)
    for app in APPS:
        check(
            f"{app}-ml-production-kservice create" in preview.stdout,
            f"the preview does not show {app}'s KService to be created:\n{preview.stdout[-3000:]}",
        )
    check(WEBHOOK_REFUSAL not in preview.stdout + preview.stderr, "the webhook refused a dry run")
    suite.pulumi("up", "--yes", stack=STACK)
    live = {k["metadata"]["name"] for k in suite.get(KSERVICES, namespace=NAMESPACE)["items"]}
    check(live == {f"{app}-ml-production" for app in APPS}, f"live KServices: {sorted(live)}")
    count = suite.compare_with_render(STACK)
    suite.pulumi("preview", "--expect-no-changes", stack=STACK)
    suite.pulumi("destroy", "--yes", stack=STACK)
    suite.pulumi("stack", "rm", "--yes", stack=STACK)
    suite.kubectl("delete", "namespace", NAMESPACE, "--wait=false")
    record(f"preview then up: {len(APPS)} apps, {count} objects equal to render; no changes after")
