"""The node's network, inside the network namespace the run made (never the machine's own).

The run's namespace has only ``lo``. The node needs an address that is not loopback: the API server
advertises it (it refuses a loopback one) and pods reach it (127.0.0.1 in a pod is the pod's own).
No dummy interfaces on this kernel (``CONFIG_DUMMY`` is off), so a veth pair whose two ends stay in
the namespace: one carries the node's address, both up so it has a carrier. The only routes added
are the node's subnet (the address's own) and the Service range, so that a connection from the
namespace to a ClusterIP has a route before kube-proxy's nftables rewrite it; there is no default
route, and nothing leads out of the namespace. CNI's bridge (``configs.CNI_BRIDGE``) is made by the
bridge plugin at the first pod.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from tests.e2e.node.configs import CNI_BRIDGE, Addresses

NODE_LINK: Final = "e2e-node0"
PEER_LINK: Final = "e2e-node1"
IP_TIMEOUT_S: Final = 30.0
HOST_NETNS: Final = Path("/proc/1/ns/net")


class NetworkError(Exception):
    """The node's network cannot be made here (or would not be isolated)."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=IP_TIMEOUT_S, check=False)
    if check and done.returncode != 0:
        msg = f"ip {' '.join(args)}: {done.stderr.strip()}"
        raise NetworkError(msg)
    return done


def check_isolated() -> None:
    """This process must be in a network namespace of its own with no route out: PID 1's namespace
    (when it can be read), a default route, or an interface that is neither loopback nor one of the
    node's (the machine's own namespace has its ethernet) refuses."""
    with contextlib.suppress(OSError):  # PID 1's may not be readable (here it is not, even as root)
        if os.readlink("/proc/self/ns/net") == os.readlink(HOST_NETNS):
            msg = "the node runs only in a network namespace the run made (this is the machine's own)"
            raise NetworkError(msg)
    default = ip("-4", "route", "show", "default").stdout.strip()
    if default:
        msg = f"this network namespace has a default route ({default}); the node must have no route out"
        raise NetworkError(msg)
    ours = {"lo", NODE_LINK, PEER_LINK, CNI_BRIDGE}
    links = [
        line.split(":")[1].strip().split("@")[0] for line in ip("-o", "link", "show").stdout.splitlines()
    ]
    foreign = [name for name in links if name not in ours and not name.startswith("veth")]
    if foreign:
        msg = f"this network namespace has interfaces {foreign}; the node's has only lo and its own"
        raise NetworkError(msg)


def setup(addresses: Addresses) -> None:
    """``lo`` up, the veth pair with the node's address, the route to the Service range. Idempotent:
    a pair that is already there is kept."""
    ip("link", "set", "lo", "up")
    if ip("link", "show", NODE_LINK, check=False).returncode != 0:
        ip("link", "add", NODE_LINK, "type", "veth", "peer", "name", PEER_LINK)
    ip("addr", "replace", f"{addresses.node_ip}/{addresses.node_prefix}", "dev", NODE_LINK)
    ip("link", "set", PEER_LINK, "up")
    ip("link", "set", NODE_LINK, "up")
    ip("route", "replace", addresses.service_cidr, "dev", NODE_LINK, "src", addresses.node_ip)


def teardown(nft: Path | None = None) -> list[str]:
    """Remove what ``setup``, CNI and kube-proxy made in the namespace: the veth pair (its route goes
    with it), the pods' bridge, kube-proxy's nftables tables. What could not be removed, named."""
    left = []
    for link in (NODE_LINK, CNI_BRIDGE):
        if ip("link", "show", link, check=False).returncode == 0:
            done = ip("link", "delete", link, check=False)
            if done.returncode != 0:
                left.append(f"link {link}: {done.stderr.strip()}")
    if nft is not None:
        for family in ("ip", "ip6"):
            listed = nft_run(nft, ["list", "tables", family])
            if f"table {family} kube-proxy" in listed.stdout:
                done = nft_run(nft, ["delete", "table", family, "kube-proxy"])
                if done.returncode != 0:
                    left.append(f"nftables table {family} kube-proxy: {done.stderr.strip()}")
    return left


def nft_run(nft: Path, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(nft), *args], capture_output=True, text=True, timeout=IP_TIMEOUT_S, check=False
    )
