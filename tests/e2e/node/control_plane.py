"""What a control plane must change for a node to run on it: the flags and certificates, as data and
as one function that rewrites today's command lines (``node_flags``), which ``tryout.py`` uses and
the cluster package can adopt.

kube-apiserver:

- ``--bind-address=0.0.0.0`` and ``--advertise-address=<node IP>``, and no
  ``--endpoint-reconciler-type=none``: pods reach the API server through the ``kubernetes`` Service
  (10.0.0.1:443, what in-cluster clients dial), whose Endpoints the reconciler writes from the
  advertised address, and it refuses a loopback one; 127.0.0.1 in a pod is the pod's own. All of
  this is inside the run's network namespace, so 0.0.0.0 is still not the machine's network.
- The node's IP in the serving certificate's names (host processes may dial it; pods dial 10.0.0.1,
  already there).
- ``--kubelet-client-certificate``/``--kubelet-client-key`` (a client in ``system:masters``, which
  the kubelet's webhook authorization allows) and ``--kubelet-preferred-address-types=InternalIP``
  (the node's name does not resolve): ``kubectl logs``/``exec``, ``flyte-apps logs``.

kube-controller-manager adds ``NODE_CONTROLLERS``: endpoints and EndpointSlices for Services with
selectors (kube-proxy reads only EndpointSlices), EndpointSlice mirroring (Knative's serverless
services write Endpoints by hand), node lifecycle (removes the ``not-ready`` taint the API server's
admission puts on a new Node, else nothing schedules), pod GC, the root CA ConfigMap
(``kube-root-ca.crt``, in every pod's service-account volume: without it no pod starts), and
ClusterRole aggregation (Knative's ``knative-serving-admin``, bound to the autoscaler's service
account, is an aggregated role and is empty without it).

Knative: the autoscaler no longer runs as a process beside the control plane (it must reach pod
IPs, and the activator reaches it through its Service): ``Node.start_data_plane`` runs it as a pod.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

NODE_CONTROLLERS: Final = (
    "endpoint",
    "endpointslice",
    "endpointslicemirroring",
    "nodelifecycle",
    "podgc",
    "root-ca-cert-publisher",
    "clusterrole-aggregation",
)
APISERVER: Final = "kube-apiserver"
CONTROLLER_MANAGER: Final = "kube-controller-manager"
HOST_AUTOSCALER: Final = "knative-autoscaler"
"""The name the cluster package starts the autoscaler process under; with a node it is a pod."""
DROPPED_APISERVER_FLAGS: Final = ("--bind-address=", "--advertise-address=", "--endpoint-reconciler-type=")


def node_flags(
    name: str, argv: Sequence[str], *, node_ip: str, kubelet_client_cert: str, kubelet_client_key: str
) -> list[str]:
    """``argv`` of the control plane's process ``name`` with what a node needs (see the module)."""
    if name == APISERVER:
        kept = [a for a in argv if not a.startswith(DROPPED_APISERVER_FLAGS)]
        return [
            *kept,
            "--bind-address=0.0.0.0",
            f"--advertise-address={node_ip}",
            f"--kubelet-client-certificate={kubelet_client_cert}",
            f"--kubelet-client-key={kubelet_client_key}",
            "--kubelet-preferred-address-types=InternalIP",
        ]
    if name == CONTROLLER_MANAGER:
        changed = []
        for arg in argv:
            if arg.startswith("--controllers="):
                have = arg.removeprefix("--controllers=").split(",")
                arg = "--controllers=" + ",".join([*have, *(c for c in NODE_CONTROLLERS if c not in have)])
            changed.append(arg)
        return changed
    return list(argv)
