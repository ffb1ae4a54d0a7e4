"""One Kubernetes node on this machine: containerd with runc, CNI, kubelet, kube-scheduler, kube-proxy,
and (``start_data_plane``) Knative's activator and autoscaler as pods with Traefik as the ingress.

``Node`` takes what it needs of a control plane as arguments (``ControlPlaneAccess``: the API
server's URL, an admin kubeconfig, the CA's certificate and key) and runs in the network namespace
its caller is in, which must be one the run made (``network.check_isolated``). Everything it starts
is inside the run's cgroup subtree (``cgroups.py``) and the node's mount namespace (``mounts.py``);
``down`` stops it all by PID (containers through containerd first, then whatever is left in the
cgroups), removes the cgroups, the network objects it made, and fails naming anything left: a
process in the mount namespace, a cgroup, a new mount on the machine, or a kernel setting that moved
(``host.py``; read before, every few seconds while the node runs, and after).

``node.json`` in the work directory records what ``down`` needs, so another process can run it
(``python -m tests.e2e.node down --dir DIR``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import shlex
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tests.e2e import build
from tests.e2e.cluster import (
    REPO,
    Kubectl,
    Process,
    State,
    Supervisor,
    free_port,
    run_bounded,
    runs_recorded_command,
    stop_processes,
    wait_until,
)
from tests.e2e.node import configs, dataplane, host, images, mounts, network, pki
from tests.e2e.node.cgroups import CgroupError, CgroupTree
from tests.e2e.node.configs import NODE_NAME, Addresses, Layout

NODE_TOOLS: Final = (
    "kubernetes",
    "knative",
    "containerd",
    "runc",
    "cni-plugins",
    "nftables",
    "images",
    "coredns",
)
DATA_PLANE_TOOLS: Final = ("traefik",)
CGROUP_PREFIX: Final = "flyte-apps-e2e-"
NODE_CGROUP: Final = "node"
SELF: Final = "tests.e2e.node"
HOLDER_COMMAND: Final = "_holder"
HOLDER_READY_S: Final = 30.0
CONTAINERD_READY_S: Final = 60.0
NODE_READY_S: Final = 180.0
KUBE_PROXY_READY_S: Final = 60.0
DATA_PLANE_READY_S: Final = 240.0
TRAEFIK_READY_S: Final = 60.0
CTR_TIMEOUT_S: Final = 60.0
HTTP_TIMEOUT_S: Final = 5.0
DNS_READY_S: Final = 60.0
PUBLIC_PORT: Final = 80
PRIVATE_PORT: Final = 8081
VERBOSITY: Final = "--v=2"
WAIT_ROUND_S: Final = 30.0
POLL_S: Final = 1.0


class NodeError(Exception):
    """The node could not be started, or ``down`` found something left behind."""


@dataclass(frozen=True)
class ControlPlaneAccess:
    """What the node needs of a control plane."""

    server: str
    """The API server's URL as the node's processes dial it (they share its network namespace)."""
    kubeconfig: Path
    """An admin kubeconfig: the node applies Knative's data plane and waits on objects with it."""
    ca_cert: Path
    ca_key: Path
    """The CA the API server trusts for client certificates (``--client-ca-file``) and its key."""


@dataclass
class NodeRecord:
    """``node.json``: what ``down`` needs, from whichever process runs it."""

    workdir: str
    cgroup_root: str = ""
    cgroup_created: list[str] = field(default_factory=list)
    mount_namespace: str = ""
    processes: list[dict[str, Any]] = field(default_factory=list)
    settings_before: dict[str, str] = field(default_factory=dict)
    mounts_before: list[list[str]] = field(default_factory=list)
    network_namespace: str = ""
    ctr: str = ""
    nft: str = ""
    containerd_socket: str = ""

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(dataclasses.asdict(self), indent=2))

    @classmethod
    def load(cls, path: Path) -> NodeRecord:
        if not path.is_file():
            msg = f"no node recorded in {path.parent}"
            raise NodeError(msg)
        return cls(**json.loads(path.read_text()))

    @property
    def recorded(self) -> list[Process]:
        return [Process(**p) for p in self.processes]


