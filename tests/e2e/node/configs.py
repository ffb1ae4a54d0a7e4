"""The node's configuration files, as pure functions of its layout and addresses (no I/O here).

Every path a component would default to outside the node's work directory is set to one inside it:
containerd's root, state, sockets, CNI directories and registry configuration; kubelet's root
directory, pod logs and resolv.conf; runc's state. What the components still write to fixed host
paths (containerd's shim sockets under ``/run/containerd/s``, kubelet's ``/var/log/containers``
links, libcni's ``/var/lib/cni`` cache) lands in the node's mount namespace, where ``/run``,
``/var/lib`` and ``/var/log`` are directories of the work directory (``mounts.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from tests.e2e.cluster.pki import SERVICE_CIDR

NODE_NAME: Final = "e2e-node"
CNI_NETWORK: Final = "flyte-apps-e2e"
CNI_BRIDGE: Final = "e2e-cni0"
CNI_VERSION: Final = "1.0.0"
CLUSTER_DOMAIN: Final = "cluster.local"
CLOSED_REGISTRY: Final = "http://127.0.0.1:1"
"""Where containerd sends every image pull: a loopback port nothing listens on (tcpmux, privileged),
so a pull fails at once with "connection refused" and never leaves the network namespace."""
KUBELET_PORT: Final = 10250
PROTECTED_KERNEL_DEFAULTS: Final = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
}
"""The global sysctls kubelet sets unless ``protectKernelDefaults`` (then it only checks them):
``setupKernelTunables`` in pkg/kubelet/cm/container_manager_linux.go. The node's mount namespace
shadows each ``/proc/sys`` file with one holding this value, so kubelet finds what it wants and
writes nothing."""
EVICTION_HARD: Final = {
    "memory.available": "100Mi",
    "nodefs.available": "1%",
    "nodefs.inodesFree": "1%",
    "imagefs.available": "1%",
    "imagefs.inodesFree": "1%",
}
"""Low thresholds: the machine's disk is shared with builds, and an eviction (or an image garbage
collection, see ``kubelet_config``) would remove images no registry can give back."""


@dataclass(frozen=True)
class Layout:
    """Where everything of one node lives, all under ``root`` (the node's work directory)."""

    root: Path

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def config(self) -> Path:
        return self.root / "config"

    @property
    def containerd_config(self) -> Path:
        return self.config / "containerd.toml"

    @property
    def registry_config(self) -> Path:
        return self.config / "certs.d"

    @property
    def cni_config(self) -> Path:
        return self.config / "cni"

    @property
    def kubelet_config(self) -> Path:
        return self.config / "kubelet.yaml"

    @property
    def kube_proxy_config(self) -> Path:
        return self.config / "kube-proxy.yaml"

    @property
    def corefile(self) -> Path:
        return self.config / "Corefile"

    @property
    def resolv_conf(self) -> Path:
        return self.config / "resolv.conf"

    def kubeconfig(self, user: str) -> Path:
        return self.config / f"{user}.kubeconfig"

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd" / "root"

    @property
    def containerd_state(self) -> Path:
        return self.root / "containerd" / "state"

    @property
    def containerd_socket(self) -> Path:
        return self.root / "containerd.sock"

    @property
    def runc_root(self) -> Path:
        return self.root / "runc"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    @property
    def pod_logs(self) -> Path:
        return self.root / "pod-logs"

    @property
    def ipam(self) -> Path:
        return self.root / "cni-ipam"

    @property
    def images(self) -> Path:
        return self.root / "images"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def host(self) -> Path:
        """What the node's mount namespace shows at /run, /var/lib, /var/log, and the sysctl shadows."""
        return self.root / "host"

    @property
    def record(self) -> Path:
        return self.root / "node.json"

    def directories(self) -> list[Path]:
        """What ``up`` creates before anything starts."""
        return [
            self.logs,
            self.pki,
            self.config,
            self.registry_config / "_default",
            self.cni_config,
            self.containerd_root,
            self.containerd_state,
            self.runc_root,
            self.kubelet_root,
            self.pod_logs,
            self.ipam,
            self.images,
            self.tmp,
            self.host,
        ]


@dataclass(frozen=True)
class Addresses:
    """The node's network: its own address and the ranges of pods and Services."""

    node_ip: str = "10.250.0.1"
    node_prefix: int = 24
    pod_cidr: str = "10.88.0.0/16"
    service_cidr: str = SERVICE_CIDR

    @property
    def pod_gateway(self) -> str:
        base, _ = self.pod_cidr.split("/")
        a, b, c, _ = base.split(".")
        return f"{a}.{b}.{c}.1"


def toml_value(value: object) -> str:
    """One TOML value: strings, booleans, integers and lists of those (all the node's configs need)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    msg = f"no TOML for {value!r}"
    raise TypeError(msg)


def toml_document(tables: Mapping[str, Mapping[str, object]], top: Mapping[str, object]) -> str:
    """A TOML document: ``top`` keys, then each table (dotted, quoted names) with its scalar keys."""
    lines = [f"{key} = {toml_value(value)}" for key, value in top.items()]
    for name, keys in tables.items():
        lines += ["", f"[{name}]", *(f"  {key} = {toml_value(value)}" for key, value in keys.items())]
    return "\n".join(lines) + "\n"


def containerd_config(layout: Layout, *, runc: Path, cni_bin: Path, sandbox_image: str) -> str:
    """containerd 2.0's configuration (version 3): CRI with runc (cgroupfs, not systemd: PID 1 is not
    systemd here), every directory in the work directory, the sandbox image ours, pulls sent to a
    closed port (``registry_hosts``), and the plugins that would touch other host paths off."""
    cri_runtime = "plugins.'io.containerd.cri.v1.runtime'"
    cri_images = "plugins.'io.containerd.cri.v1.images'"
    runc_runtime = f"{cri_runtime}.containerd.runtimes.runc"
    return toml_document(
        {
            "grpc": {"address": str(layout.containerd_socket)},
            "ttrpc": {"address": f"{layout.containerd_socket}.ttrpc"},
            # The opt plugin installs into /opt/containerd by default.
            "plugins.'io.containerd.internal.v1.opt'": {"path": str(layout.root / "containerd" / "opt")},
            cri_images: {"snapshotter": "overlayfs"},
            f"{cri_images}.pinned_images": {"sandbox": sandbox_image},
            f"{cri_images}.registry": {"config_path": str(layout.registry_config)},
            cri_runtime: {
                # Pod network namespaces under the state directory, not /var/run/netns.
                "netns_mounts_under_state_dir": True,
                # This machine gives no process CAP_SYS_RESOURCE (not even root: the bounding set
                # lacks it), so no process may lower its oom_score_adj below its parent's: runc's
                # nsexec fails "failed to update /proc/self/oom_score_adj: Permission denied" for
                # kubelet's -998 (sandboxes, Guaranteed pods). Clamp to containerd's own instead.
                "restrict_oom_score_adj": True,
                "enable_cdi": False,
                "cdi_spec_dirs": [],
            },
            f"{cri_runtime}.containerd": {"default_runtime_name": "runc"},
            runc_runtime: {"runtime_type": "io.containerd.runc.v2"},
            f"{runc_runtime}.options": {
                "BinaryName": str(runc),
                "Root": str(layout.runc_root),
                "SystemdCgroup": False,
            },
            f"{cri_runtime}.cni": {"bin_dir": str(cni_bin), "conf_dir": str(layout.cni_config)},
            "plugins.'io.containerd.grpc.v1.cri'": {
                "stream_server_address": "127.0.0.1",
                "stream_server_port": "0",
            },
        },
        {
            "version": 3,
            "root": str(layout.containerd_root),
            "state": str(layout.containerd_state),
            "disabled_plugins": [
                "io.containerd.snapshotter.v1.btrfs",
                "io.containerd.snapshotter.v1.zfs",
                "io.containerd.snapshotter.v1.devmapper",
                "io.containerd.snapshotter.v1.blockfile",
                "io.containerd.snapshotter.v1.erofs",
                "io.containerd.nri.v1.nri",  # its socket is /var/run/nri/nri.sock
                "io.containerd.tracing.processor.v1.otlp",
                "io.containerd.internal.v1.tracing",
            ],
        },
    )


def registry_hosts() -> str:
    """``certs.d/_default/hosts.toml``: every registry without a directory of its own (all of them)
    resolves and pulls from ``CLOSED_REGISTRY`` only."""
    return toml_document(
        {f'host."{CLOSED_REGISTRY}"': {"capabilities": ["pull", "resolve"]}},
        {"server": CLOSED_REGISTRY},
    )


def cni_config(layout: Layout, addresses: Addresses) -> str:
    """The pod network: one bridge with the pods' gateway, host-local addresses kept in the work
    directory, hairpin on (a pod reaching itself through its Service), no masquerade (there is no
    outside to reach), and portmap for hostPort (nftables, as kube-proxy)."""
    return json.dumps(
        {
            "cniVersion": CNI_VERSION,
            "name": CNI_NETWORK,
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": CNI_BRIDGE,
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": addresses.pod_cidr, "gateway": addresses.pod_gateway}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(layout.ipam),
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}, "backend": "nftables"},
            ],
        },
        indent=2,
    )


def resolv_conf() -> str:
    """The host resolv.conf kubelet reads (``resolvConf``): no nameserver and no search path of the
    machine's. Pods get the cluster DNS (``clusterDNS``, the node's CoreDNS) and its search path; a
    pod with ``dnsPolicy: Default`` gets no nameserver at all, so it asks 127.0.0.1:53 in its own
    namespace, where nothing answers. Nothing outside is ever asked."""
    return "# flyte-apps e2e node: the cluster DNS (CoreDNS on the node's address) is the only one\n"


def corefile(addresses: Addresses, *, kubeconfig_path: Path, ready_port: int) -> str:
    """CoreDNS's configuration: Services and pods of ``cluster.local`` from the API server (through
    a kubeconfig: CoreDNS runs on the node, not as a pod), NXDOMAIN for every other name (no
    ``forward``: there is no outside, and none is asked), on the node's address only."""
    return f"""{CLUSTER_DOMAIN}:53 {{
    bind {addresses.node_ip}
    errors
    cache 5
    kubernetes {CLUSTER_DOMAIN} {{
        kubeconfig {kubeconfig_path} e2e
    }}
}}
.:53 {{
    bind {addresses.node_ip}
    ready 127.0.0.1:{ready_port}
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"""


