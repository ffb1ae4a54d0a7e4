"""The app spec as a real flyteidl2 proto: mapping, validation, deterministic bytes and annotations."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from flyteidl2.app import app_definition_pb2 as app_pb
from flyteidl2.core import tasks_pb2

from flyte_apps.core.plan import plan_stack
from flyte_apps.core.spec import build_app, build_spec, decode_spec, serialize, validate_app
from flyte_apps.core.stack import load_stack_config
from tests.support.config import minimal_config
from tests.support.upstream_kservice import go_bytes


def only_app(raw: dict[str, Any]) -> Any:
    return load_stack_config(raw).apps[0]


def test_spec_maps_config_one_to_one() -> None:
    app = only_app(
        minimal_config(
            container={
                "image": "nginx:1.27",
                "command": ["nginx"],
                "args": ["-g", "daemon off;"],
                "env": {"FOO": "bar"},
                "ports": [{"containerPort": 8080, "name": "http1"}],
                "resources": {"requests": {"memory": "128Mi", "cpu": "100m"}, "limits": {"cpu": "1"}},
            },
            autoscaling={
                "minReplicas": 1,
                "maxReplicas": 5,
                "metric": "rps",
                "target": 50,
                "scaledownPeriod": "90s",
            },
            timeouts={"request": "2m"},
            serviceAccount="app-sa",
        )
    )
    spec = build_spec(app)
    assert spec.container.image == "nginx:1.27"
    assert list(spec.container.command) == ["nginx"]
    assert list(spec.container.args) == ["-g", "daemon off;"]
    assert [(kv.key, kv.value) for kv in spec.container.env] == [("FOO", "bar")]
    assert [(p.container_port, p.name) for p in spec.container.ports] == [(8080, "http1")]
    assert [(e.name, e.value) for e in spec.container.resources.requests] == [
        (tasks_pb2.Resources.CPU, "100m"),
        (tasks_pb2.Resources.MEMORY, "128Mi"),
    ]
    assert [(e.name, e.value) for e in spec.container.resources.limits] == [(tasks_pb2.Resources.CPU, "1")]
    assert (spec.autoscaling.replicas.min, spec.autoscaling.replicas.max) == (1, 5)
    assert spec.autoscaling.scaling_metric.request_rate.target_value == 50
    assert spec.autoscaling.scaledown_period.seconds == 90
    assert spec.timeouts.request_timeout.seconds == 120
    assert spec.security_context.run_as.k8s_service_account == "app-sa"
    assert spec.desired_state == app_pb.Spec.DESIRED_STATE_ACTIVE
    assert not spec.ingress.private


def test_spec_never_contains_default_or_injected_env() -> None:
    raw = minimal_config(container={"image": "nginx:1.27", "env": {"APP_ONLY": "1"}})
    raw["flyte-apps:platform"] = {"defaultEnvVars": {"PLATFORM_DEFAULT": "x"}}
    spec = build_spec(only_app(raw))
    assert [kv.key for kv in spec.container.env] == ["APP_ONLY"]


def test_cluster_local_app_sets_ingress_private() -> None:
    spec = build_spec(only_app(minimal_config(visibility="cluster-local")))
    assert spec.ingress.private


def test_stopping_does_not_change_the_spec_annotations() -> None:
    running = plan_stack(minimal_config()).apps[0]
    stopped = plan_stack(minimal_config(stopped=True)).apps[0]
    assert running.blob == stopped.blob
    assert stopped.blob.sha == stopped.kservice["metadata"]["annotations"]["flyte.org/spec-sha"]


def test_concurrency_metric_and_unbounded_max() -> None:
    spec = build_spec(
        only_app(minimal_config(autoscaling={"minReplicas": 2, "metric": "concurrency", "target": 7}))
    )
    assert spec.autoscaling.HasField("replicas")
    assert (spec.autoscaling.replicas.min, spec.autoscaling.replicas.max) == (2, 0)
    assert spec.autoscaling.scaling_metric.concurrency.target_value == 7


def test_autoscaling_without_replica_bounds_leaves_replicas_unset() -> None:
    spec = build_spec(only_app(minimal_config(autoscaling={"scaledownPeriod": "1m"})))
    assert not spec.autoscaling.HasField("replicas")
    assert spec.autoscaling.scaledown_period.seconds == 60


def test_fractional_timeout_is_kept_in_the_spec() -> None:
    spec = build_spec(only_app(minimal_config(timeouts={"request": "1.5s"})))
    assert (spec.timeouts.request_timeout.seconds, spec.timeouts.request_timeout.nanos) == (1, 500_000_000)


def test_serialization_is_deterministic_and_annotations_derive_from_the_bytes() -> None:
    spec = build_spec(
        only_app(minimal_config(container={"image": "nginx:1.27", "env": {"B": "2", "A": "1"}}))
    )
    blob = serialize(spec)
    assert blob == serialize(spec)
    assert blob.sha == hashlib.sha256(blob.data).hexdigest()[:16]
    assert len(blob.sha) == 16
    assert base64.b64decode(blob.b64) == blob.data
    assert "-" not in blob.b64 and "_" not in blob.b64


def test_spec_annotation_decodes_back_into_the_app_spec() -> None:
    app = only_app(
        minimal_config(autoscaling={"minReplicas": 1, "maxReplicas": 5}, visibility="cluster-local")
    )
    plan = plan_stack(
        minimal_config(autoscaling={"minReplicas": 1, "maxReplicas": 5}, visibility="cluster-local")
    )
    decoded = decode_spec(plan.apps[0].kservice["metadata"]["annotations"]["flyte.org/spec"])
    assert decoded == build_spec(app)
    assert decoded.autoscaling.replicas.max == 5
    assert decoded.ingress.private


def test_map_and_list_env_give_the_same_spec_when_listed_in_sorted_order() -> None:
    as_map = only_app(minimal_config(container={"image": "x:1", "env": {"B": "2", "A": "1"}}))
    as_list = only_app(
        minimal_config(
            container={"image": "x:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
        )
    )
    assert serialize(build_spec(as_map)) == serialize(build_spec(as_list))


def test_protovalidate_runs_over_the_whole_app() -> None:
    message = build_app(only_app(minimal_config()))
    assert validate_app(message, "flyte-apps:apps[0]") == []
    message.metadata.id.name = "x" * 31
    problems = validate_app(message, "flyte-apps:apps[0]")
    assert problems
    assert problems[0].path == "flyte-apps:apps[0]"
    assert "metadata.id.name" in problems[0].message


def test_app_without_secrets_or_service_account_has_no_security_context() -> None:
    # Regression: extending the (empty) secrets list marked security_context as present, adding two
    # bytes to every spec and so changing flyte.org/spec-sha against what Flyte would compute.
    spec = build_spec(only_app(minimal_config()))
    assert not spec.HasField("security_context")
    by_hand = app_pb.Spec(desired_state=app_pb.Spec.DESIRED_STATE_ACTIVE)
    by_hand.container.image = "nginx:1.27"
    by_hand.ingress.SetInParent()  # always present: Flyte's SDK asserts it (tests/core/test_spec_fields.py)
    assert serialize(spec).data == go_bytes(by_hand)
