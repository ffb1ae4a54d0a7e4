"""A real Kubernetes control plane with Knative Serving on this machine, without Docker.

etcd, kube-apiserver and kube-controller-manager (built by ``make e2e-tools``) on 127.0.0.1, then
Knative Serving's CRDs, ConfigMaps and webhook configurations from its modules, and its controller,
webhook and autoscaler. Nothing from Knative's ``config/core/deployments/`` is applied: the webhook
is reached through an ``ExternalName`` Service ``webhook`` -> ``127.0.0.1`` with the webhook
configurations' service port set to ours (the API server refuses loopback Endpoints, but dials an
ExternalName Service's name at the configuration's port; TLS is still checked against
``webhook.knative-serving.svc``, which Knative's own certificate names).

Every Knative process binds all interfaces, two of them on a fixed ``:8080`` (the controller's health
probes, the autoscaler's stats server), so each runs in a network namespace of its own with only
``lo`` up; a relay joins its loopback to the API server's (and the API server to the webhook) through
unix sockets in the work directory. Nothing of Knative listens outside those namespaces.

    python -m tests.e2e.cluster up [--dir DIR]     # start, wait until ready, print the kubeconfig
    python -m tests.e2e.cluster env [--dir DIR]    # the environment a caller needs (export lines)
    python -m tests.e2e.cluster down [--dir DIR]   # stop every process `up` started, by PID

``up`` stops whatever it started when any step fails. Processes are recorded with their PIDs in
``DIR/state.json``; ``down`` signals only those PIDs, and only while each still runs the command it
recorded. Without a kubelet no pod runs; see docs/verification.md for what that leaves out.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from tests.e2e import build

REPO: Final = Path(__file__).resolve().parents[2]
LOOPBACK: Final = "127.0.0.1"
SELF: Final = "tests.e2e.cluster"
DEFAULT_DIR: Final = Path(tempfile.gettempdir()) / "flyte-apps-e2e-cluster"
STATE_FILE: Final = "state.json"
KUBECONFIG_FILE: Final = "kubeconfig"
KNATIVE_NAMESPACE: Final = "knative-serving"
WEBHOOK_SERVICE: Final = "webhook"
WEBHOOK_PORT_IN_NAMESPACE: Final = 8443
SERVICE_CIDR: Final = "10.0.0.0/24"
APISERVER_NAMES: Final = (
    ("IP", LOOPBACK),
    ("IP", "10.0.0.1"),  # the first address of SERVICE_CIDR: the `kubernetes` Service
    ("DNS", "localhost"),
    ("DNS", "kubernetes"),
    ("DNS", "kubernetes.default"),
    ("DNS", "kubernetes.default.svc"),
)
AUTOSCALER_POD_IP: Final = "192.0.2.10"
"""The autoscaler writes its own Endpoints with this address (the API server refuses loopback); with
one autoscaler nothing ever dials it (a TEST-NET-1 address, RFC 5737)."""
QUEUE_IMAGE: Final = "registry.example.com/knative/queue-proxy:v0.48.2"
"""config-deployment needs a queue-proxy image; no pod runs here, so any name does."""
REGISTRIES_SKIPPING_TAG_RESOLVING: Final = (
    "kind.local,ko.local,dev.local,ghcr.io,docker.io,index.docker.io,registry.example.com,example.com,"
    "nvcr.io,quay.io"
)
"""Knative resolves image tags to digests over the network unless the registry is listed here."""
PROXY_VARIABLES: Final = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")
CONTROLLERS: Final = "namespace,garbagecollector,serviceaccount,serviceaccount-token,deployment,replicaset"

ETCD_READY_S: Final = 60.0
APISERVER_READY_S: Final = 120.0
CONTROLLER_MANAGER_READY_S: Final = 60.0
CRDS_ESTABLISHED_S: Final = 60.0
WEBHOOK_READY_S: Final = 90.0
KNATIVE_READY_S: Final = 120.0
STOP_GRACE_S: Final = 15.0
KUBECTL_TIMEOUT_S: Final = 60.0
POLL_S: Final = 0.5
SMOKE_NAMESPACE: Final = "flyte-apps-e2e-smoke"


class ClusterError(Exception):
    """The control plane could not be started, or is not running."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def clean_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without proxies (a proxy would see loopback traffic) or a caller's cluster."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k.upper() not in PROXY_VARIABLES and k not in ("KUBECONFIG", "PULUMI_HOME")
    }
    env.update(extra or {})
    return env


