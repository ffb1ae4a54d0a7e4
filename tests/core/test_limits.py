"""Kubernetes' ObjectMeta limits, checked before anything is applied."""

from __future__ import annotations

import pytest

from flyte_apps.core.limits import MAX_ANNOTATIONS_BYTES, annotations_size, label_problem, object_problems


def kservice(annotations: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, object]:
    return {
        "kind": "Service",
        "metadata": {"name": "x", "annotations": annotations, "labels": labels or {}},
        "spec": {"template": {"metadata": {"annotations": {}}}},
    }


def test_annotations_count_keys_and_values_in_utf8_bytes() -> None:
    assert annotations_size({"a": "é"}) == 3


def test_annotations_at_the_limit_pass_and_one_byte_more_fails() -> None:
    value = "x" * (MAX_ANNOTATIONS_BYTES - 1)
    assert object_problems(kservice({"k": value}), "flyte-apps:apps[0]") == []
    (problem,) = object_problems(kservice({"k": value + "x"}), "flyte-apps:apps[0]")
    assert problem.path == "flyte-apps:apps[0]"
    assert problem.message.startswith("the Service's annotations would take 262,145 bytes")


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("team", "ml", None),
        ("example.com/team", "ml", None),
        ("team", "x" * 64, "'team' has the value"),
        ("x" * 64, "v", "the name is not 63 or fewer"),
        ("Bad_Prefix/team", "v", "the prefix is not a DNS subdomain"),
        ("team", "-ml", "'team' has the value '-ml'"),
    ],
)
def test_label_keys_and_values_follow_kubernetes_rules(key: str, value: str, expected: str | None) -> None:
    found = label_problem(key, value)
    assert (found is None) if expected is None else (found is not None and expected in found)


def test_a_bad_label_on_the_pod_template_is_named_as_such() -> None:
    manifest = kservice({})
    manifest["spec"] = {"template": {"metadata": {"labels": {"team": "x" * 70}}}}
    (problem,) = object_problems(manifest, "flyte-apps:apps[1]")
    assert problem.message.startswith("the Service's pod template's label 'team' has the value")
