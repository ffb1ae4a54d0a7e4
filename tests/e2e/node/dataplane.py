"""Knative's data plane on the node: the activator and the autoscaler as pods, and Traefik as the
networking layer (KIngress), as Kubernetes objects built from the knative tool's YAML.

- The activator and autoscaler Deployments, Services, ServiceAccounts and RBAC are serving's own
  (``config/core/deployments``, ``200-roles``, ``200-serviceaccount``; copied into the tool's share
  by ``make e2e-tools``), with two edits: the ``ko://`` images become the images packed here, and
  CPU requests shrink (the machine has two cores, and the stacks' apps need them). The activator
  dials ``ws://autoscaler.knative-serving.svc.cluster.local:8080`` (cmd/activator/main.go) and the
  autoscaler probes each revision's Service by name before scaling it to zero: both through the
  node's cluster DNS (CoreDNS, ``Node``).
- Traefik runs as a process of the node (``Node``), not a pod: it reads KIngresses through a
  kubeconfig, and its two entrypoints are on the node's address. The two Services it writes into
  each KIngress's status (serving's Route refuses an Ingress without a private load balancer) are
  selectorless, their EndpointSlices pointing at those entrypoints.
- ConfigMap patches: ``config-network``'s ``ingress-class`` names Traefik's class;
  ``config-deployment``'s ``queue-sidecar-image`` the queue-proxy image packed here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import yaml

from tests.e2e.node.pki import COREDNS_USER, TRAEFIK_USER

KNATIVE_NAMESPACE: Final = "knative-serving"
TRAEFIK_INGRESS_CLASS: Final = "traefik.ingress.networking.knative.dev"
PUBLIC_SERVICE: Final = "traefik-public"
PRIVATE_SERVICE: Final = "traefik-private"
DATA_PLANE_REQUESTS: Final = {"cpu": "25m", "memory": "40Mi"}
"""serving asks 300m (activator) and 100m (autoscaler); on two cores the apps need them more."""
RBAC_FILES: Final = (
    "rbac/serviceaccount.yaml",
    "rbac/clusterrole.yaml",
    "rbac/clusterrole-namespaced.yaml",
    "rbac/activator.yaml",
    "rbac/addressable-resolvers-clusterrole.yaml",
    "rbac/podspecable-bindings-clusterrole.yaml",
)
DEPLOYMENT_FILES: Final = ("deployments/activator.yaml", "deployments/autoscaler.yaml")
KO_PREFIX: Final = "ko://knative.dev/serving/cmd/"


def documents(share: Path, relative: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((share / relative).read_text()) if d]


def data_plane(share: Path, *, images: Mapping[str, str]) -> list[dict[str, Any]]:
    """The activator's and autoscaler's objects: RBAC, then Deployments and Services, edited as the
    module says. ``images``: command name (``activator``) -> image."""
    found: list[dict[str, Any]] = []
    for relative in RBAC_FILES:
        found += documents(share, relative)
    for relative in DEPLOYMENT_FILES:
        for document in documents(share, relative):
            found.append(edit(document, images=images))
    return found


def edit(document: Mapping[str, Any], *, images: Mapping[str, str]) -> dict[str, Any]:
    edited = copy.deepcopy(dict(document))
    if edited["kind"] == "Deployment":
        pod = edited["spec"]["template"]["spec"]
        for container in pod["containers"]:
            image = container["image"]
            if image.startswith(KO_PREFIX):
                command = image.removeprefix(KO_PREFIX)
                if command not in images:
                    msg = f"no image for {image} (have {', '.join(images)})"
                    raise ValueError(msg)
                container["image"] = images[command]
                container["imagePullPolicy"] = "IfNotPresent"
            container.setdefault("resources", {})["requests"] = dict(DATA_PLANE_REQUESTS)
    return edited


def config_patches(queue_image: str) -> list[tuple[str, dict[str, Any]]]:
    """(ConfigMap name, merge patch) for Knative's ConfigMaps in its namespace."""
    return [
        ("config-network", {"data": {"ingress-class": TRAEFIK_INGRESS_CLASS}}),
        ("config-deployment", {"data": {"queue-sidecar-image": queue_image}}),
    ]


def cluster_role(name: str, user: str, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A ClusterRole with ``rules`` and its binding to ``user`` (a client certificate's name)."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    ]


def coredns_rbac() -> list[dict[str, Any]]:
    """What CoreDNS's kubernetes plugin lists and watches (kubeadm's ``system:coredns`` role)."""
    return cluster_role(
        "flyte-apps-e2e-coredns",
        COREDNS_USER,
        [
            {
                "apiGroups": [""],
                "resources": ["endpoints", "services", "pods", "namespaces"],
                "verbs": ["list", "watch"],
            },
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
        ],
    )


def traefik_rbac() -> list[dict[str, Any]]:
    """What Traefik's Knative provider reads (KIngresses, Services, Secrets) and writes (KIngress
    status), for its client certificate's user (read from its client.go informers and UpdateStatus)."""
    return cluster_role(
        "flyte-apps-e2e-traefik-knative",
        TRAEFIK_USER,
        [
            {"apiGroups": [""], "resources": ["services", "secrets"], "verbs": ["get", "list", "watch"]},
            {
                "apiGroups": ["networking.internal.knative.dev"],
                "resources": ["ingresses"],
                "verbs": ["get", "list", "watch"],
            },
            {
                "apiGroups": ["networking.internal.knative.dev"],
                "resources": ["ingresses/status"],
                "verbs": ["update"],
            },
        ],
    )


def traefik_services(node_ip: str, ports: Sequence[tuple[str, int]]) -> list[dict[str, Any]]:
    """The public and private Services (name, port), selectorless, each with an EndpointSlice at the
    node's address: what KIngress status names, and a ClusterIP a pod can dial."""
    found: list[dict[str, Any]] = []
    for name, port in ports:
        found.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": KNATIVE_NAMESPACE},
                "spec": {"ports": [{"name": "http", "port": 80, "targetPort": port, "protocol": "TCP"}]},
            }
        )
        found.append(
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": f"{name}-node",
                    "namespace": KNATIVE_NAMESPACE,
                    "labels": {
                        "kubernetes.io/service-name": name,
                        "endpointslice.kubernetes.io/managed-by": "flyte-apps-e2e",
                    },
                },
                "addressType": "IPv4",
                "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
                "endpoints": [{"addresses": [node_ip], "conditions": {"ready": True}}],
            }
        )
    return found
