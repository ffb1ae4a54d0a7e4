"""The KService manifest, field by field, against reference (b), (c)4-5 and 7."""

from __future__ import annotations

from typing import Any

import pytest

from flyte_apps.core.plan import plan_stack
from tests.support.config import minimal_config

ENDPOINT = "http://{app_fqdn}-proj-dev.flyte.svc.cluster.local"


def kservice(raw: dict[str, Any]) -> dict[str, Any]:
    return plan_stack(raw).apps[0].kservice


def container_of(ksvc: dict[str, Any]) -> dict[str, Any]:
    containers = ksvc["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]  # type: ignore[no-any-return]


def test_new_app_gets_upstream_identity() -> None:
    ksvc = kservice(minimal_config())
    assert ksvc["apiVersion"] == "serving.knative.dev/v1"
    assert ksvc["kind"] == "Service"
    assert ksvc["metadata"]["name"] == "myapp-proj-dev"
    assert ksvc["metadata"]["namespace"] == "flyte"
    assert ksvc["metadata"]["labels"] == {
        "flyte.org/app-managed": "true",
        "flyte.org/project": "proj",
        "flyte.org/domain": "dev",
        "flyte.org/app-name": "myapp",
    }
    annotations = ksvc["metadata"]["annotations"]
    assert list(annotations) == [
        "flyte.org/spec-sha",
        "flyte.org/app-id",
        "flyte.org/app-org",
        "flyte.org/spec",
        "pulumi.com/patchForce",  # ours: the stack takes its fields back from a hand edit
    ]
    assert annotations["flyte.org/app-id"] == "proj/dev/myapp"
    assert annotations["flyte.org/app-org"] == ""


def test_identity_keeps_original_case_while_name_is_lowered() -> None:
    raw = minimal_config(name="MyApp", project="Proj", domain="Dev")
    ksvc = kservice(raw)
    assert ksvc["metadata"]["name"] == "myapp-proj-dev"
    assert ksvc["metadata"]["annotations"]["flyte.org/app-id"] == "Proj/Dev/MyApp"
    assert ksvc["metadata"]["labels"]["flyte.org/project"] == "Proj"
    env = {e["name"]: e["value"] for e in container_of(ksvc)["env"]}
    assert env["FLYTE_INTERNAL_EXECUTION_PROJECT"] == "Proj"
    assert env["INTERNAL_APP_ENDPOINT_PATTERN"] == ENDPOINT


def test_org_goes_to_the_org_annotation_only() -> None:
    ksvc = kservice(minimal_config(org="acme"))
    assert ksvc["metadata"]["annotations"]["flyte.org/app-org"] == "acme"
    assert ksvc["metadata"]["name"] == "myapp-proj-dev"


def test_pod_spec_matches_upstream_container_vector() -> None:
    ksvc = kservice(
        minimal_config(
            container={
                "image": "nginx:latest",
                "command": ["nginx"],
                "args": ["-g", "daemon off;"],
                "env": [{"name": "FOO", "value": "bar"}],
                "ports": [{"containerPort": 8080, "name": "http1"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
            }
        )
    )
    pod = ksvc["spec"]["template"]["spec"]
    assert pod["enableServiceLinks"] is False
    container = container_of(ksvc)
    assert container["name"] == "app"
    assert container["image"] == "nginx:latest"
    assert container["command"] == ["nginx"]
    assert container["args"] == ["-g", "daemon off;"]
    assert container["ports"] == [{"containerPort": 8080, "name": "http1"}]
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"}}
    assert container["env"][0] == {"name": "FOO", "value": "bar"}
    assert "serviceAccountName" not in pod


def test_env_order_is_defaults_then_app_then_injected() -> None:
    raw = minimal_config(container={"image": "x:1", "env": {"ZED": "z", "ALPHA": "a"}})
    raw["flyte-apps:platform"] = {"defaultEnvVars": [{"Z_DEFAULT": "1"}, {"A_DEFAULT": "2"}]}
    names = [e["name"] for e in container_of(kservice(raw))["env"]]
    assert names == [
        "Z_DEFAULT",
        "A_DEFAULT",
        "ALPHA",
        "ZED",
        "INTERNAL_APP_ENDPOINT_PATTERN",
        "FLYTE_INTERNAL_EXECUTION_PROJECT",
        "FLYTE_INTERNAL_EXECUTION_DOMAIN",
    ]


def test_default_env_map_comes_out_in_sorted_order_whatever_the_input_order() -> None:
    first = minimal_config()
    first["flyte-apps:platform"] = {"defaultEnvVars": {"B": "2", "A": "1", "C": "3"}}
    second = minimal_config()
    second["flyte-apps:platform"] = {"defaultEnvVars": {"C": "3", "A": "1", "B": "2"}}
    assert kservice(first) == kservice(second)
    assert [e["name"] for e in container_of(kservice(first))["env"][:3]] == ["A", "B", "C"]


def test_injected_env_vars_for_upstream_vector() -> None:
    env = container_of(kservice(minimal_config()))["env"]
    assert env == [
        {"name": "INTERNAL_APP_ENDPOINT_PATTERN", "value": ENDPOINT},
        {"name": "FLYTE_INTERNAL_EXECUTION_PROJECT", "value": "proj"},
        {"name": "FLYTE_INTERNAL_EXECUTION_DOMAIN", "value": "dev"},
    ]


@pytest.mark.parametrize(
    ("default_sa", "app_sa", "expected"),
    [("flyte2", None, "flyte2"), ("flyte2", "app-requested-sa", "app-requested-sa"), ("", None, None)],
)
def test_service_account_rule(default_sa: str, app_sa: str | None, expected: str | None) -> None:
    raw = minimal_config(**({"serviceAccount": app_sa} if app_sa else {}))
    raw["flyte-apps:platform"] = {"defaultServiceAccount": default_sa}
    assert kservice(raw)["spec"]["template"]["spec"].get("serviceAccountName") == expected


@pytest.mark.parametrize(
    ("platform", "timeouts", "expected"),
    [
        ({}, None, 300),
        ({"defaultRequestTimeout": "5m"}, None, 300),
        ({"defaultRequestTimeout": "90s"}, {"request": "2m"}, 120),
        ({}, {"request": "1.9s"}, 1),
        ({"maxRequestTimeout": "1h"}, {"request": "1h"}, 3600),
    ],
)
def test_timeout_seconds_is_always_written(
    platform: dict[str, Any], timeouts: dict[str, str] | None, expected: int
) -> None:
    raw = minimal_config(**({"timeouts": timeouts} if timeouts else {}))
    raw["flyte-apps:platform"] = platform
    assert kservice(raw)["spec"]["template"]["spec"]["timeoutSeconds"] == expected


@pytest.mark.parametrize(
    ("autoscaling", "expected"),
    [
        (None, None),
        (
            {"minReplicas": 1, "maxReplicas": 5},
            {"autoscaling.knative.dev/min-scale": "1", "autoscaling.knative.dev/max-scale": "5"},
        ),
        (
            {"minReplicas": 2},
            {"autoscaling.knative.dev/min-scale": "2", "autoscaling.knative.dev/max-scale": "0"},
        ),
        (
            {"metric": "rps", "target": 100},
            {"autoscaling.knative.dev/metric": "rps", "autoscaling.knative.dev/target": "100"},
        ),
        (
            {"metric": "concurrency", "target": 3, "scaledownPeriod": "90s"},
            {
                "autoscaling.knative.dev/metric": "concurrency",
                "autoscaling.knative.dev/target": "3",
                "autoscaling.knative.dev/window": "1m30s",
            },
        ),
        ({"scaledownPeriod": "1h"}, {"autoscaling.knative.dev/window": "1h0m0s"}),
    ],
)
def test_autoscaling_annotations(autoscaling: dict[str, Any] | None, expected: dict[str, str] | None) -> None:
    raw = minimal_config(**({"autoscaling": autoscaling} if autoscaling else {}))
    assert kservice(raw)["spec"]["template"]["metadata"].get("annotations") == expected


def test_no_secrets_means_no_template_labels() -> None:
    template = kservice(minimal_config())["spec"]["template"]
    assert "labels" not in template["metadata"]
    assert "traffic" not in kservice(minimal_config())["spec"]


def test_stopped_app_is_running_form_plus_upstream_stop_patch() -> None:
    scaling = {"minReplicas": 2, "maxReplicas": 4}
    running = kservice(minimal_config(autoscaling=scaling))
    stopped = kservice(minimal_config(autoscaling=scaling, stopped=True))
    assert stopped["metadata"]["labels"] == {
        **running["metadata"]["labels"],
        "flyte.org/app-stopped": "true",
        "networking.knative.dev/visibility": "cluster-local",
    }
    assert stopped["metadata"]["annotations"] == running["metadata"]["annotations"]
    assert stopped["spec"]["template"]["metadata"]["annotations"] == {
        "autoscaling.knative.dev/min-scale": "0",
        "autoscaling.knative.dev/max-scale": "4",
        "autoscaling.knative.dev/initial-scale": "0",
    }
    assert stopped["spec"]["template"]["spec"] == running["spec"]["template"]["spec"]


def test_restarting_a_stopped_app_restores_the_running_form() -> None:
    assert kservice(minimal_config(stopped=False)) == kservice(minimal_config())
    labels = kservice(minimal_config(stopped=False))["metadata"]["labels"]
    assert "flyte.org/app-stopped" not in labels
    assert "networking.knative.dev/visibility" not in labels


def test_cluster_local_app_carries_visibility_while_running() -> None:
    ksvc = kservice(minimal_config(visibility="cluster-local"))
    assert ksvc["metadata"]["labels"]["networking.knative.dev/visibility"] == "cluster-local"
    assert "flyte.org/app-stopped" not in ksvc["metadata"]["labels"]
