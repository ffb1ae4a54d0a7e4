"""A Kubernetes node for the e2e run, on this machine, changing nothing of it.

containerd 2.0 (from its module) with Debian's runc, CNI's bridge, kubelet, kube-scheduler and
kube-proxy (nftables, Debian's nft) from the same Kubernetes as the API server, and Knative's data
plane (activator and autoscaler as pods, Traefik's Knative provider as the ingress), every image
built here from the tools and imported into containerd. README.md beside this file has the facts
it rests on (versions, flags, what failed and why).

- ``node``: ``Node`` (``up``, ``start_data_plane``, ``down``) and ``ControlPlaneAccess``, what it
  takes of a control plane.
- ``control_plane``: what the control plane must change for a node (flags, controllers).
- ``configs``: every configuration file, pure; ``images``: the images; ``dataplane``: Knative's
  objects; ``pki``: the node's certificates.
- ``network``, ``mounts``, ``cgroups``, ``host``: the network namespace, the mount namespace, the
  run's cgroups and the machine's kernel settings: how the node is kept off the machine, and how
  ``down`` checks it was.
- ``tryout`` and ``__main__``: ``python -m tests.e2e.node try`` (a node on a control plane in a
  network namespace of its own, exercised and stopped), ``up``/``down`` for a control plane of
  yours.
"""

from __future__ import annotations

from tests.e2e.node.configs import Addresses
from tests.e2e.node.control_plane import NODE_CONTROLLERS, node_flags
from tests.e2e.node.node import ControlPlaneAccess, Node, NodeError

__all__ = ["NODE_CONTROLLERS", "Addresses", "ControlPlaneAccess", "Node", "NodeError", "node_flags"]
