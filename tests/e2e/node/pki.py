"""The node's certificates, signed with the control plane's CA (openssl), and its kubeconfigs.

Each client is who the API server's bootstrap RBAC and Node authorizer expect: kubelet as
``system:node:<name>`` in ``system:nodes`` (the Node authorizer limits it to its own pods' objects),
kube-proxy as ``system:kube-proxy`` (bound to ``system:node-proxier``), the scheduler as
``system:kube-scheduler``. Traefik and CoreDNS get names of their own, bound to ClusterRoles with
what they read and write (``dataplane.traefik_rbac``, ``dataplane.coredns_rbac``). kubelet's
serving certificate names the node's address (the API server dials it for logs and exec).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tests.e2e.cluster.pki import openssl
from tests.e2e.node.configs import NODE_NAME

VALID_DAYS: Final = "2"
RSA_BITS: Final = "rsa:2048"
CLIENT_USAGE: Final = "extendedKeyUsage=clientAuth\n"


@dataclass(frozen=True)
class Identity:
    """A certificate to make: its file stem, subject and extensions."""

    name: str
    subject: str
    extensions: str = CLIENT_USAGE


KUBELET: Final = Identity("kubelet", f"/O=system:nodes/CN=system:node:{NODE_NAME}")
KUBE_PROXY: Final = Identity("kube-proxy", "/CN=system:kube-proxy")
SCHEDULER: Final = Identity("kube-scheduler", "/CN=system:kube-scheduler")
TRAEFIK_USER: Final = "flyte-apps-e2e-traefik"
TRAEFIK: Final = Identity("traefik", f"/CN={TRAEFIK_USER}")
COREDNS_USER: Final = "flyte-apps-e2e-coredns"
COREDNS: Final = Identity("coredns", f"/CN={COREDNS_USER}")
CLIENTS: Final = (KUBELET, KUBE_PROXY, SCHEDULER, TRAEFIK, COREDNS)


def serving_identity(node_ip: str) -> Identity:
    return Identity(
        "kubelet-serving",
        f"/CN={NODE_NAME}",
        f"subjectAltName=IP:{node_ip},DNS:{NODE_NAME}\nextendedKeyUsage=serverAuth\n",
    )


def issue(directory: Path, identity: Identity, *, ca_cert: Path, ca_key: Path) -> tuple[Path, Path]:
    """``<name>.crt`` and ``<name>.key`` in ``directory``, signed by the CA; returns both paths."""
    directory.mkdir(parents=True, exist_ok=True)
    ext = directory / f"{identity.name}.ext"
    ext.write_text(identity.extensions)
    key, csr, crt = (directory / f"{identity.name}.{suffix}" for suffix in ("key", "csr", "crt"))
    openssl(
        directory,
        "req",
        "-newkey",
        RSA_BITS,
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(csr),
        "-subj",
        identity.subject,
    )
    openssl(
        directory,
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(ca_cert),
        "-CAkey",
        str(ca_key),
        "-CAcreateserial",
        "-CAserial",
        str(directory / "ca.srl"),
        "-out",
        str(crt),
        "-days",
        VALID_DAYS,
        "-extfile",
        str(ext),
    )
    key.chmod(0o600)
    return crt, key