def http_ok(url: str, host_header: str | None = None) -> bool:
    request = urllib.request.Request(url, headers={"Host": host_header} if host_header else {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=HTTP_TIMEOUT_S) as response:
        return int(response.status) == 200


def cgroup_join_argv(procs_files: Sequence[Path]) -> list[str]:
    """A prefix that puts the command's process into the cgroups of ``procs_files`` (before it starts:
    what it starts later is there too) and then runs it (``exec``, same PID)."""
    files = " ".join(shlex.quote(str(f)) for f in procs_files)
    return ["sh", "-c", f'echo $$ | tee {files} > /dev/null && exec "$@"', "sh"]


class Node:
    """Starts and stops one node in ``workdir`` (see the module's docstring)."""

    def __init__(
        self,
        workdir: Path,
        access: ControlPlaneAccess,
        tools: Mapping[str, build.Built] | None = None,
        *,
        addresses: Addresses | None = None,
        app_images: Sequence[str] = (),
        app_commands: Sequence[str] = (),
        queue_images: Sequence[str] = (),
        supervisor: Supervisor | None = None,
    ) -> None:
        self.layout = Layout(workdir.resolve())
        self.access = access
        self.tools = dict(tools) if tools is not None else build.locate(list(NODE_TOOLS))
        self.addresses = addresses or Addresses()
        self.app_images = [images.normalized(n) for n in app_images]
        self.app_commands = list(app_commands)
        self.queue_images = [images.normalized(n) for n in queue_images]
        self.supervisor = supervisor
        self.record = NodeRecord(str(self.layout.root))
        self.cgroups: CgroupTree | None = None
        self.watch: host.SettingsWatch | None = None
        self.images: images.NodeImages | None = None
        self.holder_pid = 0

    # -- helpers ------------------------------------------------------------------------------------

    def binary(self, tool: str, name: str) -> Path:
        return self.tools[tool].binary(name)

    @property
    def kubectl(self) -> Kubectl:
        return Kubectl(self.binary("kubernetes", "kubectl"), self.access.kubeconfig)

    def save(self) -> None:
        self.record.save(self.layout.record)

    def dead(self) -> str | None:
        assert self.supervisor is not None
        return self.supervisor.dead()

    def start(self, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> Process:
        """Start ``argv`` in the run's node cgroup and the node's mount namespace, recorded."""
        assert self.supervisor is not None and self.cgroups is not None
        prefix = cgroup_join_argv(self.cgroups.procs_files(NODE_CGROUP))
        if self.holder_pid:
            prefix += mounts.enter_argv(self.holder_pid, self.layout.root)
        process = self.supervisor.start(name, [*prefix, *argv], {**self.environment(), **(env or {})})
        self.record.processes.append(dataclasses.asdict(process))
        self.save()
        return process

    def environment(self) -> dict[str, str]:
        """What every node process runs with: a temporary directory of the node's, ``nft`` and runc
        on PATH (kube-proxy and CNI's portmap run ``nft``), no proxy, no caller's kubeconfig."""
        path = [
            str(self.binary("nftables", "nft").parent),
            str(self.binary("runc", "runc").parent),
            "/usr/sbin",
            "/usr/bin",
            "/sbin",
            "/bin",
        ]
        return {"TMPDIR": str(self.layout.tmp), "PATH": ":".join(path), "HOME": str(self.layout.tmp)}

    # -- up -----------------------------------------------------------------------------------------

    def up(self) -> None:
        """Start the node and wait until it is Ready, with the scheduler and kube-proxy running; on any
        failure stop everything it started and raise."""
        if self.layout.record.exists() and any(
            runs_recorded_command(p) for p in NodeRecord.load(self.layout.record).recorded
        ):
            msg = f"a node already runs from {self.layout.root} (`python -m {SELF} down` first)"
            raise NodeError(msg)
        network.check_isolated()
        mounts.check_workdir(self.layout.root)
        for directory in self.layout.directories():
            directory.mkdir(parents=True, exist_ok=True)
        self.record.settings_before = host.kernel_settings()
        self.record.mounts_before = [list(m) for m in mounts.mount_table()]
        self.record.network_namespace = mounts.namespace_id(os.getpid(), "net")
        self.record.ctr = str(self.binary("containerd", "ctr"))
        self.record.nft = str(self.binary("nftables", "nft"))
        self.record.containerd_socket = str(self.layout.containerd_socket)
        self.save()
        self.watch = host.SettingsWatch(self.record.settings_before)
        self.watch.start()
        if self.supervisor is None:
            state = State(str(self.layout.root), str(self.access.kubeconfig), self.access.server)
            state.save()
            self.supervisor = Supervisor(state, self.layout.logs)
        try:
            network.setup(self.addresses)
            self.write_pki()
            self.write_configs()
            self.make_cgroups()
            self.start_holder()
            self.start_containerd()
            self.import_images()
            self.start_dns()
            self.start_kubelet()
            self.start_scheduler()
            self.start_kube_proxy()
        except BaseException:
            with contextlib.suppress(NodeError):
                self.down()
            raise

    def write_pki(self) -> None:
        ca_cert = self.layout.pki / "ca.crt"
        ca_cert.write_bytes(self.access.ca_cert.read_bytes())
        for identity in (*pki.CLIENTS, pki.serving_identity(self.addresses.node_ip)):
            crt, key = pki.issue(self.layout.pki, identity, ca_cert=ca_cert, ca_key=self.access.ca_key)
            if identity.extensions == pki.CLIENT_USAGE:
                self.layout.kubeconfig(identity.name).write_text(
                    configs.kubeconfig(
                        server=self.access.server, ca_cert=ca_cert, cert=crt, key=key, user=identity.name
                    )
                )

    def write_configs(self) -> None:
        assert self.tools
        self.images = images.node_images(
            self.tools["images"],
            self.tools["knative"],
            app_names=self.app_images,
            app_commands=self.app_commands,
            queue_names=self.queue_images,
        )
        layout = self.layout
        layout.containerd_config.write_text(
            configs.containerd_config(
                layout,
                runc=self.binary("runc", "runc"),
                cni_bin=self.tools["cni-plugins"].bin,
                sandbox_image=self.images.pause.name,
            )
        )
        (layout.registry_config / "_default" / "hosts.toml").write_text(configs.registry_hosts())
        (layout.cni_config / "10-flyte-apps-e2e.conflist").write_text(
            configs.cni_config(layout, self.addresses)
        )
        layout.resolv_conf.write_text(configs.resolv_conf())

    def make_cgroups(self) -> None:
        self.cgroups = CgroupTree.plan(f"{CGROUP_PREFIX}{secrets.token_hex(4)}")
        self.record.cgroup_root = self.cgroups.root
        self.record.cgroup_created = self.cgroups.created
        self.save()
        self.cgroups.create(NODE_CGROUP)
        self.save()

    def start_holder(self) -> None:
        ready = self.layout.host / mounts.READY_FILE
        ready.unlink(missing_ok=True)
        shadows = [f"--shadow={key}={value}" for key, value in configs.PROTECTED_KERNEL_DEFAULTS.items()]
        process = self.start(
            "mount-namespace",
            [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "--",
                sys.executable,
                "-m",
                SELF,
                HOLDER_COMMAND,
                f"--dir={self.layout.root}",
                *shadows,
            ],
            {"PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"},
        )
        wait_until("the node's mount namespace", ready.exists, HOLDER_READY_S, self.dead)
        self.holder_pid = process.pid
        self.record.mount_namespace = ready.read_text().strip()
        if self.record.mount_namespace != mounts.namespace_id(process.pid):
            msg = "the mount namespace's holder is not the process that was started"
            raise NodeError(msg)
        self.save()

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = run_bounded(
            [*images.ctr_argv(Path(self.record.ctr), Path(self.record.containerd_socket)), *args],
            timeout=CTR_TIMEOUT_S,
        )
        if check and done.returncode != 0:
            msg = f"ctr {' '.join(args[:3])}: {done.stderr.strip() or done.stdout.strip()}"
            raise NodeError(msg)
        return done

    def start_containerd(self) -> None:
        self.start(
            "containerd",
            [str(self.binary("containerd", "containerd")), "--config", str(self.layout.containerd_config)],
        )
        wait_until(
            "containerd",
            lambda: self.ctr("version", check=False).returncode == 0,
            CONTAINERD_READY_S,
            self.dead,
        )

    def import_images(self) -> None:
        """Pack every image, import it, and check containerd has each name at the packed digest."""
        assert self.images is not None
        packer = self.binary("images", "pack")
        want = {}
        for image in self.images.all():
            archive = self.layout.images / f"{image.key}.tar"
            digest = images.pack(packer, image, archive)
            images.import_archive(Path(self.record.ctr), self.layout.containerd_socket, archive)
            want.update(dict.fromkeys(image.names, digest))
        have = images.imported(Path(self.record.ctr), self.layout.containerd_socket)
        wrong = [f"{n} ({have.get(n, 'missing')} != {d})" for n, d in want.items() if have.get(n) != d]
        if wrong:
            msg = f"containerd does not have these images as packed: {', '.join(wrong)}"
            raise NodeError(msg)

    def start_dns(self) -> None:
        """CoreDNS on the node's address, serving cluster.local from the API server: the
        ``clusterDNS`` of every pod."""
        self.kubectl.apply(dataplane.coredns_rbac())
        ready = free_port()
        self.layout.corefile.write_text(
            configs.corefile(
                self.addresses, kubeconfig_path=self.layout.kubeconfig(pki.COREDNS.name), ready_port=ready
            )
        )
        self.start("coredns", [str(self.binary("coredns", "coredns")), "-conf", str(self.layout.corefile)])
        wait_until(
            "CoreDNS /ready", lambda: http_ok(f"http://127.0.0.1:{ready}/ready"), DNS_READY_S, self.dead
        )

    def start_kubelet(self) -> None:
        layout = self.layout
        config = configs.kubelet_config(
            layout,
            self.addresses,
            cgroup_root=self.record.cgroup_root,
            healthz_port=free_port(),
            ca_cert=layout.pki / "ca.crt",
        )
        layout.kubelet_config.write_text(configs.yaml_text(config))
        self.start(
            "kubelet",
            [
                str(self.binary("kubernetes", "kubelet")),
                f"--config={layout.kubelet_config}",
                f"--kubeconfig={layout.kubeconfig(pki.KUBELET.name)}",
                f"--root-dir={layout.kubelet_root}",
                f"--cert-dir={layout.kubelet_root / 'pki'}",
                # Default /usr/libexec/kubernetes/kubelet-plugins/volume/exec: not the machine's.
                f"--volume-plugin-dir={layout.kubelet_root / 'volume-plugins'}",
                f"--node-ip={self.addresses.node_ip}",
                f"--hostname-override={NODE_NAME}",
                VERBOSITY,
            ],
        )
        wait_until(f"node {NODE_NAME} Ready", self.node_ready, NODE_READY_S, self.dead)

    def node_ready(self) -> bool:
        node = self.kubectl.get_json("node", NODE_NAME)
        conditions = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
        taints = [t["key"] for t in node.get("spec", {}).get("taints", [])]
        return conditions.get("Ready") == "True" and "node.kubernetes.io/not-ready" not in taints

    def start_scheduler(self) -> None:
        kubeconfig = self.layout.kubeconfig(pki.SCHEDULER.name)
        self.start(
            "kube-scheduler",
            [
                str(self.binary("kubernetes", "kube-scheduler")),
                f"--kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--secure-port=0",
                VERBOSITY,
            ],
        )

    def start_kube_proxy(self) -> None:
        healthz = free_port()
        config = configs.kube_proxy_config(
            self.layout, self.addresses, healthz_port=healthz, metrics_port=free_port()
        )
        self.layout.kube_proxy_config.write_text(configs.yaml_text(config))
        self.start(
            "kube-proxy",
            [
                str(self.binary("kubernetes", "kube-proxy")),
                f"--config={self.layout.kube_proxy_config}",
                VERBOSITY,
            ],
        )
        wait_until(
            "kube-proxy /healthz",
            lambda: http_ok(f"http://127.0.0.1:{healthz}/healthz"),
            KUBE_PROXY_READY_S,
            self.dead,
        )

    def advertise(self, resources: Mapping[str, str]) -> None:
        """Extended resources (``nvidia.com/gpu: "1"``) in the node's capacity, the way Kubernetes'
        documentation advertises them (a JSON patch of the Node's status): the scheduler places, and
        kubelet admits, pods that request them; no device reaches a container (there is none)."""
        operations = [
            {"op": "add", "path": f"/status/capacity/{name.replace('/', '~1')}", "value": value}
            for name, value in resources.items()
        ]
        self.kubectl(
            "patch", "node", NODE_NAME, "--subresource=status", "--type=json", "-p", json.dumps(operations)
        )

    # -- Knative's data plane -----------------------------------------------------------------------

    def start_data_plane(self) -> None:
        """The activator and autoscaler as pods, Traefik as the KIngress implementation, and
        Knative's ConfigMaps pointed at both. Needs Knative's CRDs and namespace (the control plane's
        Knative install) and, for Ready pods, the node up."""
        assert self.images is not None
        traefik = self.tools.get("traefik") or build.locate(list(DATA_PLANE_TOOLS))["traefik"]
        share = self.tools["knative"].share / "knative"
        kubectl = self.kubectl
        kubectl.apply(dataplane.traefik_rbac())
        kubectl.apply(
            dataplane.traefik_services(
                self.addresses.node_ip,
                [(dataplane.PUBLIC_SERVICE, PUBLIC_PORT), (dataplane.PRIVATE_SERVICE, PRIVATE_PORT)],
            )
        )
        kubectl.apply(
            dataplane.data_plane(
                share,
                images={
                    "activator": self.images.activator.name,
                    "autoscaler": self.images.autoscaler.name,
                    "queue": self.images.queue.name,
                },
            )
        )
        for name, patch in dataplane.config_patches(self.images.queue.name):
            kubectl(
                "patch",
                "configmap",
                name,
                "-n",
                dataplane.KNATIVE_NAMESPACE,
                "--type=merge",
                "-p",
                json.dumps(patch),
            )
        ping = free_port()
        args = configs.traefik_args(
            public_port=PUBLIC_PORT,
            private_port=PRIVATE_PORT,
            ping_port=ping,
            services=[
                (dataplane.KNATIVE_NAMESPACE, dataplane.PUBLIC_SERVICE),
                (dataplane.KNATIVE_NAMESPACE, dataplane.PRIVATE_SERVICE),
            ],
        )
        self.start(
            "traefik",
            [str(traefik.binary("traefik")), *args],
            {"KUBECONFIG": str(self.layout.kubeconfig(pki.TRAEFIK.name))},
        )
        wait_until(
            "Traefik /ping", lambda: http_ok(f"http://127.0.0.1:{ping}/ping"), TRAEFIK_READY_S, self.dead
        )
        wait_condition(
            kubectl,
            "Available",
            DATA_PLANE_READY_S,
            "deployment/activator",
            "deployment/autoscaler",
            "-n",
            dataplane.KNATIVE_NAMESPACE,
        )

    # -- checks and down ----------------------------------------------------------------------------

    def check_host(self) -> list[str]:
        """Kernel settings that moved since ``up`` began (as seen by the watch too)."""
        if self.watch is not None:
            self.watch.record(host.moved(self.record.settings_before, host.kernel_settings()))
            return list(self.watch.seen)
        return host.moved(self.record.settings_before, host.kernel_settings())

    def down(self) -> None:
        """Stop everything, remove what the node made, and raise NodeError naming anything left."""
        record = NodeRecord.load(self.layout.record) if self.layout.record.exists() else self.record
        problems = stop_node(record)
        if self.watch is not None:
            for change in self.watch.stop():
                if f"kernel setting moved: {change}" not in problems:
                    problems.append(f"kernel setting moved: {change}")
        record.processes = [dataclasses.asdict(p) for p in record.recorded if runs_recorded_command(p)]
        record.save(self.layout.record)
        if problems:
            raise NodeError("the node left things behind:\n  " + "\n  ".join(problems))


def stop_node(record: NodeRecord) -> list[str]:
    """``down`` from a record: stop the node's processes (Traefik, kube-proxy, the scheduler and
    kubelet first, so nothing restarts a container), every container through containerd, then
    containerd, the mount namespace's holder and whatever is left in the run's cgroups; remove the
    cgroups and the network objects; check nothing is left and nothing on the machine moved."""
    problems: list[str] = []
    recorded = record.recorded
    runtime = {"containerd", "mount-namespace"}
    stop_processes([p for p in recorded if p.name not in runtime])
    if record.containerd_socket and Path(record.containerd_socket).exists():
        problems += stop_containers(record)
    stop_processes([p for p in recorded if p.name == "containerd"])
    stop_processes([p for p in recorded if p.name == "mount-namespace"])
    if record.cgroup_root:
        tree = CgroupTree(record.cgroup_root, list(record.cgroup_created))
        try:
            tree.kill()
        except CgroupError as exc:
            problems.append(str(exc))
        problems += [f"cgroup not removed: {left}" for left in tree.remove()]
        problems += [f"cgroup left: {left}" for left in tree.leftovers()]
    if record.mount_namespace:
        left = mounts.processes_in(record.mount_namespace)
        if left:
            problems.append(
                f"processes {left} are still in the node's mount namespace {record.mount_namespace}"
            )
    here = mounts.namespace_id(os.getpid(), "net")
    if record.network_namespace and here != record.network_namespace:
        problems.append(
            f"down ran in network namespace {here}, not the node's {record.network_namespace}: its veth "
            "pair, bridge and nftables tables are left to that namespace"
        )
    else:
        problems += network.teardown(Path(record.nft) if record.nft else None)
    if record.mounts_before:
        problems += [
            f"mount left on the machine: {m}"
            for m in mounts.new_mounts(record.mounts_before, mounts.mount_table())
        ]
    if record.settings_before:
        problems += [
            f"kernel setting moved: {c}" for c in host.moved(record.settings_before, host.kernel_settings())
        ]
    return problems


def stop_containers(record: NodeRecord) -> list[str]:
    """Kill and delete every task and container containerd runs for the CRI (namespace k8s.io)."""
    base = images.ctr_argv(Path(record.ctr), Path(record.containerd_socket))

    def ctr(*args: str) -> subprocess.CompletedProcess[str]:
        return run_bounded([*base, *args], timeout=CTR_TIMEOUT_S)

    problems = []
    listed = ctr("tasks", "list", "--quiet")
    if listed.returncode != 0:
        return [f"ctr tasks list: {listed.stderr.strip()}"]
    tasks = listed.stdout.split()
    for task in tasks:
        ctr("tasks", "kill", "--signal", "SIGKILL", task)
    for task in tasks:
        done = ctr("tasks", "delete", "--force", task)
        if done.returncode != 0 and "not found" not in done.stderr:
            problems.append(f"ctr tasks delete {task}: {done.stderr.strip()}")
    containers = ctr("containers", "list", "--quiet").stdout.split()
    for container in containers:
        done = ctr("containers", "delete", container)
        if done.returncode != 0 and "not found" not in done.stderr:
            problems.append(f"ctr containers delete {container}: {done.stderr.strip()}")
    left = ctr("tasks", "list", "--quiet").stdout.split()
    if left:
        problems.append(f"containerd still runs tasks {left}")
    return problems


def wait_condition(kubectl: Kubectl, condition: str, timeout: float, *objects: str) -> None:
    """``kubectl wait --for=condition=...`` in rounds shorter than the bound on one kubectl call
    (the cluster package's 60 s), until ``timeout``; NodeError then, with kubectl's last word."""
    deadline = time.monotonic() + timeout
    while True:
        step = max(1.0, min(WAIT_ROUND_S, deadline - time.monotonic()))
        done = kubectl(
            "wait", f"--for=condition={condition}", *objects, f"--timeout={step:.0f}s", check=False
        )
        if done.returncode == 0:
            return
        if time.monotonic() >= deadline:
            msg = f"{' '.join(objects)} not {condition} after {timeout:.0f} s: {done.stderr.strip()}"
            raise NodeError(msg)
        time.sleep(POLL_S)
