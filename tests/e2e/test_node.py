"""The e2e node's pure parts (tests/e2e/node), checked without building or starting anything: its
configuration files, the control plane's changes, the cgroup and mount bookkeeping ``down`` relies
on, the image names and Knative's edited objects."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.node import cgroups, configs, control_plane, dataplane, host, images, mounts
from tests.e2e.node.configs import Addresses, Layout
from tests.e2e.node.node import cgroup_join_argv

STACKS = Path(__file__).parent / "stacks"
WORK = Path("/tmp/node-work")
RUNC = Path("/cache/runc/bin/runc")
CNI_BIN = Path("/cache/cni/bin")


def under(path: str, root: Path) -> bool:
    return Path(path) == root or root in Path(path).parents


def test_containerd_keeps_to_the_work_directory_and_never_lowers_an_oom_score() -> None:
    text = configs.containerd_config(
        Layout(WORK), runc=RUNC, cni_bin=CNI_BIN, sandbox_image="ko.local/pause:1"
    )
    config = tomllib.loads(text)
    assert config["version"] == 3
    for key in ("root", "state"):
        assert under(config[key], WORK)
    assert under(config["grpc"]["address"], WORK) and under(config["ttrpc"]["address"], WORK)
    plugins = config["plugins"]
    runtime = plugins["io.containerd.cri.v1.runtime"]
    assert runtime["netns_mounts_under_state_dir"] is True
    assert runtime["restrict_oom_score_adj"] is True
    assert runtime["enable_cdi"] is False
    assert under(runtime["cni"]["conf_dir"], WORK) and runtime["cni"]["bin_dir"] == str(CNI_BIN)
    options = runtime["containerd"]["runtimes"]["runc"]["options"]
    assert options["SystemdCgroup"] is False and options["BinaryName"] == str(RUNC)
    assert under(options["Root"], WORK)
    images_plugin = plugins["io.containerd.cri.v1.images"]
    assert images_plugin["pinned_images"]["sandbox"] == "ko.local/pause:1"
    assert under(images_plugin["registry"]["config_path"], WORK)
    assert under(plugins["io.containerd.internal.v1.opt"]["path"], WORK)
    assert "io.containerd.nri.v1.nri" in config["disabled_plugins"]


def test_every_pull_goes_to_a_closed_loopback_port() -> None:
    hosts = tomllib.loads(configs.registry_hosts())
    assert hosts["server"] == configs.CLOSED_REGISTRY == "http://127.0.0.1:1"
    assert set(hosts["host"]) == {configs.CLOSED_REGISTRY}


def test_kubelet_checks_the_kernel_defaults_instead_of_writing_them() -> None:
    config = configs.kubelet_config(
        Layout(WORK),
        Addresses(),
        cgroup_root="/machinery/flyte-apps-e2e-1",
        healthz_port=1,
        ca_cert=WORK / "ca",
    )
    assert config["failCgroupV1"] is False
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["cgroupRoot"] == "/machinery/flyte-apps-e2e-1"
    assert config["protectKernelDefaults"] is True
    assert config["imageGCHighThresholdPercent"] == 100
    assert config["oomScoreAdj"] == 0
    assert config["clusterDNS"] == [Addresses().node_ip]
    for key in ("resolvConf", "podLogsDir", "tlsCertFile", "tlsPrivateKeyFile"):
        assert under(config[key], WORK), key
    assert config["containerRuntimeEndpoint"] == f"unix://{WORK / 'containerd.sock'}"
    assert config["authentication"]["anonymous"]["enabled"] is False


def test_the_shadowed_kernel_settings_are_the_ones_kubelet_wants() -> None:
    """setupKernelTunables' desired state (pkg/kubelet/cm/container_manager_linux.go, 1.34)."""
    assert configs.PROTECTED_KERNEL_DEFAULTS == {
        "vm/overcommit_memory": "1",
        "vm/panic_on_oom": "0",
        "kernel/panic": "10",
        "kernel/panic_on_oops": "1",
        "kernel/keys/root_maxkeys": "1000000",
        "kernel/keys/root_maxbytes": "25000000",
    }


def test_kube_proxy_leaves_the_global_conntrack_limit_alone() -> None:
    config = configs.kube_proxy_config(Layout(WORK), Addresses(), healthz_port=1, metrics_port=2)
    assert config["mode"] == "nftables"
    assert config["conntrack"] == {"maxPerCore": 0, "min": 0}
    assert config["clusterCIDR"] == Addresses().pod_cidr


