"""One control plane in a work directory: etcd, kube-apiserver and kube-controller-manager on
127.0.0.1, then Knative Serving (``knative.py``), started and stopped as one.

``up`` runs its parts in order and stops whatever it started when any of them fails; ``down`` stops
every process recorded in ``DIR/state.json``, by PID (``processes.py``), whether this object started
them or another process did (`make e2e-cluster-down`).

A node (a container runtime, a kubelet, a CNI plugin) is one more part: a module beside
``knative.py`` that takes this plane's ``Kubectl`` and ``Supervisor`` (so ``down`` stops its
processes too) and is added to ``parts``, after the controller manager.
"""

from __future__ import annotations

import contextlib
import subprocess
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, TypeVar

from tests.e2e import build
from tests.e2e.cluster.knative import Knative, reset_configmaps
from tests.e2e.cluster.kubectl import Kubectl
from tests.e2e.cluster.pki import ADMIN, CONTROLLER_MANAGER, SERVICE_CIDR, write_kubeconfig, write_pki
from tests.e2e.cluster.processes import (
    LOOPBACK,
    STATE_FILE,
    ClusterError,
    Process,
    State,
    Supervisor,
    free_port,
    runs_recorded_command,
    signals_deferred,
    wait_until,
)

KUBECONFIG_FILE: Final = "kubeconfig"
CONTROLLER_MANAGER_KUBECONFIG: Final = "controller-manager.kubeconfig"
TOOLS: Final = ("etcd", "kubernetes", "knative")
CONTROLLERS: Final = "namespace,garbagecollector,serviceaccount,serviceaccount-token,deployment,replicaset"
"""What a control plane without a node needs: namespaces deleted, owned objects collected, default
service accounts and their tokens, Knative's Deployments turned into ReplicaSets and Pods."""
ETCD_READY_S: Final = 60.0
APISERVER_READY_S: Final = 120.0
CONTROLLER_MANAGER_READY_S: Final = 60.0
HTTP_TIMEOUT_S: Final = 5.0


