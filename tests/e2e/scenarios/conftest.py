"""The scenarios' fixtures, their order and their report.

Session-scoped fixtures own what scenarios build on, each set up the first time a scenario asks for it
and torn down at the end of the session, however it ends (a failure, Ctrl-C, SIGTERM):

- ``tools``: the tools ``make e2e-tools`` built (the session stops at once, naming what is missing);
  also where the network namespace is insisted on.
- ``work``: the work directory (``--work DIR``, else a new temporary one, removed after a run where
  everything passed unless ``--keep``).
- ``control_plane``: etcd, the API server, the controller manager and Knative (``tests.e2e.cluster``),
  stopped by PID at the end.
- ``suite``: the project directory on that control plane, and the commands (``suite.py``).
- ``policy_pack``, ``component_package``: the virtualenvs installed outside the network namespace.
- ``deployed``: the main stack, up (``stacks.deploy_main_stack``); ``knative_settings``: the Knative
  config patches a stack made (the main one: a stopped app elsewhere needs them).
- ``adopted``: apps made as Flyte's app service makes them, taken over (``stacks.adopt_upstream_apps``).

Scenarios run in ``SCENARIO_ORDER`` of their files, then in definition order within a file: some
change the main stack (an image, a stop and a start) and ``test_destroy.py`` destroys it, so it comes
last; a file not in the list stops the collection rather than run at an unknown point. The fault
scenarios (``FAULT_ORDER``) run with ``--faults``, and then alone (`make e2e-faults`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

import pytest

from tests.e2e import build, cluster
from tests.e2e.faults.proxy import FaultProxy
from tests.e2e.node.plane import NodePlane
from tests.e2e.scenarios import installs
from tests.e2e.scenarios.environment import SCENARIO_TOOLS
from tests.e2e.scenarios.reporting import DETAIL, Record, ScenarioReporter
from tests.e2e.scenarios.stacks import (
    Adoption,
    Deployed,
    adopt_upstream_apps,
    app_commands,
    app_images,
    deploy_main_stack,
)
from tests.e2e.scenarios.suite import NETNS_MARKER, Suite, prepare_project

SCENARIO_ORDER: Final = (
    "test_bad_stack.py",
    "test_go_readers.py",
    "test_policy.py",
    "test_first_day.py",
    "test_lifecycle.py",
    "test_serve.py",
    "test_refusals.py",
    "test_knative.py",
    "test_stop_start.py",
    "test_secret_kubeconfig.py",
    "test_operate.py",
    "test_traffic.py",
    "test_hand_edit.py",
    "test_upgrade.py",
    "test_adopt.py",
    "test_package.py",
    "test_destroy.py",
)
FAULT_ORDER: Final = ("test_faults.py", "test_scale_load.py")
"""The fault scenarios (issue 40): `make e2e-faults` (``--faults``) runs these and nothing else; `make
e2e` leaves them out."""
REPORTER: Final = pytest.StashKey[ScenarioReporter]()
WORK_PREFIX: Final = "flyte-apps-e2e-"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("e2e", "the real-engine scenarios (tests/e2e/README.md)")
    group.addoption("--work", type=Path, default=None, help="work directory (default: a new temporary one)")
    group.addoption("--keep", action="store_true", help="keep the work directory after a passing run")
    group.addoption(
        "--faults",
        action="store_true",
        help="run the fault scenarios (`make e2e-faults`: a proxy cuts the API server off), not the rest",
    )
    group.addoption(
        "--no-netns",
        action="store_true",
        help="run on this machine's loopback, not in a network namespace of its own",
    )


def pytest_configure(config: pytest.Config) -> None:
    reporter = ScenarioReporter(config)
    config.stash[REPORTER] = reporter
    config.pluginmanager.register(reporter, "flyte-apps-e2e-reporter")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unknown = sorted({item.path.name for item in items} - set(SCENARIO_ORDER) - set(FAULT_ORDER))
    if unknown:
        msg = (
            f"scenario file(s) {', '.join(unknown)} not in SCENARIO_ORDER or FAULT_ORDER "
            "(tests/e2e/scenarios/conftest.py)"
        )
        raise pytest.UsageError(msg)
    order = FAULT_ORDER if config.getoption("faults") else SCENARIO_ORDER
    left_out = [item for item in items if item.path.name not in order]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item.path.name in order]
    items.sort(key=lambda item: order.index(item.path.name))  # stable: definition order within


# -- what every scenario gets -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def reporter(pytestconfig: pytest.Config) -> ScenarioReporter:
    return pytestconfig.stash[REPORTER]


@pytest.fixture
def record(request: pytest.FixtureRequest) -> Record:
    """``record(detail)``: the detail a scenario's PASS line ends with (what it compared, how many)."""

    def keep(detail: str) -> None:
        request.node.user_properties.append((DETAIL, detail))

    return keep