def kubelet_config(
    layout: Layout,
    addresses: Addresses,
    *,
    cgroup_root: str,
    healthz_port: int,
    ca_cert: Path,
) -> dict[str, Any]:
    """KubeletConfiguration v1beta1 for cgroup v1 without systemd, on a shared machine.

    - ``failCgroupV1: false``: 1.34 still defaults to false, 1.35 flips it; said explicitly.
    - ``cgroupDriver: cgroupfs`` (PID 1 is not systemd; containerd's runc ``SystemdCgroup = false``)
      and a ``cgroupRoot`` of the run's own, below the runner's cgroup (``cgroups.py``).
    - ``protectKernelDefaults: true``: kubelet checks the six kernel settings instead of writing them.
    - ``imageGCHighThresholdPercent: 100`` and low eviction thresholds: the images were imported, not
      pulled; one garbage-collected could never come back.
    - Client certificates, webhook authorization: the API server's own client certificate (logs,
      exec) is authorized through a SubjectAccessReview like any caller.
    """
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root,
        "cgroupsPerQOS": True,
        "enforceNodeAllocatable": ["pods"],
        "containerRuntimeEndpoint": f"unix://{layout.containerd_socket}",
        "imageServiceEndpoint": f"unix://{layout.containerd_socket}",
        "failSwapOn": True,
        "protectKernelDefaults": True,
        "resolvConf": str(layout.resolv_conf),
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [addresses.node_ip],
        "podLogsDir": str(layout.pod_logs),
        "address": addresses.node_ip,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "tlsCertFile": str(layout.pki / "kubelet-serving.crt"),
        "tlsPrivateKeyFile": str(layout.pki / "kubelet-serving.key"),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca_cert)},
        },
        "authorization": {"mode": "Webhook"},
        "registerNode": True,
        "serializeImagePulls": False,
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": dict(EVICTION_HARD),
        "syncFrequency": "10s",
        "nodeStatusUpdateFrequency": "5s",
        "shutdownGracePeriod": "0s",
        # Not -999: without CAP_SYS_RESOURCE kubelet may not lower its own score (it logs and goes on).
        "oomScoreAdj": 0,
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "staticPodPath": "",
    }


