"""A real Kubernetes control plane with Knative Serving on this machine, without Docker.

etcd, kube-apiserver and kube-controller-manager (built by ``make e2e-tools``) on 127.0.0.1, then
Knative Serving's CRDs, ConfigMaps and webhook configurations from its modules, and its controller,
webhook and autoscaler, each in a network namespace of its own joined to the API server by relays.
Without a kubelet no pod runs; see docs/verification.md for what that leaves out.

    python -m tests.e2e.cluster up [--dir DIR]     # start, wait until ready, print the kubeconfig
    python -m tests.e2e.cluster env [--dir DIR]    # the environment a caller needs (export lines)
    python -m tests.e2e.cluster down [--dir DIR]   # stop every process `up` started, by PID

One module a concern: ``processes`` (what is started, recorded by PID and start time, and stopped by
them alone; bounded commands), ``pki`` (openssl keys, certificates, kubeconfigs), ``kubectl`` (the
built client, bounded), ``relays`` (unix socket <-> loopback TCP across network namespaces),
``knative`` (Knative Serving's objects and processes), ``control_plane`` (etcd, the API server, the
controller manager, and the order of the parts), ``__main__`` (the command line above). The names
below are what other code (the scenarios, ``bench/``, the unit tests) uses.
"""

from __future__ import annotations

from tests.e2e.cluster.control_plane import ControlPlane, operating, running
from tests.e2e.cluster.knative import KNATIVE_NAMESPACE
from tests.e2e.cluster.kubectl import Kubectl
from tests.e2e.cluster.processes import (
    LOOPBACK,
    PROXY_VARIABLES,
    REPO,
    ClusterError,
    Process,
    State,
    Supervisor,
    clean_environment,
    cpu_seconds,
    free_port,
    kill_session,
    network_namespace_prefix,
    run_bounded,
    run_checked,
    runs_recorded_command,
    session_members,
    signals_deferred,
    start_time,
    stop_group,
    stop_processes,
    wait_until,
)
from tests.e2e.cluster.relays import SELF, parse_endpoint

__all__ = [
    "KNATIVE_NAMESPACE",
    "LOOPBACK",
    "PROXY_VARIABLES",
    "REPO",
    "SELF",
    "ClusterError",
    "ControlPlane",
    "Kubectl",
    "Process",
    "State",
    "Supervisor",
    "clean_environment",
    "cpu_seconds",
    "free_port",
    "kill_session",
    "network_namespace_prefix",
    "operating",
    "parse_endpoint",
    "run_bounded",
    "run_checked",
    "running",
    "runs_recorded_command",
    "session_members",
    "signals_deferred",
    "start_time",
    "stop_group",
    "stop_processes",
    "wait_until",
]
