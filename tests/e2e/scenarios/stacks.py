"""The stacks scenarios build on, set up once a session by the fixtures of ``conftest.py``.

Each function here does what a scenario needs done before it can look (deploy the main stack, take
over apps Flyte's app service made) and returns what it saw on the way; the scenario that owns the
behaviour (``test_up``, ``test_adopt``) asserts on that record, and every other scenario that needs the
stack just asks for the fixture, so a scenario selected alone with ``-k`` gets what it builds on.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Final

from tests.e2e.node.images import stack_commands, stack_images
from tests.e2e.scenarios.running import running_pods, through_ingress, wait_ready
from tests.e2e.scenarios.suite import (
    KSERVICES,
    MAIN_STACK,
    NAMESPACE,
    POLICY_PACK,
    REPO,
    REVISIONS,
    STACKS,
    Suite,
)

ADOPT_STACK: Final = "adopt"
ADOPT_NAMESPACE: Final = "flyte-adopt"
ADOPT_PROJECT: Final = "adopted"
ADOPT_DOMAIN: Final = "development"
ADOPTED: Final = (("plain", "legacy"), ("gpu", "legacy-gpu"))
"""(Flyte SDK fixture, app name): the app adopted exactly, then the one adopted with changes."""
REVISION_WAIT_S: Final = 60.0
KNATIVE_REACTION_S: Final = 3.0
"""How long a scenario gives Knative's controller to react to an update before counting Revisions."""


SCENARIO_IMAGES: Final = (
    "ghcr.io/example/app:1.0",  # Flyte's SDK fixtures the adopt scenario deploys as Flyte would
    "ghcr.io/example/web:1.0",  # the package scenarios' apps (package_scenarios.py)
    "ghcr.io/example/ui:2.0",
    "ghcr.io/example/feature-store:0.9.2",  # test_lifecycle's image change
    "ghcr.io/example/model-api:2.3.1",  # test_traffic's image change
)
"""Images the scenarios' apps name beyond the stack files': each is the test app under that name."""


def app_commands() -> list[str]:
    """The commands the stacks' apps run (``python``): the test app stands in for each."""
    return stack_commands(sorted(STACKS.glob("*.yaml")))


NEVER_IMPORTED: Final = frozenset({"ghcr.io/example/nowhere:1.0"})
"""The image of ``stacks/extras.yaml``'s app that must never be Ready: its pull fails (no registry)."""


def app_images() -> list[str]:
    """Every image an app of the scenarios names but ``NEVER_IMPORTED``: the node imports the test app
    under each name (no registry is reached); an image named nowhere fails to pull, at once."""
    named = [*stack_images(sorted(STACKS.glob("*.yaml"))), *SCENARIO_IMAGES]
    return [image for image in named if image not in NEVER_IMPORTED]


@dataclass(frozen=True)
class Deployed:
    """The main stack (``stacks/e2e.yaml``) after `pulumi preview --policy-pack` and `pulumi up`."""

    preview: str
    """What the preview with the policy pack printed (``test_up`` checks the pack ran)."""


def deploy_main_stack(suite: Suite) -> Deployed:
    """`pulumi preview` with the policy pack, then `up` with it, of ``stacks/e2e.yaml``, its kubeconfig
    set with `pulumi config set` (as a user would, rather than in the file), from what a user's first
    deploy starts from (Knative as installed, the apps' namespace already made)."""
    suite.first_deploy_ground(NAMESPACE)
    suite.write_stack(MAIN_STACK, STACKS / "e2e.yaml", kubeconfig=False)
    suite.pulumi("stack", "init")
    suite.pulumi("config", "set", "kubernetes:kubeconfig", str(suite.plane.kubeconfig))
    preview = suite.pulumi("preview", "--policy-pack", str(POLICY_PACK))
    suite.pulumi("up", "--yes", "--policy-pack", str(POLICY_PACK))
    # An app created stopped is done without waiting for Knative: the scenarios start once Knative has
    # created a Revision of every KService.
    kservices = {o["metadata"]["name"] for o in suite.get(KSERVICES)["items"]}
    suite.wait(
        "a Revision of every KService", lambda: set(suite.revisions().values()) == kservices, REVISION_WAIT_S
    )
    return Deployed(preview.stdout)


