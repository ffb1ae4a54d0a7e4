"""The control plane's keys and certificates, made with openssl, and the kubeconfigs that use them.

One CA signs the API server's serving certificate (for every name a client here dials it by) and the
client certificates of the admin (what the scenarios and ``kubectl`` use) and of the controller
manager; both clients are in ``system:masters``, so RBAC lets them do anything without bootstrap
policy. The service-account key pair signs and checks the tokens the controller manager issues.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import yaml

from tests.e2e.cluster.processes import LOOPBACK, run_checked

SERVICE_CIDR: Final = "10.0.0.0/16"
"""The Services' range: each Knative revision takes two ClusterIPs (its public and private Services), so
a /24 (254 addresses) is full at about 120 apps, as the 200-app scenario found; clusters are given far
more (kubeadm's default is a /12)."""
APISERVER_NAMES: Final = (
    ("IP", LOOPBACK),
    ("IP", "10.0.0.1"),  # the first address of SERVICE_CIDR: the `kubernetes` Service
    ("DNS", "localhost"),
    ("DNS", "kubernetes"),
    ("DNS", "kubernetes.default"),
    ("DNS", "kubernetes.default.svc"),
)
CA_SUBJECT: Final = "/CN=flyte-apps-e2e-ca"
VALID_DAYS: Final = "2"
"""Long enough for any run, short enough that a kept work directory's keys soon mean nothing."""
RSA_BITS: Final = "rsa:2048"
OPENSSL_TIMEOUT_S: Final = 60.0
ADMIN: Final = "admin"
CONTROLLER_MANAGER: Final = "controller-manager"
CLUSTER_NAME: Final = "e2e"
CERTIFICATES: Final = (
    ("apiserver", "/CN=kube-apiserver", None),
    (ADMIN, "/O=system:masters/CN=flyte-apps-e2e-admin", "extendedKeyUsage=clientAuth\n"),
    (
        CONTROLLER_MANAGER,
        "/O=system:masters/CN=system:kube-controller-manager",
        "extendedKeyUsage=clientAuth\n",
    ),
)
"""name, subject, extensions (None: the API server's serving extensions, with its names)."""


def openssl(pki: Path, *args: str) -> None:
    run_checked(["openssl", *args], what=f"openssl {' '.join(args[:2])}", timeout=OPENSSL_TIMEOUT_S, cwd=pki)


def write_pki(pki: Path) -> None:
    """A CA, the API server's serving certificate, client certificates, the service-account key pair."""
    pki.mkdir(parents=True, exist_ok=True)
    openssl(pki, "genrsa", "-out", "sa.key", "2048")
    openssl(pki, "rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")
    openssl(
        pki,
        "req",
        "-x509",
        "-newkey",
        RSA_BITS,
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        VALID_DAYS,
        "-subj",
        CA_SUBJECT,
    )
    names = ",".join(f"{kind}:{name}" for kind, name in APISERVER_NAMES)
    serving = f"subjectAltName={names}\nextendedKeyUsage=serverAuth\n"
    for name, subject, usage in CERTIFICATES:
        (pki / f"{name}.ext").write_text(serving if usage is None else usage)
        openssl(
            pki,
            "req",
            "-newkey",
            RSA_BITS,
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            subject,
        )
        openssl(
            pki,
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
            VALID_DAYS,
            "-extfile",
            f"{name}.ext",
        )


def write_kubeconfig(path: Path, *, server: str, pki: Path, user: str) -> None:
    """A kubeconfig for ``server`` that authenticates as ``user`` with its client certificate."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CLUSTER_NAME,
                "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")},
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
        "contexts": [{"name": CLUSTER_NAME, "context": {"cluster": CLUSTER_NAME, "user": user}}],
        "current-context": CLUSTER_NAME,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