def http_get(url: str) -> bytes:
    """``url``'s body, never through a proxy (the caller's would see loopback traffic)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=HTTP_TIMEOUT_S) as response:
        return bytes(response.read())


class ControlPlane:
    """Starts and stops one control plane in ``workdir``."""

    def __init__(self, workdir: Path, tools: Mapping[str, build.Built] | None = None) -> None:
        self.workdir = workdir.resolve()
        self.tools = dict(build.locate(list(TOOLS)) if tools is None else tools)
        self.logs = self.workdir / "logs"
        self.pki = self.workdir / "pki"
        self.apiserver_port = 0
        self.state: State | None = None
        self.supervisor: Supervisor | None = None

    # -- paths and commands -------------------------------------------------------------------------

    def binary(self, tool: str, name: str) -> str:
        return str(self.tools[tool].binary(name))

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / KUBECONFIG_FILE

    @property
    def client(self) -> Kubectl:
        """The built kubectl, as this plane's admin."""
        return Kubectl(Path(self.binary("kubernetes", "kubectl")), self.kubeconfig)

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.client(*args, stdin=stdin, check=check)

    def get_json(self, *args: str) -> Any:
        return self.client.get_json(*args)

    def start(self, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> Process:
        """Start ``argv`` in a session of its own (``down`` signals its group), logging to logs/<name>.log."""
        assert self.supervisor is not None, "start() before up()"
        return self.supervisor.start(name, argv, env)

    def dead(self) -> str | None:
        """The first recorded process that is no longer running, with its log's last lines."""
        assert self.supervisor is not None, "dead() before up()"
        return self.supervisor.dead()

    # -- up and down --------------------------------------------------------------------------------

    def parts(self) -> tuple[Callable[[], None], ...]:
        """What ``up`` starts, in order; each waits (bounded) until its part is ready."""
        return (
            self.write_pki,
            self.start_etcd_and_apiserver,
            self.start_controller_manager,
            self.install_knative,
        )

    def up(self) -> State:
        if (self.workdir / STATE_FILE).exists() and any(
            runs_recorded_command(p) for p in State.load(self.workdir).processes
        ):
            raise ClusterError(
                f"a control plane already runs from {self.workdir} (`python -m tests.e2e.cluster down` first)"
            )
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        self.apiserver_port = free_port()
        self.state = State(
            str(self.workdir), str(self.kubeconfig), f"https://{LOOPBACK}:{self.apiserver_port}"
        )
        self.state.save()
        self.supervisor = Supervisor(self.state, self.logs)
        try:
            for part in self.parts():
                part()
        except BaseException:
            with signals_deferred():
                self.down()
            raise
        return self.state

    def down(self) -> None:
        state = self.state or State.load(self.workdir)
        (self.supervisor or Supervisor(state, self.logs)).stop()

    # -- the parts ----------------------------------------------------------------------------------

    def write_pki(self) -> None:
        """The keys and certificates, and the admin's and the controller manager's kubeconfigs."""
        assert self.state is not None
        write_pki(self.pki)
        write_kubeconfig(self.kubeconfig, server=self.state.apiserver, pki=self.pki, user=ADMIN)
        write_kubeconfig(
            self.workdir / CONTROLLER_MANAGER_KUBECONFIG,
            server=self.state.apiserver,
            pki=self.pki,
            user=CONTROLLER_MANAGER,
        )

    def start_etcd_and_apiserver(self) -> None:
        client, peer = free_port(), free_port()
        etcd = f"http://{LOOPBACK}:{client}"
        self.start(
            "etcd",
            [
                self.binary("etcd", "etcd"),
                "--data-dir",
                str(self.workdir / "etcd"),
                "--name",
                "e2e",
                "--listen-client-urls",
                etcd,
                "--advertise-client-urls",
                etcd,
                "--listen-peer-urls",
                f"http://{LOOPBACK}:{peer}",
                "--initial-advertise-peer-urls",
                f"http://{LOOPBACK}:{peer}",
                "--initial-cluster",
                f"e2e=http://{LOOPBACK}:{peer}",
                "--unsafe-no-fsync",
                "--log-level",
                "warn",
            ],
        )
        wait_until("etcd", lambda: b'"health":"true"' in http_get(f"{etcd}/health"), ETCD_READY_S, self.dead)
        self.start(
            "kube-apiserver",
            [
                self.binary("kubernetes", "kube-apiserver"),
                f"--etcd-servers={etcd}",
                f"--secure-port={self.apiserver_port}",
                f"--bind-address={LOOPBACK}",
                f"--advertise-address={LOOPBACK}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--authorization-mode=Node,RBAC",
                "--endpoint-reconciler-type=none",
                "--allow-privileged=true",
                f"--service-account-issuer=https://{LOOPBACK}:{self.apiserver_port}",
                f"--service-account-key-file={self.pki / 'sa.pub'}",
                f"--service-account-signing-key-file={self.pki / 'sa.key'}",
                f"--tls-cert-file={self.pki / 'apiserver.crt'}",
                f"--tls-private-key-file={self.pki / 'apiserver.key'}",
                f"--client-ca-file={self.pki / 'ca.crt'}",
                f"--cert-dir={self.workdir / 'certs'}",
            ],
        )
        wait_until(
            "kube-apiserver /readyz",
            lambda: self.kubectl("get", "--raw", "/readyz", check=False).stdout.strip() == "ok",
            APISERVER_READY_S,
            self.dead,
        )

    def start_controller_manager(self) -> None:
        self.start(
            "kube-controller-manager",
            [
                self.binary("kubernetes", "kube-controller-manager"),
                f"--kubeconfig={self.workdir / CONTROLLER_MANAGER_KUBECONFIG}",
                f"--controllers={CONTROLLERS}",
                f"--service-account-private-key-file={self.pki / 'sa.key'}",
                f"--root-ca-file={self.pki / 'ca.crt'}",
                "--leader-elect=false",
                f"--bind-address={LOOPBACK}",
                "--secure-port=0",
                "--use-service-account-credentials=false",
            ],
        )
        wait_until(
            "kube-controller-manager (the default namespace's service account)",
            lambda: (
                self.kubectl("get", "serviceaccount", "default", "-n", "default", check=False).returncode == 0
            ),
            CONTROLLER_MANAGER_READY_S,
            self.dead,
        )

    def reset_knative_config(self) -> None:
        """Knative's ConfigMaps as the install wrote them: a Knative no stack has patched yet."""
        reset_configmaps(self.client, self.tools["knative"].share / "knative")

    def install_knative(self) -> None:
        assert self.supervisor is not None
        Knative(
            kubectl=self.client,
            supervisor=self.supervisor,
            share=self.tools["knative"].share / "knative",
            binary=lambda name: self.binary("knative", name),
            workdir=self.workdir,
            apiserver_port=self.apiserver_port,
        ).install()


P = TypeVar("P", bound=ControlPlane)


@contextlib.contextmanager
def running(workdir: Path, tools: Mapping[str, build.Built] | None = None) -> Iterator[ControlPlane]:
    """``with running(dir) as plane:`` a control plane for the block, stopped however it ends (a second
    Ctrl-C while it stops included)."""
    with operating(ControlPlane(workdir, tools)) as plane:
        yield plane


@contextlib.contextmanager
def operating(plane: P) -> Iterator[P]:
    """``plane`` (a ``ControlPlane``, or one with a node) up for the block, down however it ends (a
    second Ctrl-C while it stops included)."""
    plane.up()
    try:
        yield plane
    finally:
        with signals_deferred():
            plane.down()