def kube_proxy_config(
    layout: Layout, addresses: Addresses, *, healthz_port: int, metrics_port: int
) -> dict[str, Any]:
    """KubeProxyConfiguration v1alpha1, nftables mode. ``conntrack.maxPerCore: 0`` (and ``min: 0``):
    kube-proxy then leaves ``nf_conntrack_max`` alone, the one conntrack setting that is global (and,
    from a network namespace other than the first, not writable at all: kube-proxy would exit). The
    timeouts it sets are per network namespace (checked: a write in a new namespace leaves the
    host's value), so they keep their defaults. The nftables proxier writes no sysctl."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "nftables",
        "clientConnection": {"kubeconfig": str(layout.kubeconfig("kube-proxy"))},
        "hostnameOverride": NODE_NAME,
        "clusterCIDR": addresses.pod_cidr,
        "detectLocalMode": "ClusterCIDR",
        "healthzBindAddress": f"127.0.0.1:{healthz_port}",
        "metricsBindAddress": f"127.0.0.1:{metrics_port}",
        "conntrack": {"maxPerCore": 0, "min": 0},
        "nodePortAddresses": [f"{addresses.node_ip}/32"],
    }


def kubeconfig(*, server: str, ca_cert: Path, cert: Path, key: Path, user: str) -> str:
    """A kubeconfig that authenticates with a client certificate."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "e2e", "cluster": {"server": server, "certificate-authority": str(ca_cert)}}
            ],
            "users": [{"name": user, "user": {"client-certificate": str(cert), "client-key": str(key)}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
            "current-context": "e2e",
        },
        sort_keys=False,
    )


