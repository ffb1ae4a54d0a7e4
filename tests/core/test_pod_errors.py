"""Bad pod templates, GPUs, accelerators and shared memory: each mistake is a config error at the key
path where it was written, nothing is rendered, and every problem of a stack is reported in one run."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import pytest
from typer.testing import CliRunner

from flyte_apps.cli.main import app as cli_app
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.plan import plan_stack
from tests.support.cli import without_locations
from tests.support.config import write_stack

APP: Final = "flyte-apps:apps[0]"
POD: Final = f"{APP}.pod.spec"
PLATFORM: Final = "flyte-apps:platform"
IMAGE: Final = "ghcr.io/acme/app:1.0"
PRIMARY: Final = {"name": "app", "image": IMAGE}
SIDECAR: Final = {"name": "sidecar", "image": "busybox:1.36"}

Expected = Sequence[tuple[str, str]]
"""(exact key path, regex searched in that problem's message), one per expected problem."""


def config(app: dict[str, Any] | None = None, **platform: Any) -> dict[str, Any]:
    """One app (``proj/dev/myapp``) with ``app``'s keys; ``platform``: platform settings."""
    raw: dict[str, Any] = {
        "flyte-apps:project": "proj",
        "flyte-apps:domain": "dev",
        "flyte-apps:apps": [{"name": "myapp", **copy.deepcopy(app or {})}],
    }
    if platform:
        raw[PLATFORM] = platform
    return raw


def pod(spec: dict[str, Any], **app: Any) -> dict[str, Any]:
    """An app whose payload is the pod template ``spec`` (plus ``app``'s keys)."""
    return config({"pod": {"spec": spec}, **app})


def gpu(resources: dict[str, Any], **app: Any) -> dict[str, Any]:
    return config({"container": {"image": IMAGE, "resources": resources}, **app})


def problems_of(raw: dict[str, Any]) -> list[ConfigProblem]:
    with pytest.raises(ConfigError) as caught:
        plan_stack(raw)
    return caught.value.problems


def assert_problems(problems: Sequence[ConfigProblem], expected: Expected) -> None:
    """Exactly the expected paths are reported, each with a message matching its pattern."""
    listed = "\n".join(str(problem) for problem in problems)
    assert sorted(problem.path for problem in problems) == sorted(path for path, _ in expected), listed
    for path, pattern in expected:
        messages = [problem.message for problem in problems if problem.path == path]
        assert any(re.search(pattern, message) for message in messages), (
            f"no {path} matches /{pattern}/:\n{listed}"
        )


CASES: Final = [
    # --- the payload
    pytest.param(
        config(), [(f"{APP}.container", r"^is required \(or a pod template: pod\)$")], id="no-payload"
    ),
    pytest.param(
        config({"container": {}}),
        [(f"{APP}.container.image", r"^is required$")],
        id="container-without-image",
    ),
    # --- Knative's schema first, strict; then Kubernetes'
    pytest.param(
        pod({"containers": [PRIMARY], "restartPolicy": "Always"}),
        [
            (
                f"{POD}.restartPolicy",
                r"Knative does not allow 'restartPolicy' here, although Kubernetes' PodSpec",
            )
        ],
        id="podspec-field-knative-refuses",
    ),
    pytest.param(
        pod({"containers": [{**PRIMARY, "imagePulPolicy": "Always"}]}),
        [
            (
                f"{POD}.containers[0].imagePulPolicy",
                r"unknown field 'imagePulPolicy'; did you mean 'imagePullPolicy'",
            )
        ],
        id="misspelled-container-field",
    ),
    pytest.param(
        pod({"containers": [{**PRIMARY, "ports": [{"containerPort": "8080"}]}]}),
        [(f"{POD}.containers[0].ports[0].containerPort", r"'8080' is not of type 'integer'")],
        id="port-as-a-string",
    ),
    pytest.param(
        pod({"containers": [PRIMARY], "affinity": {"nodeAfinity": {}}}),
        [
            (
                f"{POD}.affinity.nodeAfinity",
                r"did you mean 'nodeAffinity'\? \(Kubernetes' PodSpec schema, v1\.37\)",
            )
        ],
        id="kubernetes-checks-what-knative-leaves-open",
    ),
    pytest.param(
        pod(
            {
                "containers": [PRIMARY],
                "tolerations": [{"key": "a", "effect": "NoExecute", "tolerationSeconds": "60"}],
            }
        ),
        [(f"{POD}.tolerations[0].tolerationSeconds", r"'60' is not of type 'integer'")],
        id="toleration-seconds-as-a-string",
    ),
    pytest.param(
        pod({"containers": [PRIMARY], "containerConcurrency": 4}),
        [
            (
                f"{POD}.containerConcurrency",
                r"'containerConcurrency' is a field of Knative's revision, not of a",
            )
        ],
        id="no-containers-key",
    ),
    # --- containers
    pytest.param(
        pod({"containers": []}),
        [(f"{POD}.containers", r"must list at least one container")],
        id="no-containers",
    ),
    pytest.param(
        pod({"containers": [{**SIDECAR, "ports": [{"containerPort": 8080}]}, PRIMARY]}),
        [(f"{POD}.containers[1].name", r"the primary container 'app' must come first: .* containers\[0\]")],
        id="primary-container-not-first",
    ),
    pytest.param(
        pod({"containers": [SIDECAR]}),
        [(f"{POD}.containers", r"no container is named 'app', the primary container \(name it so, or set")],
        id="no-primary-container",
    ),
    pytest.param(
        config({"pod": {"primaryContainerName": "server", "spec": {"containers": [PRIMARY]}}}),
        [(f"{APP}.pod.primaryContainerName", r"^no container is named 'server', the primary container$")],
        id="named-primary-container-missing",
    ),
    pytest.param(
        config({"pod": {"primaryContainerName": "Server", "spec": {"containers": [PRIMARY]}}}),
        [
            (f"{APP}.pod.primaryContainerName", r"'Server' is not a valid container name"),
            (f"{APP}.pod.primaryContainerName", r"no container is named 'Server'"),
        ],
        id="primary-container-name-not-a-dns-label",
    ),
    pytest.param(
        pod(
            {
                "containers": [
                    {**PRIMARY, "ports": [{"containerPort": 8080}]},
                    {**SIDECAR, "name": "queue-proxy"},
                ]
            }
        ),
        [(f"{POD}.containers[1].name", r"'queue-proxy' is Knative's own sidecar")],
        id="container-named-queue-proxy",
    ),
    pytest.param(
        pod({"containers": [{**PRIMARY, "ports": [{"containerPort": 8080}]}, {**SIDECAR, "name": "app"}]}),
        [
            (
                f"{POD}.containers[1].name",
                r"duplicate container name 'app' \(also at .*containers\[0\]\.name\)",
            )
        ],
        id="duplicate-container-name",
    ),
    pytest.param(
        pod(
            {"containers": [{**PRIMARY, "ports": [{"containerPort": 8080}]}, {**SIDECAR, "name": "Side_Car"}]}
        ),
        [(f"{POD}.containers[1].name", r"'Side_Car' is not a valid container name")],
        id="container-name-not-a-dns-label",
    ),
    pytest.param(
        pod(
            {
                "containers": [
                    {**PRIMARY, "ports": [{"containerPort": 8080}]},
                    {**SIDECAR, "ports": [{"containerPort": 9000}]},
                ]
            }
        ),
        [(f"{POD}.containers[1].ports", r"only one container may have a port: Knative serves one container")],
        id="two-containers-with-a-port",
    ),
    pytest.param(
        pod({"containers": [PRIMARY, SIDECAR]}),
        [(f"{POD}.containers", r"with several containers, one must have a port")],
        id="several-containers-none-with-a-port",
    ),
    pytest.param(
        pod({"containers": [{**PRIMARY, "ports": [{"containerPort": 8080}, {"containerPort": 8081}]}]}),
        [(f"{POD}.containers[0].ports", r"Knative allows at most one container port")],
        id="two-ports",
    ),
    pytest.param(
        pod({"containers": [{**PRIMARY, "ports": [{"containerPort": 8012, "name": "http"}]}]}),
        [
            (
                f"{POD}.containers[0].ports[0].containerPort",
                r"port 8012 is reserved by Knative's queue-proxy",
            ),
            (
                f"{POD}.containers[0].ports[0].name",
                r"only the port names 'http1' and 'h2c' \(or none\), not 'http'",
            ),
        ],
        id="reserved-port-with-a-bad-name",
    ),
    pytest.param(
        pod({"containers": [{"name": "app"}]}),
        [(f"{POD}.containers[0].image", r"^is required \(here or in container\.image\)$")],
        id="no-image-after-the-merge",
    ),
    pytest.param(
        pod({"containers": [{"name": "app"}]}, container={"ports": [{"containerPort": 8080}]}),
        [(f"{POD}.containers[0].image", r"^is required \(here or in container\.image\)$")],
        id="no-image-in-the-container-either",
    ),
    pytest.param(
        pod({"containers": [SIDECAR]}, container={"ports": [{"containerPort": 8080}]}),
        [(f"{APP}.container.image", r"^is required \(here or in container\.image\)$")],
        id="no-image-for-a-primary-container-the-pod-does-not-list",
    ),
    pytest.param(
        pod({"containers": [{**PRIMARY, "ports": [{"containerPort": 8080}]}, {"name": "side"}]}),
        [(f"{POD}.containers[1].image", r"^is required$")],
        id="sidecar-without-image",
    ),
    # --- env of containers[0]
    pytest.param(
        pod(
            {"containers": [{**PRIMARY, "env": [{"name": "FLYTE_INTERNAL_EXECUTION_PROJECT", "value": "x"}]}]}
        ),
        [(f"{POD}.containers[0].env[0].name", r"is set by Flyte for every app")],
        id="pod-env-overrides-an-injected-variable",
    ),
    pytest.param(
        pod(
            {"containers": [{"name": "app", "env": [{"name": "A", "value": "2"}]}]},
            container={"image": IMAGE, "env": {"A": "1"}},
        ),
        [
            (
                f"{POD}.containers[0].env[0].name",
                r"duplicate environment variable 'A' \(also at flyte-apps:apps\[0\]\.container\.env\)",
            )
        ],
        id="pod-env-repeats-the-apps-env",
    ),
    # --- volumes and mounts
    pytest.param(
        pod({"containers": [PRIMARY], "volumes": [{"name": "cache", "emptyDir": {}}]}),
        [(f"{POD}.volumes[0]", r"volume 'cache' is not mounted by any container; Knative refuses")],
        id="volume-no-container-mounts",
    ),
    pytest.param(
        pod({"containers": [{**PRIMARY, "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]}]}),
        [(f"{POD}.containers[0].volumeMounts[0].name", r"no volume named 'cache'")],
        id="mount-of-a-volume-that-does-not-exist",
    ),
    pytest.param(
        pod(
            {
                "containers": [{**PRIMARY, "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}]}],
                "volumes": [{"name": "config", "configMap": {"name": "app"}}],
            }
        ),
        [
            (
                f"{POD}.containers[0].volumeMounts[0].readOnly",
                r"must be true: Knative mounts configMap volumes",
            )
        ],
        id="writable-config-map-mount",
    ),
    pytest.param(
        pod(
            {
                "containers": [
                    {
                        **PRIMARY,
                        "volumeMounts": [
                            {"name": "cache", "mountPath": "/tmp"},
                            {"name": "cache", "mountPath": "relative"},
                            {"name": "cache", "mountPath": "/data/"},
                            {"name": "cache", "mountPath": "/data"},
                        ],
                    }
                ],
                "volumes": [{"name": "cache", "emptyDir": {}}],
            }
        ),
        [
            (f"{POD}.containers[0].volumeMounts[0].mountPath", r"'/tmp' is reserved by Knative"),
            (f"{POD}.containers[0].volumeMounts[1].mountPath", r"must be an absolute path"),
            (
                f"{POD}.containers[0].volumeMounts[3].mountPath",
                r"'/data' is mounted twice .*volumeMounts\[2\]",
            ),
        ],
        id="mount-paths",
    ),
    pytest.param(
        pod(
            {
                "containers": [{**PRIMARY, "volumeMounts": [{"name": "a", "mountPath": "/a"}]}],
                "volumes": [{"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}}],
            }
        ),
        [(f"{POD}.volumes[1].name", r"duplicate volume name 'a'")],
        id="duplicate-volume",
    ),
    # --- resources of pod containers
    pytest.param(
        pod(
            {"containers": [{**PRIMARY, "resources": {"limits": {"gpu": 1, "storage": "1Gi", "cpu": "1zz"}}}]}
        ),
        [
            (
                f"{POD}.containers[0].resources.limits.gpu",
                r"'gpu' is not a Kubernetes resource name: .*'nvidia\.com/gpu'",
            ),
            (
                f"{POD}.containers[0].resources.limits.storage",
                r"'storage' is not a resource Kubernetes accepts",
            ),
            (f"{POD}.containers[0].resources.limits.cpu", r"^'1zz' is not a Kubernetes quantity$"),
        ],
        id="pod-resource-names-and-quantities",
    ),
    pytest.param(
        pod({"containers": [{**PRIMARY, "resources": {"limits": {"nvidia.com/gpu": "500m"}}}]}),
        [
            (
                f"{POD}.containers[0].resources.limits.nvidia.com/gpu",
                r"whole positive number of GPUs, not '500m'",
            )
        ],
        id="pod-gpu-fraction",
    ),
    # --- GPUs
    *[
        pytest.param(
            gpu({"limits": {"gpu": value}}),
            [(f"{APP}.container.resources.limits.gpu", r"must be a whole positive number of GPUs")],
            id=f"gpu-{label}",
        )
        for value, label in ((0, "zero"), (0.5, "half"), ("1Gi", "with-a-unit"), ("2.0", "decimal"))
    ],
    pytest.param(
        gpu({"limits": {"gpu": -1}}),
        [(f"{APP}.container.resources.limits.gpu", r"'-1' is negative|-1 is negative")],
        id="gpu-negative",
    ),
    pytest.param(
        gpu({"requests": {"gpu": 2}, "limits": {"gpu": 1}}),
        [(f"{APP}.container.resources.requests.gpu", r"requests 2 GPU\(s\) but the limit is 1")],
        id="gpu-request-and-limit-differ",
    ),
    pytest.param(
        pod(
            {
                "containers": [
                    {
                        **PRIMARY,
                        "resources": {"requests": {"nvidia.com/gpu": 2}, "limits": {"nvidia.com/gpu": 4}},
                    }
                ]
            }
        ),
        [
            (
                f"{POD}.containers[0].resources.requests.nvidia.com/gpu",
                r"requests 2 GPU\(s\) but the limit is 4",
            )
        ],
        id="pod-gpu-request-and-limit-differ",
    ),
    # --- accelerator
    pytest.param(
        gpu({"limits": {"gpu": 1}}, accelerator={"partitionSize": "1g.5gb"}),
        [(f"{APP}.accelerator.device", r"^is required$")],
        id="accelerator-without-device",
    ),
    pytest.param(
        gpu({"limits": {"gpu": 1}}, accelerator={"device": "  "}),
        [(f"{APP}.accelerator.device", r"^must not be empty")],
        id="accelerator-with-a-blank-device",
    ),
    pytest.param(
        config({"container": {"image": IMAGE}, "accelerator": {"device": "nvidia-l4"}}),
        [(f"{APP}.accelerator", r"^needs a GPU count: set container\.resources\.limits\.gpu")],
        id="accelerator-without-gpus",
    ),
    pytest.param(
        gpu(
            {"limits": {"gpu": 1}},
            accelerator={"device": "nvidia-l4", "partitionSize": "1g", "unpartitioned": True},
        ),
        [(f"{APP}.accelerator.unpartitioned", r"give partitionSize or unpartitioned, not both")],
        id="partition-size-and-unpartitioned",
    ),
    pytest.param(
        gpu({"limits": {"gpu": 1}}, accelerator={"device": "NVIDIA A100/80GB"}),
        [(f"{APP}.accelerator.device", r"is not a valid Kubernetes label value .* node labels")],
        id="device-that-is-not-a-label-value",
    ),
    pytest.param(
        gpu({"limits": {"gpu": 1}}, accelerator={"device": "x", "deviceClass": "NVIDIA"}),
        [(f"{APP}.accelerator.deviceClass", r"'NVIDIA_GPU', 'GOOGLE_TPU'")],
        id="unknown-device-class",
    ),
    # --- shared memory
    pytest.param(
        config({"container": {"image": IMAGE}, "sharedMemory": "lots"}),
        [
            (
                f"{APP}.sharedMemory.sizeLimit",
                r"must be a Kubernetes quantity such as 2Gi, or auto, not 'lots'",
            )
        ],
        id="shared-memory-size-that-is-not-a-quantity",
    ),
    pytest.param(
        config({"container": {"image": IMAGE}, "sharedMemory": "0"}),
        [(f"{APP}.sharedMemory.sizeLimit", r"no memory at all; use auto")],
        id="shared-memory-of-zero",
    ),
    pytest.param(
        config({"container": {"image": IMAGE}, "sharedMemory": {"mountPath": "shm", "mountName": "Shm"}}),
        [
            (f"{APP}.sharedMemory.mountPath", r"must be an absolute path"),
            (f"{APP}.sharedMemory.mountName", r"'Shm' is not a valid volume name"),
        ],
        id="shared-memory-mount",
    ),
    pytest.param(
        config({"container": {"image": IMAGE}, "sharedMemory": {"mountPath": "/var"}}),
        [(f"{APP}.sharedMemory.mountPath", r"'/var' is reserved by Knative")],
        id="shared-memory-at-a-path-knative-reserves",
    ),
    pytest.param(
        pod(
            {
                "containers": [{**PRIMARY, "volumeMounts": [{"name": "flyte-shm", "mountPath": "/dev/shm"}]}],
                "volumes": [{"name": "flyte-shm", "emptyDir": {"medium": "Memory"}}],
            },
            sharedMemory="1Gi",
        ),
        [
            (f"{APP}.sharedMemory.mountName", r"'flyte-shm' is already a volume of the pod template"),
            (
                f"{APP}.sharedMemory.mountPath",
                r"'/dev/shm' is already mounted in the primary container 'app'",
            ),
        ],
        id="shared-memory-clashes-with-the-pod-template",
    ),
    # --- pod.metadata
    pytest.param(
        config(
            {
                "pod": {
                    "metadata": {
                        "labels": {
                            "flyte.org/project": "x",
                            "serving.knative.dev/service": "x",
                            "inject-flyte-secrets": "true",
                            "organization": "acme",
                        },
                        "annotations": {
                            "flyte.secrets/s0": "x",
                            "autoscaling.knative.dev/min-scale": "1",
                            "features.networking.knative.dev/x": "y",
                        },
                    },
                    "spec": {"containers": [PRIMARY]},
                }
            },
            applyPodMetadata=True,
        ),
        [
            (
                f"{APP}.pod.metadata.labels.flyte.org/project",
                r"belongs to Flyte; pod metadata may not set it",
            ),
            (f"{APP}.pod.metadata.labels.serving.knative.dev/service", r"belongs to Knative"),
            (f"{APP}.pod.metadata.labels.inject-flyte-secrets", r"belongs to Flyte's secret webhook"),
            (f"{APP}.pod.metadata.labels.organization", r"belongs to Flyte's secret webhook"),
            (f"{APP}.pod.metadata.annotations.flyte.secrets/s0", r"belongs to Flyte"),
            (f"{APP}.pod.metadata.annotations.autoscaling.knative.dev/min-scale", r"belongs to Knative"),
            (f"{APP}.pod.metadata.annotations.features.networking.knative.dev/x", r"belongs to Knative"),
        ],
        id="applied-pod-metadata-with-keys-flyte-and-knative-own",
    ),
    pytest.param(
        config(
            {
                "pod": {
                    "metadata": {
                        "labels": {"bad key": "v", "ok": "not a value!"},
                        "annotations": {"-x": "1"},
                    },
                    "spec": {"containers": [PRIMARY]},
                }
            }
        ),
        [
            (f"{APP}.pod.metadata.labels.bad key", r"not a valid Kubernetes label key"),
            (f"{APP}.pod.metadata.labels.ok", r"'not a value!' is not a valid Kubernetes label value"),
            (f"{APP}.pod.metadata.annotations.-x", r"not a valid Kubernetes annotation key"),
        ],
        id="invalid-pod-metadata-even-when-not-applied",
    ),
    pytest.param(
        config({"pod": {"metadata": {"labels": {"on": True}}, "spec": {"containers": [PRIMARY]}}}),
        [(f"{APP}.pod.metadata.labels.on", r"input should be a valid string")],
        id="label-value-that-is-not-a-string",
    ),
    # --- platform
    pytest.param(
        config({"container": {"image": IMAGE}}, gpuResourceName="gpu"),
        [(f"{PLATFORM}.gpuResourceName", r"'gpu' is not an extended resource name")],
        id="gpu-resource-name-without-a-domain",
    ),
    pytest.param(
        config(
            {"container": {"image": IMAGE}}, gpuDeviceNodeLabel="gpu type", gpuPartitionSizeNodeLabel="-x"
        ),
        [
            (f"{PLATFORM}.gpuDeviceNodeLabel", r"not a valid node label key"),
            (f"{PLATFORM}.gpuPartitionSizeNodeLabel", r"not a valid node label key"),
        ],
        id="node-labels",
    ),
    pytest.param(
        config({"container": {"image": IMAGE}}, applyPodMetadata="yes"),
        [(f"{PLATFORM}.applyPodMetadata", r"valid boolean")],
        id="apply-pod-metadata-that-is-not-a-boolean",
    ),
]


@pytest.mark.parametrize(("raw", "expected"), CASES)
def test_one_mistake_is_reported_at_its_key_path(raw: dict[str, Any], expected: Expected) -> None:
    assert_problems(problems_of(raw), expected)


def test_a_spec_over_kubernetes_annotation_limit_is_a_config_error() -> None:
    """The spec annotation holds the whole pod template ((j)19): 256 KiB in all."""
    args = [f"--flag-{index}={'x' * 100}" for index in range(2000)]
    problems = problems_of(pod({"containers": [{**PRIMARY, "args": args}]}))
    (problem,) = problems
    assert problem.path == APP
    assert "annotations would take" in problem.message
    assert "flyte.org/spec" in problem.message and "the pod template included" in problem.message


def test_every_problem_of_every_app_is_reported_in_one_run() -> None:
    raw = config()
    raw["flyte-apps:apps"] = [
        {"name": "one", "pod": {"spec": {"containers": [SIDECAR, PRIMARY], "restartPolicy": "Never"}}},
        {
            "name": "two",
            "container": {
                "image": IMAGE,
                "resources": {"requests": {"gpu": 2}, "limits": {"gpu": 1}},
                "env": {"1X": "y"},
            },
            "accelerator": {"device": ""},
            "sharedMemory": "lots",
        },
        {
            "name": "three",
            "pod": {"spec": {"containers": [PRIMARY], "volumes": [{"name": "v", "emptyDir": {}}]}},
        },
    ]
    assert_problems(
        problems_of(raw),
        [
            ("flyte-apps:apps[0].pod.spec.restartPolicy", r"Knative does not allow"),
            ("flyte-apps:apps[0].pod.spec.containers", r"one must have a port"),
            ("flyte-apps:apps[0].pod.spec.containers[1].name", r"must come first"),
            ("flyte-apps:apps[1].container.env.1X", r"not a valid environment variable name"),
            (
                "flyte-apps:apps[1].container.resources.requests.gpu",
                r"requests 2 GPU\(s\) but the limit is 1",
            ),
            ("flyte-apps:apps[1].accelerator.device", r"must not be empty"),
            ("flyte-apps:apps[1].sharedMemory.sizeLimit", r"'lots'"),
            ("flyte-apps:apps[2].pod.spec.volumes[0]", r"not mounted"),
        ],
    )


def test_a_pod_problem_is_reported_with_the_apps_other_problems() -> None:
    """The payload is checked even when another part of the app is wrong (here: autoscaling)."""
    raw = pod({"containers": [PRIMARY], "restartPolicy": "Never"}, autoscaling={"target": 5})
    assert_problems(
        problems_of(raw),
        [
            (f"{POD}.restartPolicy", r"Knative does not allow"),
            (f"{APP}.autoscaling.target", r"needs a metric"),
        ],
    )


def test_render_prints_every_pod_problem_on_stderr_and_nothing_else(tmp_path: Path) -> None:
    raw = pod({"containers": [{**SIDECAR, "name": "queue-proxy"}, PRIMARY]})
    path = write_stack(tmp_path, raw)
    result = CliRunner().invoke(cli_app, ["render", "--config", str(path), "--project-dir", str(tmp_path)])
    assert (result.exit_code, result.stdout) == (2, "")
    assert without_locations(result.stderr).splitlines() == [
        f"error: {POD}.containers: with several containers, one must have a port: Knative needs to know "
        "which one serves",
        f"error: {POD}.containers[0].name: 'queue-proxy' is Knative's own sidecar in every app pod; "
        "rename it",
        f"error: {POD}.containers[1].name: the primary container 'app' must come first: Flyte's app "
        "service puts its environment variables into containers[0]",
    ]