@pytest.fixture(scope="session")
def tools(pytestconfig: pytest.Config) -> Mapping[str, build.Built]:
    """The built tools. The scenarios run in a network namespace of their own (nothing can leave
    loopback) unless told ``--no-netns``: ``python -m tests.e2e.run`` makes it."""
    if os.environ.get(NETNS_MARKER) != "1" and not pytestconfig.getoption("no_netns"):
        pytest.exit(
            "e2e: the scenarios run in a network namespace of their own: run them with `make e2e` "
            "(python -m tests.e2e.run [pytest args]), or pass --no-netns to use this machine's loopback",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
    try:
        return build.locate(SCENARIO_TOOLS)
    except build.ToolError as exc:
        pytest.exit(f"e2e: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(scope="session")
def work(
    request: pytest.FixtureRequest, tools: Mapping[str, build.Built], reporter: ScenarioReporter
) -> Iterator[Path]:
    """The work directory: kept when given, when ``--keep``, and after a failure or an interruption
    (for inspection: logs, state, stack files); removed otherwise."""
    given: Path | None = request.config.getoption("work")
    if given is not None:
        given.mkdir(parents=True, exist_ok=True)
    directory = (given or Path(tempfile.mkdtemp(prefix=WORK_PREFIX))).resolve()
    yield directory
    clean = request.session.testsfailed == 0 and not reporter.interrupted
    if clean and given is None and not request.config.getoption("keep"):
        shutil.rmtree(directory, ignore_errors=True)
    else:
        reporter.write(f"e2e: work directory kept: {directory}")


@pytest.fixture(scope="session")
def control_plane(
    request: pytest.FixtureRequest, work: Path, tools: Mapping[str, build.Built], reporter: ScenarioReporter
) -> Iterator[NodePlane]:
    """etcd, kube-apiserver, kube-controller-manager and Knative Serving, and a node with Knative's
    data plane (``tests/e2e/node``), ready (each waited for, bounded); every process stopped by PID
    at the end, a second Ctrl-C meanwhile ignored, and the node's ``down`` checks nothing is left.
    A node runs only in the network namespace the run made: ``--no-netns`` is refused here."""
    if request.config.getoption("no_netns"):
        pytest.fail(
            "--no-netns: a node (pods, an ingress) runs only in a network namespace the run made itself"
        )
    began = time.monotonic()
    plane = NodePlane(work / "cluster", tools, app_images=app_images(), app_commands=app_commands())
    reporter.write(f"e2e: starting the control plane and its node in {plane.workdir}")
    plane.up()
    reporter.set_up(
        "control plane",
        time.monotonic() - began,
        "etcd, kube-apiserver, controller manager, Knative; a node: containerd, kubelet, scheduler, "
        "kube-proxy, CoreDNS, activator, autoscaler, Traefik",
    )
    try:
        yield plane
    finally:
        with cluster.signals_deferred():
            plane.down()


@pytest.fixture(scope="session")
def suite(
    work: Path,
    control_plane: NodePlane,
    tools: Mapping[str, build.Built],
    reporter: ScenarioReporter,
) -> Suite:
    """The project directory on the control plane (the kubernetes plugin installed), and its commands."""
    began = time.monotonic()
    prepared = prepare_project(work, control_plane, tools)
    reporter.set_up("project", time.monotonic() - began, str(prepared.project))
    return prepared


@pytest.fixture(scope="session")
def policy_pack() -> Path:
    """``policies/``, its virtualenv installed for these inputs (outside the network namespace)."""
    if not installs.policy_pack_installed():
        pytest.fail("the policy pack's virtualenv is missing or stale: `make e2e` installs it first")
    return installs.POLICY_PACK


@pytest.fixture(scope="session")
def component_package() -> Path:
    """``components/plugin``, its virtualenv and the wheelhouse installed for these inputs."""
    if not installs.package_venv_installed():
        pytest.fail(
            "the component package's virtualenv or wheelhouse is missing or stale: `make e2e` makes them"
        )
    return installs.PACKAGE_PLUGIN


# -- the stacks scenarios build on --------------------------------------------------------------------


@pytest.fixture(scope="session")
def deployed(suite: Suite, policy_pack: Path, reporter: ScenarioReporter) -> Deployed:
    """The main stack, ``stacks/e2e.yaml``, previewed with the policy pack and up; destroyed by
    ``test_destroy`` (the last scenario), not here: destroying it is a scenario."""
    began = time.monotonic()
    done = deploy_main_stack(suite)
    reporter.set_up("deployed", time.monotonic() - began, "preview and up of stacks/e2e.yaml, with the pack")
    return done


@pytest.fixture(scope="session")
def knative_settings(deployed: Deployed) -> Deployed:
    """Knative's config as a stack patches it (``knative.manageConfig``: allow-zero-initial-scale, the
    feature flags, the max timeout): a stopped app's stop revision only becomes Ready with it, and a
    pod template with node selectors or tolerations is only admitted with it. The main stack's."""
    return deployed


@pytest.fixture(scope="session")
def adopted(suite: Suite, knative_settings: Deployed, reporter: ScenarioReporter) -> Adoption:
    """Apps made as Flyte's app service makes them (in ``flyte-adopt``), imported and taken over by
    the ``adopt`` stack; ``test_adopt`` asserts how, ``test_destroy`` destroys the stack."""
    began = time.monotonic()
    done = adopt_upstream_apps(suite)
    reporter.set_up("adopted", time.monotonic() - began, "kubectl create, flyte-apps import, pulumi up")
    return done


@pytest.fixture
def fault_proxy(control_plane: NodePlane) -> Iterator[FaultProxy]:
    """A proxy in front of the API server that a fault scenario tells where to cut (``faults/proxy.py``),
    stopped after the scenario."""
    proxy = FaultProxy(control_plane.pki, control_plane.apiserver_port)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()
