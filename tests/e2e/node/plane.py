"""The cluster package's control plane with a node on it: what ``make e2e`` runs the scenarios on.

``NodePlane`` is ``ControlPlane`` with the changes a node needs (``control_plane.py``: the API server
on the node's address, the kubelet client certificate, the node controllers), the node's network made
before the API server binds to it, Knative's autoscaler moved from a host process into a pod, and the
node (``Node``: containerd, kubelet, scheduler, kube-proxy, CoreDNS, every image imported) and
Knative's data plane (activator, autoscaler, Traefik) started last. ``down`` stops the node first
(it raises naming what it left behind), then the control plane, whatever happened.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

from tests.e2e import build
from tests.e2e.cluster import ControlPlane, Process
from tests.e2e.node import control_plane, dataplane, network, pki
from tests.e2e.node.configs import Addresses
from tests.e2e.node.node import ControlPlaneAccess, Node, NodeError

HOST_AUTOSCALER_POD: Final = "autoscaler-e2e"
"""The POD_NAME the cluster package gives its autoscaler process: its leases' holder identity."""
KNATIVE_NAMESPACE: Final = "knative-serving"
NODE_DIR: Final = "node"


def first_address(cidr: str) -> str:
    """The first host address of an IPv4 ``cidr`` (the Service range's: the ``kubernetes`` Service)."""
    base, _ = cidr.split("/")
    a, b, c, d = base.split(".")
    return f"{a}.{b}.{c}.{int(d) + 1}"


class NodePlane(ControlPlane):
    """A control plane and one node in ``workdir`` (the node's files under ``workdir/node``)."""

    def __init__(
        self,
        workdir: Path,
        tools: Mapping[str, build.Built],
        *,
        app_images: Sequence[str] = (),
        app_commands: Sequence[str] = (),
        addresses: Addresses | None = None,
        data_plane: bool = True,
    ) -> None:
        super().__init__(workdir, tools)
        self.addresses = addresses or Addresses()
        self.app_images = list(app_images)
        self.app_commands = list(app_commands)
        self.data_plane = data_plane
        self.node: Node | None = None

    @property
    def access(self) -> ControlPlaneAccess:
        return ControlPlaneAccess(
            server=f"https://{self.addresses.node_ip}:{self.apiserver_port}",
            kubeconfig=self.kubeconfig,
            ca_cert=self.pki / "ca.crt",
            ca_key=self.pki / "ca.key",
        )

    def parts(self) -> tuple[Callable[[], None], ...]:
        return (self.setup_network, *super().parts(), self.stop_host_autoscaler, self.start_node)

    def setup_network(self) -> None:
        """The node's address, before the API server binds and advertises it."""
        network.setup(self.addresses)

    def write_pki(self) -> None:
        """The control plane's, then a serving certificate that names the node's address too, and the
        API server's client certificate for kubelets (``kubectl logs``, ``flyte-apps logs``)."""
        super().write_pki()
        names = ",".join(
            [
                "IP:127.0.0.1",
                f"IP:{self.addresses.node_ip}",
                f"IP:{first_address(self.addresses.service_cidr)}",
                "DNS:localhost",
                "DNS:kubernetes",
                "DNS:kubernetes.default",
                "DNS:kubernetes.default.svc",
            ]
        )
        ca = (self.pki / "ca.crt", self.pki / "ca.key")
        serving = pki.Identity(
            "apiserver", "/CN=kube-apiserver", f"subjectAltName={names}\nextendedKeyUsage=serverAuth\n"
        )
        pki.issue(self.pki, serving, ca_cert=ca[0], ca_key=ca[1])
        client = pki.Identity(
            "apiserver-kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client"
        )
        pki.issue(self.pki, client, ca_cert=ca[0], ca_key=ca[1])

    def start(self, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> Process:
        changed = control_plane.node_flags(
            name,
            argv,
            node_ip=self.addresses.node_ip,
            kubelet_client_cert=str(self.pki / "apiserver-kubelet-client.crt"),
            kubelet_client_key=str(self.pki / "apiserver-kubelet-client.key"),
        )
        return super().start(name, changed, env)

    def stop_host_autoscaler(self) -> None:
        """Stop the autoscaler process Knative's install started, and free its leader-election leases
        (held for ``lease-duration``, 60 s, otherwise): the node runs the autoscaler as a pod."""
        assert self.supervisor is not None
        self.supervisor.retire(control_plane.HOST_AUTOSCALER)
        for lease in self.get_json("leases", "-n", KNATIVE_NAMESPACE)["items"]:
            if str(lease["spec"].get("holderIdentity", "")).startswith(HOST_AUTOSCALER_POD):
                self.kubectl("delete", "lease", lease["metadata"]["name"], "-n", KNATIVE_NAMESPACE)

    def start_node(self) -> None:
        self.node = Node(
            self.workdir / NODE_DIR,
            self.access,
            self.tools,
            addresses=self.addresses,
            app_images=self.app_images,
            app_commands=self.app_commands,
            supervisor=self.supervisor,
        )
        self.node.up()
        if self.data_plane:
            self.node.start_data_plane()

    def reset_knative_config(self) -> None:
        """Knative's ConfigMaps as installed, then pointed at the node's data plane again (the ingress
        class, the queue-proxy image)."""
        super().reset_knative_config()
        if self.node is None or self.node.images is None or not self.data_plane:
            return
        for name, patch in dataplane.config_patches(self.node.images.queue.name):
            self.kubectl(
                "patch", "configmap", name, "-n", KNATIVE_NAMESPACE, "--type=merge", "-p", json.dumps(patch)
            )

    def down(self) -> None:
        """The node, then the control plane; a node that left something behind raises after both."""
        left: NodeError | None = None
        if self.node is not None:
            try:
                self.node.down()
            except NodeError as exc:
                left = exc
        super().down()
        if left is not None:
            raise left