@dataclass(frozen=True)
class Adoption:
    """Two KServices made the way Flyte's app service makes them, after `flyte-apps import` and
    `pulumi up` of ``stacks/adopt.yaml``."""

    names: tuple[str, str]
    """The exact adoption's KService, then the upsert's."""
    uids: dict[str, str]
    """Each KService's UID before the stack took it over."""
    before: dict[str, str]
    """The namespace's Revisions before `pulumi up` (-> their KService)."""
    adopt: dict[str, Any]
    """Each app's ``adopt:`` as `flyte-apps import` wrote it into the stack file."""
    imported: str
    """What `flyte-apps import` printed."""
    preview: str
    """What `pulumi preview` printed between the import and `up`."""
    exact_pods: dict[str, int]
    """The exact adoption's pods while it served, just before `pulumi up`: UID -> restarts."""


def upstream_kservice_for(fixture: str, name: str) -> dict[str, Any]:
    """A KService as Flyte's app service creates it, from a spec Flyte's SDK wrote
    (``tests.support.upstream_kservice``, written from Flyte's Go code, not with our renderer)."""
    from tests.support.upstream_kservice import DataPlane, upstream_kservice

    data = json.loads((REPO / "tests" / "fixtures" / "sdk" / f"{fixture}.json").read_text())
    plane = DataPlane(
        namespace=ADOPT_NAMESPACE,
        default_env=(
            ("FLYTE_AWS_ENDPOINT", "http://rustfs-svc.flyte.svc.cluster.local:9000"),
            ("_U_INSECURE", "true"),
        ),
    )
    return upstream_kservice(data["spec_b64"], ADOPT_PROJECT, ADOPT_DOMAIN, name, plane=plane)


def adopt_upstream_apps(suite: Suite) -> Adoption:
    """KServices created the way Flyte's app service creates them (one plain `kubectl create`), in a
    namespace of their own; `flyte-apps import` writes them into ``stacks/adopt.yaml`` (beside an app
    declared by hand), `pulumi preview`, then `pulumi up` takes them over."""
    suite.kubectl("create", "namespace", ADOPT_NAMESPACE)
    manifests = [upstream_kservice_for(fixture, name) for fixture, name in ADOPTED]
    for manifest in manifests:
        suite.kubectl("create", "-f", "-", stdin=json.dumps(manifest))
    exact, changed = (m["metadata"]["name"] for m in manifests)
    names = (exact, changed)

    def first_revisions() -> bool:
        return all(suite.exists(REVISIONS, f"{n}-00001", ADOPT_NAMESPACE) for n in names)

    suite.wait("the running apps' revisions", first_revisions, REVISION_WAIT_S)
    uids = {n: suite.get(KSERVICES, n, ADOPT_NAMESPACE)["metadata"]["uid"] for n in names}
    # The exact app serving, just asked for something: its pods are up when the stack takes it over. (The
    # other asks for 4 CPUs, 16 GiB and a GPU, which this node has not: it stays Pending.)
    through_ingress(suite, wait_ready(suite, exact, ADOPT_NAMESPACE))
    exact_pods = pod_restarts(suite, exact)
    before = suite.revisions(ADOPT_NAMESPACE)
    suite.write_stack(ADOPT_STACK, STACKS / "adopt.yaml")
    suite.pulumi("stack", "init", stack=ADOPT_STACK)
    imported = suite.flyte_apps("import", "--project-dir", str(suite.project), "--stack", ADOPT_STACK)
    with suite.edit_stack(ADOPT_STACK) as document:
        adopt = {a["name"]: a.get("adopt") for a in document["config"]["flyte-apps:apps"]}
    preview = suite.pulumi("preview", stack=ADOPT_STACK)
    suite.pulumi("up", "--yes", stack=ADOPT_STACK)
    time.sleep(KNATIVE_REACTION_S)
    return Adoption(names, uids, before, adopt, imported.stdout + imported.stderr, preview.stdout, exact_pods)


def pod_restarts(suite: Suite, kservice: str) -> dict[str, int]:
    """The adopted KService's running pods: UID -> the restarts of its containers."""
    return {
        pod["metadata"]["uid"]: sum(
            c.get("restartCount", 0) for c in pod["status"].get("containerStatuses", [])
        )
        for pod in running_pods(suite, kservice, ADOPT_NAMESPACE)
    }