def wait_until(what: str, check: Callable[[], bool], timeout: float, alive: Callable[[], str | None]) -> None:
    """Poll ``check`` until it holds; ClusterError after ``timeout`` or if ``alive`` names a dead
    process."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dead = alive()
        if dead:
            raise ClusterError(f"{dead} exited while waiting for {what}")
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(POLL_S)
    raise ClusterError(f"{what}: not ready after {timeout:.0f} s")


@dataclass
class Process:
    name: str
    pid: int
    argv: list[str]
    log: str
    started: int = 0
    """The process's start time (clock ticks since boot, /proc/<pid>/stat): a PID reused by another
    process after this one exited has another."""


@dataclass
class State:
    """What ``up`` started and where its files are (``DIR/state.json``)."""

    workdir: str
    kubeconfig: str
    apiserver: str
    processes: list[Process] = field(default_factory=list)

    def save(self) -> None:
        data = {**self.__dict__, "processes": [p.__dict__ for p in self.processes]}
        Path(self.workdir, STATE_FILE).write_text(json.dumps(data, indent=2))

    @classmethod
    def load(cls, workdir: Path) -> State:
        path = workdir / STATE_FILE
        if not path.is_file():
            raise ClusterError(
                f"no control plane recorded in {workdir} "
                f"(run `python -m tests.e2e.cluster up --dir {workdir}`)"
            )
        data = json.loads(path.read_text())
        data["processes"] = [Process(**p) for p in data["processes"]]
        return cls(**data)


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), or None when no such process runs."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)"; comm may hold spaces
    return None if fields[0] == "Z" else int(fields[19])


def runs_recorded_command(process: Process) -> bool:
    """Whether the recorded process still runs (not another one that got its PID since)."""
    return start_time(process.pid) == process.started


def stop_processes(processes: Sequence[Process]) -> None:
    """SIGTERM every recorded process (last started first), then SIGKILL what outlives the grace period."""
    live = [p for p in reversed(processes) if runs_recorded_command(p)]
    for p in live:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for p in live:
        while runs_recorded_command(p) and time.monotonic() < deadline:
            reap(p.pid)
            time.sleep(0.1)
        if runs_recorded_command(p):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
        reap(p.pid)


def reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def network_namespace_prefix() -> list[str]:
    """``unshare`` for a network namespace of its own: as root directly, else inside a user namespace."""
    candidates = [["unshare", "--net"], ["unshare", "--user", "--map-root-user", "--net"]]
    errors = []
    for prefix in candidates:
        probe = subprocess.run([*prefix, "true"], capture_output=True, text=True, timeout=30, check=False)
        if probe.returncode == 0:
            return prefix
        errors.append(f"`{' '.join(prefix)}`: {probe.stderr.strip() or probe.returncode}")
    raise ClusterError(
        "Knative's processes need network namespaces of their own (two of them bind :8080 on every "
        "interface), and none can be made here: " + "; ".join(errors)
    )


class ControlPlane:
    """Starts and stops one control plane in ``workdir``."""

    def __init__(self, workdir: Path, tools: Mapping[str, build.Built] | None = None) -> None:
        self.workdir = workdir.resolve()
        self.tools = dict(build.locate(["etcd", "kubernetes", "knative"]) if tools is None else tools)
        self.logs = self.workdir / "logs"
        self.apiserver_port = 0
        self.state: State | None = None
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # -- paths and commands -------------------------------------------------------------------------

    def binary(self, tool: str, name: str) -> str:
        return str(self.tools[tool].binary(name))

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / KUBECONFIG_FILE

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        argv = [
            self.binary("kubernetes", "kubectl"),
            f"--kubeconfig={self.kubeconfig}",
            "--request-timeout=30s",
            *args,
        ]
        done = subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            text=True,
            env=clean_environment(),
            timeout=KUBECTL_TIMEOUT_S,
        )
        if check and done.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args[:3])}: {done.stderr.strip() or done.stdout.strip()}")
        return done

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def start(self, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> Process:
        """Start ``argv`` in a session of its own (``down`` signals its group), logging to logs/<name>.log."""
        assert self.state is not None
        log = self.logs / f"{name}.log"
        with log.open("ab") as out:
            child = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=clean_environment({"PYTHONPATH": str(REPO), **(env or {})}),
                cwd=self.workdir,
                start_new_session=True,
            )
        self._children[child.pid] = child
        process = Process(name, child.pid, argv, str(log), start_time(child.pid) or 0)
        self.state.processes.append(process)
        self.state.save()
        return process

    def dead(self) -> str | None:
        """The first recorded process that is no longer running, with its log's last lines."""
        assert self.state is not None
        for p in self.state.processes:
            child = self._children.get(p.pid)
            if (child is not None and child.poll() is not None) or (
                child is None and not runs_recorded_command(p)
            ):
                tail = (
                    Path(p.log).read_text(errors="replace").splitlines()[-8:] if Path(p.log).exists() else []
                )
                return f"{p.name} (pid {p.pid})" + ("; its log ends:\n  " + "\n  ".join(tail) if tail else "")
        return None

    # -- up and down --------------------------------------------------------------------------------

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
        try:
            self.write_pki()
            self.start_etcd_and_apiserver()
            self.start_controller_manager()
            self.install_knative()
        except BaseException:
            self.down()
            raise
        return self.state

    def down(self) -> None:
        state = self.state or State.load(self.workdir)
        stop_processes(state.processes)
        for child in self._children.values():
            with contextlib.suppress(Exception):
                child.wait(timeout=1)
        state.processes = [p for p in state.processes if runs_recorded_command(p)]
        state.save()

    # -- the steps ----------------------------------------------------------------------------------

    def openssl(self, *args: str) -> None:
        subprocess.run(
            ["openssl", *args], cwd=self.workdir / "pki", capture_output=True, check=True, timeout=60
        )

    def write_pki(self) -> None:
        """A CA, the API server's serving certificate, client certificates, the service-account key."""
        pki = self.workdir / "pki"
        pki.mkdir(exist_ok=True)
        self.openssl("genrsa", "-out", "sa.key", "2048")
        self.openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        self.openssl(
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=flyte-apps-e2e-ca",
        )
        names = ",".join(f"{kind}:{name}" for kind, name in APISERVER_NAMES)
        for name, subject, usage in (
            ("apiserver", "/CN=kube-apiserver", f"subjectAltName={names}\nextendedKeyUsage=serverAuth\n"),
            ("admin", "/O=system:masters/CN=flyte-apps-e2e-admin", "extendedKeyUsage=clientAuth\n"),
            (
                "controller-manager",
                "/O=system:masters/CN=system:kube-controller-manager",
                "extendedKeyUsage=clientAuth\n",
            ),
        ):
            (pki / f"{name}.ext").write_text(usage)
            self.openssl(
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                f"{name}.key",
                "-out",
                f"{name}.csr",
                "-subj",
                subject,
            )
            self.openssl(
                "x509",
                "-req",
                "-in",
                f"{name}.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                f"{name}.crt",
                "-days",
                "2",
                "-extfile",
                f"{name}.ext",
            )
        self.write_kubeconfig(self.kubeconfig, "admin")
        self.write_kubeconfig(self.workdir / "controller-manager.kubeconfig", "controller-manager")

    def write_kubeconfig(self, path: Path, user: str) -> None:
        pki = self.workdir / "pki"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {
                        "server": self.state.apiserver if self.state else "",
                        "certificate-authority": str(pki / "ca.crt"),
                    },
                },
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate": str(pki / f"{user}.crt"),
                        "client-key": str(pki / f"{user}.key"),
                    },
                },
            ],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
            "current-context": "e2e",
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))

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
        pki = self.workdir / "pki"
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
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
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
        pki = self.workdir / "pki"
        self.start(
            "kube-controller-manager",
            [
                self.binary("kubernetes", "kube-controller-manager"),
                f"--kubeconfig={self.workdir / 'controller-manager.kubeconfig'}",
                f"--controllers={CONTROLLERS}",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
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

    def knative_documents(self, relative: str) -> list[dict[str, Any]]:
        path = self.tools["knative"].share / "knative" / relative
        return [d for d in yaml.safe_load_all(path.read_text()) if d]

    def apply(self, documents: Sequence[Mapping[str, Any]]) -> None:
        self.kubectl(
            "apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(documents, sort_keys=False)
        )

    def install_knative(self) -> None:
        share = self.tools["knative"].share / "knative"
        self.apply(self.knative_documents("namespace.yaml"))
        crds = [
            d
            for f in sorted((share / "crds").glob("*.yaml"))
            for d in self.knative_documents(f"crds/{f.name}")
        ]
        self.apply(crds)
        self.kubectl(
            "wait",
            "--for=condition=Established",
            "crd",
            *[d["metadata"]["name"] for d in crds],
            f"--timeout={CRDS_ESTABLISHED_S:.0f}s",
        )
        configmaps = [
            d
            for f in sorted((share / "configmaps").glob("*.yaml"))
            for d in self.knative_documents(f"configmaps/{f.name}")
        ]
        for document in configmaps:
            if document["metadata"]["name"] == "config-deployment":
                document["data"]["queue-sidecar-image"] = QUEUE_IMAGE
                document["data"]["registries-skipping-tag-resolving"] = REGISTRIES_SKIPPING_TAG_RESOLVING
        # Before the webhook configurations: their config validation refuses writes until the webhook runs.
        self.apply(configmaps)
        self.apply(self.knative_documents("webhooks/secret.yaml"))

        webhook_port = free_port()
        self.apply(
            [
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": WEBHOOK_SERVICE, "namespace": KNATIVE_NAMESPACE},
                    "spec": {
                        "type": "ExternalName",
                        "externalName": LOOPBACK,
                        "ports": [{"name": "https-webhook", "port": webhook_port}],
                    },
                }
            ]
        )
        configurations = []
        for name in ("defaulting", "resource-validation", "configmap-validation"):
            for document in self.knative_documents(f"webhooks/{name}.yaml"):
                for hook in document["webhooks"]:
                    hook["clientConfig"]["service"]["port"] = webhook_port
                configurations.append(document)
        self.apply(configurations)

        api_socket = self.workdir / "api.sock"
        webhook_socket = self.workdir / "webhook.sock"
        api = f"tcp:{LOOPBACK}:{self.apiserver_port}"
        self.start(
            "relay",
            [
                sys.executable,
                "-m",
                SELF,
                "_relay",
                f"unix:{api_socket}={api}",
                f"tcp:{LOOPBACK}:{webhook_port}=unix:{webhook_socket}",
            ],
        )
        wait_until("the relay", lambda: api_socket.exists(), 30, self.dead)
        netns = network_namespace_prefix()
        knative_env = {
            "SYSTEM_NAMESPACE": KNATIVE_NAMESPACE,
            "CONFIG_LOGGING_NAME": "config-logging",
            "CONFIG_OBSERVABILITY_NAME": "config-observability",
            "KUBECONFIG": str(self.kubeconfig),
        }
        into_namespace = [
            *netns,
            sys.executable,
            "-m",
            SELF,
            "_in-netns",
            f"--relay=tcp:{LOOPBACK}:{self.apiserver_port}=unix:{api_socket}",
        ]
        self.start(
            "knative-webhook",
            [
                *into_namespace,
                f"--relay=unix:{webhook_socket}=tcp:{LOOPBACK}:{WEBHOOK_PORT_IN_NAMESPACE}",
                "--",
                self.binary("knative", "webhook"),
            ],
            {
                **knative_env,
                "POD_NAME": "webhook-e2e",
                "WEBHOOK_NAME": WEBHOOK_SERVICE,
                "WEBHOOK_PORT": str(WEBHOOK_PORT_IN_NAMESPACE),
            },
        )
        wait_until(
            "Knative's webhook (the CA bundle in its configurations)",
            self.webhooks_have_ca_bundle,
            WEBHOOK_READY_S,
            self.dead,
        )
        self.start(
            "knative-controller",
            [*into_namespace, "--", self.binary("knative", "controller")],
            {**knative_env, "POD_NAME": "controller-e2e"},
        )
        self.start(
            "knative-autoscaler",
            [*into_namespace, "--", self.binary("knative", "autoscaler")],
            {**knative_env, "POD_NAME": "autoscaler-e2e", "POD_IP": AUTOSCALER_POD_IP},
        )
        self.smoke_test_knative()

    def webhooks_have_ca_bundle(self) -> bool:
        names = {
            "webhook.serving.knative.dev",
            "validation.webhook.serving.knative.dev",
            "config.webhook.serving.knative.dev",
        }
        found = {}
        for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
            for item in self.get_json(kind)["items"]:
                found[item["metadata"]["name"]] = all(
                    h["clientConfig"].get("caBundle") for h in item["webhooks"]
                )
        return all(found.get(n) for n in names)

    def smoke_test_knative(self) -> None:
        """A KService in a namespace of its own: defaulted by the webhook, reconciled by the controller
        into a Revision and a Deployment, its PodAutoscaler given conditions by the autoscaler."""
        self.kubectl("create", "namespace", SMOKE_NAMESPACE)
        service = {
            "apiVersion": "serving.knative.dev/v1",
            "kind": "Service",
            "metadata": {"name": "smoke", "namespace": SMOKE_NAMESPACE},
            "spec": {"template": {"spec": {"containers": [{"image": "registry.example.com/smoke:1"}]}}},
        }

        def created() -> bool:
            return self.kubectl("create", "-f", "-", stdin=json.dumps(service), check=False).returncode == 0

        wait_until("Knative's webhook admitting a KService", created, KNATIVE_READY_S, self.dead)

        def reconciled() -> bool:
            revision = self.get_json("revisions", "-n", SMOKE_NAMESPACE, "smoke-00001")
            self.get_json("deployments", "-n", SMOKE_NAMESPACE, "smoke-00001-deployment")
            autoscaler = self.get_json("podautoscalers", "-n", SMOKE_NAMESPACE, "smoke-00001")
            defaulted = revision["spec"].get("timeoutSeconds") is not None
            return defaulted and bool(autoscaler.get("status", {}).get("conditions"))

        wait_until(
            "Knative's controller and autoscaler reconciling a KService",
            reconciled,
            KNATIVE_READY_S,
            self.dead,
        )
        self.kubectl(
            "delete", "namespace", SMOKE_NAMESPACE, "--wait=true", f"--timeout={KNATIVE_READY_S:.0f}s"
        )


def http_get(url: str) -> bytes:
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as response:
        return bytes(response.read())


# -- relays: unix socket <-> TCP on loopback, across network namespaces -------------------------------


def parse_endpoint(text: str) -> tuple[str, str, int]:
    kind, _, rest = text.partition(":")
    if kind == "unix":
        return "unix", rest, 0
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        return "tcp", host, int(port)
    raise ValueError(f"not an endpoint: {text!r} (unix:PATH or tcp:HOST:PORT)")


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def serve_relay(listen: str, target: str) -> asyncio.AbstractServer:
    kind, where, port = parse_endpoint(target)

    async def connect() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if kind == "unix":
            return await asyncio.open_unix_connection(where)
        return await asyncio.open_connection(where, port)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await connect()
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    lkind, lwhere, lport = parse_endpoint(listen)
    if lkind == "unix":
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lwhere)
        return await asyncio.start_unix_server(handle, lwhere)
    return await asyncio.start_server(handle, lwhere, lport)


