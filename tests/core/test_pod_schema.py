"""The schemas a pod template is checked against: the Knative CRD shipped as package data is
Knative's published one, its strict reading refuses what Knative refuses, and the Kubernetes PodSpec
schema is the version the tests validate rendered objects with."""

from __future__ import annotations

from typing import Final

import kubernetes_validate
import pytest
import yaml

from flyte_apps.core.pod_schema import (
    KNATIVE_SCHEMA,
    KUBERNETES_SCHEMA,
    KUBERNETES_SCHEMA_VERSION,
    PodSpecSchemas,
    load_knative_crd,
    revision_spec_schema,
    service_schema,
)
from tests.support.config import KUBERNETES_VERSION, SCHEMAS_DIR

UPSTREAM_CRD: Final = SCHEMAS_DIR / "knative-serving-v1-service-crd.yaml"
APP: Final = {"name": "app", "image": "nginx:1.27"}


def test_shipped_knative_crd_is_knatives_published_crd() -> None:
    assert load_knative_crd() == yaml.safe_load(UPSTREAM_CRD.read_text(encoding="utf-8"))


def test_shipped_crd_is_the_services_crd_with_a_revision_pod_spec() -> None:
    crd = load_knative_crd()
    assert crd["metadata"]["name"] == "services.serving.knative.dev"
    spec = revision_spec_schema(service_schema(crd))
    assert spec["required"] == ["containers"]
    assert "timeoutSeconds" in spec["properties"]
    assert "restartPolicy" not in spec["properties"]


def test_kubernetes_schema_version_is_the_one_tests_validate_with_and_is_shipped() -> None:
    assert KUBERNETES_SCHEMA_VERSION == KUBERNETES_VERSION
    assert KUBERNETES_SCHEMA_VERSION in kubernetes_validate.utils.all_versions()


def test_a_valid_pod_spec_has_no_errors() -> None:
    spec = {
        "containers": [{**APP, "ports": [{"containerPort": 8080}], "resources": {"limits": {"cpu": 1}}}],
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
    }
    assert PodSpecSchemas().errors(spec) == []


def test_knative_refuses_a_podspec_field_kubernetes_accepts() -> None:
    (error,) = PodSpecSchemas().errors({"containers": [APP], "restartPolicy": "Always"})
    assert (error.path, error.schema, error.unknown, error.kubernetes_field) == (
        ("restartPolicy",),
        KNATIVE_SCHEMA,
        "restartPolicy",
        True,
    )


def test_a_misspelled_field_is_one_error_not_one_per_schema() -> None:
    (error,) = PodSpecSchemas().errors({"containers": [{**APP, "imagePulPolicy": "Always"}]})
    assert error.path == ("containers", 0, "imagePulPolicy")
    assert (error.schema, error.kubernetes_field) == (KNATIVE_SCHEMA, False)
    assert "imagePullPolicy" in error.allowed


def test_kubernetes_checks_what_knatives_crd_leaves_open() -> None:
    errors = PodSpecSchemas().errors({"containers": [APP], "affinity": {"nodeAfinity": {}}})
    assert [(error.path, error.schema) for error in errors] == [
        (("affinity", "nodeAfinity"), KUBERNETES_SCHEMA)
    ]


def test_knatives_own_revision_fields_are_not_podspec_fields() -> None:
    """Flyte decodes a pod template into a Kubernetes PodSpec, which would drop them."""
    errors = PodSpecSchemas().errors({"containers": [APP], "containerConcurrency": 1})
    assert [(error.path, error.schema) for error in errors] == [
        (("containerConcurrency",), KUBERNETES_SCHEMA)
    ]


@pytest.mark.parametrize(
    ("spec", "path", "message"),
    [
        (
            {"containers": [{**APP, "ports": [{"containerPort": "80"}]}]},
            ("containers", 0, "ports", 0, "containerPort"),
            "'80' is not of type 'integer'",
        ),
        (
            {"containers": [{**APP, "resources": {"limits": {"cpu": "1zz"}}}]},
            ("containers", 0, "resources", "limits", "cpu"),
            "'1zz' is not a Kubernetes quantity",
        ),
        ({"containers": [{"image": "x"}]}, ("containers", 0, "name"), "is required"),
        ({}, ("containers",), "is required"),
    ],
    ids=["string-port", "bad-quantity", "container-without-name", "no-containers"],
)
def test_errors_name_their_place_and_say_what_is_wrong(
    spec: dict[str, object], path: tuple[object, ...], message: str
) -> None:
    errors = PodSpecSchemas().errors(spec)
    assert [error.path for error in errors] == [path]
    assert errors[0].message.startswith(message)


def test_validators_are_built_once_per_instance_and_only_when_needed() -> None:
    schemas = PodSpecSchemas()
    assert "knative" not in vars(schemas) and "kubernetes" not in vars(schemas)
    schemas.errors({"containers": [APP]})
    first = schemas.kubernetes
    schemas.errors({"containers": [APP]})
    assert schemas.kubernetes is first