def yaml_text(document: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(document), sort_keys=False)


def traefik_args(
    *, public_port: int, private_port: int, ping_port: int, services: Sequence[tuple[str, str]]
) -> list[str]:
    """Traefik's command line: the Knative provider (experimental in 3.6), a public and a private
    entrypoint on every address of the node's namespace, a ping endpoint on loopback, and nothing
    that calls out (version checks, anonymous usage). ``services`` are the public and the private
    Service (namespace, name) Traefik writes into each KIngress's status: serving's Route reads
    ``status.privateLoadBalancer`` and fails without it."""
    (public_ns, public_name), (private_ns, private_name) = services
    return [
        "--global.checknewversion=false",
        "--global.sendanonymoususage=false",
        "--log.level=INFO",
        "--log.nocolor=true",
        "--experimental.knative=true",
        "--providers.knative=true",
        f"--entrypoints.web.address=:{public_port}",
        f"--entrypoints.web-private.address=:{private_port}",
        f"--entrypoints.ping.address=127.0.0.1:{ping_port}",
        "--ping=true",
        "--ping.entrypoint=ping",
        "--providers.knative.publicentrypoints=web",
        "--providers.knative.privateentrypoints=web-private",
        f"--providers.knative.publicservice.namespace={public_ns}",
        f"--providers.knative.publicservice.name={public_name}",
        f"--providers.knative.privateservice.namespace={private_ns}",
        f"--providers.knative.privateservice.name={private_name}",
    ]