async def run_relays(pairs: Sequence[str], ready: threading.Event | None = None) -> None:
    servers = []
    for pair in pairs:
        listen, _, target = pair.partition("=")
        servers.append(await serve_relay(listen, target))
    if ready is not None:
        ready.set()
    await asyncio.gather(*(s.serve_forever() for s in servers))


def relay_main(pairs: Sequence[str]) -> int:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run_relays(pairs))
    return 0


def in_netns_main(relays: Sequence[str], command: Sequence[str]) -> int:
    """Inside a new network namespace: bring ``lo`` up, start the relays, run ``command`` until it
    exits or this process is told to stop (then stop it too)."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=30)
    ready = threading.Event()
    threading.Thread(target=lambda: asyncio.run(run_relays(relays, ready)), daemon=True).start()
    if not ready.wait(30):
        print("relays did not start", file=sys.stderr)
        return 1
    child = subprocess.Popen(list(command))

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    try:
        return child.wait()
    finally:
        if child.poll() is None:
            child.kill()


@contextlib.contextmanager
def running(workdir: Path, tools: Mapping[str, build.Built] | None = None) -> Iterator[ControlPlane]:
    """``with running(dir) as plane:`` a control plane for the block, stopped however it ends."""
    plane = ControlPlane(workdir, tools)
    plane.up()
    try:
        yield plane
    finally:
        plane.down()


def print_environment(state: State) -> None:
    print(f"export KUBECONFIG={state.kubeconfig}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("up", "start and wait until ready"),
        ("down", "stop what up started"),
        ("env", "print the environment"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument(
            "--dir", type=Path, default=DEFAULT_DIR, help=f"work directory (default {DEFAULT_DIR})"
        )
    relay = sub.add_parser("_relay", help=argparse.SUPPRESS)
    relay.add_argument("pairs", nargs="+")
    inner = sub.add_parser("_in-netns", help=argparse.SUPPRESS)
    inner.add_argument("--relay", action="append", default=[])
    inner.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "_relay":
        return relay_main(args.pairs)
    if args.command == "_in-netns":
        command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        return in_netns_main(args.relay, command)
    try:
        if args.command == "up":
            started = time.monotonic()
            state = ControlPlane(args.dir).up()
            print(
                f"cluster: ready in {time.monotonic() - started:.0f} s; kubeconfig {state.kubeconfig}",
                file=sys.stderr,
            )
            print_environment(state)
        elif args.command == "env":
            print_environment(State.load(args.dir.resolve()))
        else:
            ControlPlane(args.dir, tools={}).down()
            print(f"cluster: stopped what {args.dir} recorded", file=sys.stderr)
    except (ClusterError, build.ToolError) as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