def test_the_cluster_dns_answers_only_the_cluster_domain_and_asks_no_one() -> None:
    corefile = configs.corefile(Addresses(), kubeconfig_path=WORK / "coredns.kubeconfig", ready_port=5)
    assert "forward" not in corefile and "rcode NXDOMAIN" in corefile
    assert corefile.count(f"bind {Addresses().node_ip}") == 2
    assert "nameserver" not in configs.resolv_conf()


def test_the_pod_network_has_no_masquerade_and_keeps_its_addresses_in_the_work_directory() -> None:
    network = json.loads(configs.cni_config(Layout(WORK), Addresses()))
    bridge = network["plugins"][0]
    assert bridge["type"] == "bridge" and bridge["ipMasq"] is False and bridge["hairpinMode"] is True
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.88.0.0/16", "gateway": "10.88.0.1"}]]
    assert under(bridge["ipam"]["dataDir"], WORK)


def test_the_control_plane_gets_the_flags_a_node_needs() -> None:
    apiserver = [
        "kube-apiserver",
        "--secure-port=6443",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        "--endpoint-reconciler-type=none",
    ]
    changed = control_plane.node_flags(
        "kube-apiserver", apiserver, node_ip="10.250.0.1", kubelet_client_cert="c", kubelet_client_key="k"
    )
    assert "--bind-address=127.0.0.1" not in changed and "--endpoint-reconciler-type=none" not in changed
    for flag in (
        "--secure-port=6443",
        "--bind-address=0.0.0.0",
        "--advertise-address=10.250.0.1",
        "--kubelet-client-certificate=c",
        "--kubelet-client-key=k",
        "--kubelet-preferred-address-types=InternalIP",
    ):
        assert flag in changed
    manager = ["kcm", "--controllers=namespace,endpoint", "--leader-elect=false"]
    changed = control_plane.node_flags(
        "kube-controller-manager", manager, node_ip="x", kubelet_client_cert="c", kubelet_client_key="k"
    )
    controllers = changed[1].removeprefix("--controllers=").split(",")
    assert controllers[:2] == ["namespace", "endpoint"] and controllers.count("endpoint") == 1
    assert set(control_plane.NODE_CONTROLLERS) <= set(controllers)
    assert changed[2] == "--leader-elect=false"
    assert control_plane.node_flags(
        "etcd", ["etcd"], node_ip="x", kubelet_client_cert="", kubelet_client_key=""
    ) == ["etcd"]


MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime shared:6 - cgroup cgroup rw,cpu
31 25 0:27 / /sys/fs/cgroup/memory rw,relatime shared:7 - cgroup cgroup rw,memory
32 25 0:28 / /sys/fs/cgroup/systemd rw,relatime shared:8 - cgroup cgroup rw,name=systemd
33 25 0:29 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw
"""
PROC_CGROUP = """\
4:name=systemd:/
2:memory:/machinery/abc
1:cpu:/
0::/
"""


def test_the_runs_cgroup_root_is_below_the_runners_deepest_cgroup_in_every_hierarchy() -> None:
    found = cgroups.hierarchies(MOUNTINFO)
    assert [(h.mountpoint.name, h.version, set(h.controllers)) for h in found] == [
        ("cpu", 1, {"cpu"}),
        ("memory", 1, {"memory"}),
        ("systemd", 1, {"name=systemd"}),
        ("unified", 2, set()),
    ]
    own = cgroups.own_cgroups(PROC_CGROUP)
    paths = [cgroups.runner_path(h, own) for h in found]
    assert paths == ["/", "/machinery/abc", "/", "/"]
    assert cgroups.deepest_common(paths) == "/machinery/abc"
    with pytest.raises(cgroups.CgroupError, match="do not nest"):
        cgroups.deepest_common(["/a/b", "/c"])


def test_a_hierarchy_mounted_from_a_sub_cgroup_is_refused() -> None:
    with pytest.raises(cgroups.CgroupError, match="not its root"):
        cgroups.hierarchies("30 25 0:26 /kubepods /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n")


def test_a_process_joins_the_cgroups_before_it_runs(tmp_path: Path) -> None:
    """The prefix writes the shell's PID (which ``exec`` keeps) to every ``cgroup.procs``, then runs
    the command; a failed write runs nothing."""
    procs = [tmp_path / "a.procs", tmp_path / "b procs"]
    done = subprocess.run([*cgroup_join_argv(procs), "sh", "-c", "echo $$"], capture_output=True, text=True)
    pid = done.stdout.strip()
    assert pid and all(p.read_text().strip() == pid for p in procs)
    refused = subprocess.run(
        [*cgroup_join_argv([tmp_path / "missing" / "cgroup.procs"]), "echo", "ran"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0 and "ran" not in refused.stdout


def test_the_mount_namespace_replaces_run_var_lib_and_var_log_with_work_directories() -> None:
    assert mounts.host_directory(WORK / "host", "/var/lib") == WORK / "host" / "var-lib"
    with pytest.raises(ValueError, match="under /run"):
        mounts.check_workdir(Path("/run/node"))
    mounts.check_workdir(WORK)
    before = [("/", "ext4", "/dev/vda"), ("/proc", "proc", "proc")]
    after = [*before, ("/tmp/x", "tmpfs", "tmpfs")]
    assert mounts.new_mounts(before, after) == ["/tmp/x (tmpfs tmpfs)"]
    assert mounts.new_mounts(after, before) == []


def test_a_kernel_setting_that_moves_is_named_with_both_values() -> None:
    before = {"kernel/panic": "1", "vm/overcommit_memory": "0"}
    assert host.moved(before, dict(before)) == []
    assert host.moved(before, {"kernel/panic": "10", "vm/overcommit_memory": "0"}) == [
        "kernel/panic: 1 -> 10"
    ]
    assert host.moved(before, {"kernel/panic": "1"}) == []  # read in another network namespace


def test_the_kernel_settings_read_are_the_machines_global_ones() -> None:
    settings = host.kernel_settings()
    assert "kernel/panic" in settings and "vm/overcommit_memory" in settings
    assert not any(key in settings for key in host.VOLATILE)
    assert not any(key.startswith("net/") and key not in host.GLOBAL_NETWORK_KEYS for key in settings)


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("ghcr.io/example/app:1.0.0", "ghcr.io/example/app:1.0.0"),
        ("docker.io/vllm/vllm-openai:v0.6.3", "docker.io/vllm/vllm-openai:v0.6.3"),
        ("nginx", "docker.io/library/nginx:latest"),
        ("jupyter/base-notebook:2024-12-02", "docker.io/jupyter/base-notebook:2024-12-02"),
        ("localhost/app", "localhost/app:latest"),
        (
            "registry.example.com:5000/app@sha256:" + "0" * 64,
            "registry.example.com:5000/app@sha256:" + "0" * 64,
        ),
    ],
)
def test_image_names_are_what_containerds_cri_looks_up(name: str, normalized: str) -> None:
    assert images.normalized(name) == normalized


def test_the_test_app_is_imported_under_every_image_the_stacks_name() -> None:
    names = images.stack_images(sorted(STACKS.glob("*.yaml")))
    assert "ghcr.io/flyteorg/flyte-app-dashboard:v1.4.2" in names
    assert "ghcr.io/example/index-sync:0.4.1" in names  # an image in a pod template
    assert len(names) == len(set(names))


def test_knatives_data_plane_runs_the_images_packed_here_with_small_requests(tmp_path: Path) -> None:
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "activator", "namespace": "knative-serving"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "activator",
                            "image": "ko://knative.dev/serving/cmd/activator",
                            "resources": {"requests": {"cpu": "300m"}, "limits": {"cpu": "1"}},
                        }
                    ]
                }
            }
        },
    }
    edited = dataplane.edit(deployment, images={"activator": "ko.local/activator:v1"})
    container = edited["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "ko.local/activator:v1"
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["resources"] == {"requests": dataplane.DATA_PLANE_REQUESTS, "limits": {"cpu": "1"}}
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"].startswith("ko://")
    with pytest.raises(ValueError, match="no image for ko://"):
        dataplane.edit(deployment, images={})
    share = tmp_path / "knative"
    for relative in (*dataplane.RBAC_FILES, *dataplane.DEPLOYMENT_FILES):
        (share / relative).parent.mkdir(parents=True, exist_ok=True)
        (share / relative).write_text(yaml.safe_dump(deployment))
    objects = dataplane.data_plane(share, images={"activator": "ko.local/activator:v1"})
    assert len(objects) == len(dataplane.RBAC_FILES) + len(dataplane.DEPLOYMENT_FILES)


def test_traefik_is_told_both_services_and_calls_nobody() -> None:
    args = configs.traefik_args(
        public_port=80, private_port=8081, ping_port=9, services=[("ns", "public"), ("ns", "private")]
    )
    assert "--global.checknewversion=false" in args and "--global.sendanonymoususage=false" in args
    assert "--providers.knative.privateservice.name=private" in args
    assert "--providers.knative.publicservice.name=public" in args
    patches = dict(dataplane.config_patches("ko.local/queue:v1"))
    assert patches["config-network"]["data"]["ingress-class"] == dataplane.TRAEFIK_INGRESS_CLASS
    assert patches["config-deployment"]["data"]["queue-sidecar-image"] == "ko.local/queue:v1"
