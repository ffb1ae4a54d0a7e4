"""The Pulumi program under mocks: what it registers is exactly what `render` prints."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from components.program import ClusterSettings, deploy, stack_exports
from flyte_apps.core import constants as c
from flyte_apps.core.plan import plan_stack
from tests.support.config import minimal_config
from tests.support.pulumi_harness import install, run_program


def test_program_registers_exactly_what_render_prints(example_config: dict[str, Any]) -> None:
    mocks, _ = install(example_config)
    run_program()
    registered = {
        (r.inputs["kind"], r.inputs["metadata"].get("namespace", ""), r.inputs["metadata"]["name"]): r
        for r in mocks.resources
        if r.typ.startswith("kubernetes:") and "providers" not in r.typ
    }
    rendered = {(obj.kind, obj.namespace, obj.name): obj for obj in plan_stack(example_config).objects()}
    assert registered.keys() == rendered.keys()
    assert len(rendered) > 10, "the example stack renders the manager and Knative settings too"
    for key, obj in rendered.items():
        resource = registered[key]
        assert resource.inputs == obj.manifest, f"{key} differs between the program and render"
        assert resource.typ.endswith("Patch") == obj.patch, f"{key}: patch in render iff a Patch resource"


def test_each_app_is_a_flyte_app_component_parenting_its_kservice(example_config: dict[str, Any]) -> None:
    mocks, _ = install(example_config)
    run_program()
    components = mocks.of_type(c.TYPE_FLYTE_APP)
    services = mocks.of_type(c.TYPE_KSERVICE)
    assert sorted(r.name for r in components) == sorted(s.inputs["metadata"]["name"] for s in services)
    assert sorted(s.name for s in services) == sorted(f"{r.name}-kservice" for r in components)
    assert all(s.provider and "pulumi:providers:kubernetes::kubernetes" in s.provider for s in services)


def test_program_builds_one_explicit_provider_from_stack_cluster_settings() -> None:
    config = minimal_config()
    config["kubernetes:context"] = "kind-flyte"
    config["flyte-apps:platform"] = {"renderYamlToDirectory": "rendered"}
    mocks, _ = install(config)
    run_program()
    providers = mocks.of_type("pulumi:providers:kubernetes")
    assert len(providers) == 1
    assert providers[0].inputs["context"] == "kind-flyte"
    assert providers[0].inputs["renderYamlToDirectory"] == "rendered"


def test_namespace_is_created_and_retained_by_default() -> None:
    mocks, _ = install(minimal_config())
    run_program()
    (namespace,) = mocks.of_type(c.TYPE_NAMESPACE)
    assert namespace.inputs["metadata"] == {
        "name": "flyte",
        "labels": {"app.kubernetes.io/managed-by": "pulumi"},
    }
    assert mocks.of_type(c.TYPE_NAMESPACE_PATCH) == []


def test_adopted_namespace_is_patched_not_created() -> None:
    config = minimal_config()
    config["flyte-apps:platform"] = {"adoptNamespace": True, "namespace": "apps"}
    mocks, _ = install(config)
    run_program()
    assert mocks.of_type(c.TYPE_NAMESPACE) == []
    (patch,) = mocks.of_type(c.TYPE_NAMESPACE_PATCH)
    assert patch.inputs["metadata"]["name"] == "apps"


def test_config_errors_register_nothing_and_log_every_problem() -> None:
    config = minimal_config(container={"image": ""}, autoscaling={"target": 5})
    mocks, logs = install(config)
    with pytest.raises(pulumi.RunError, match="2 problem"):
        run_program()
    assert [r.typ for r in mocks.resources if r.typ != "pulumi:pulumi:Stack"] == []
    errors = [r.getMessage() for r in logs.records if r.levelno >= 40]
    assert "flyte-apps:apps[0].container.image: must not be empty" in errors
    assert "flyte-apps:apps[0].autoscaling.target: needs a metric (concurrency or rps)" in errors


def test_encrypted_config_value_is_refused() -> None:
    mocks, logs = install(minimal_config(), secret_keys=["flyte-apps:apps"])
    with pytest.raises(pulumi.RunError):
        run_program()
    assert "flyte-apps:apps: encrypted (secure:) values are not supported here" in [
        r.getMessage() for r in logs.records
    ]
    assert [r.typ for r in mocks.resources if r.typ != "pulumi:pulumi:Stack"] == []


def test_stack_exports_apps_by_identity(example_config: dict[str, Any]) -> None:
    plan = plan_stack(example_config)
    values = stack_exports(plan)
    assert values["flytesnacks/development/notebook"] == {
        "kserviceName": "notebook-flytesnacks-development",
        "namespace": "flyte",
        "publicUrl": "http://notebook-flytesnacks-development.localhost:30081",
        "internalUrl": "http://notebook-flytesnacks-development.flyte.svc.cluster.local",
        "specSha": plan.apps[-1].blob.sha,
    }
    assert values["ml-serving/production/feature-store"]["publicUrl"] is None
    assert sorted(values) == sorted(app.key for app in plan.apps)


@pulumi.runtime.test
def test_app_components_expose_the_same_values_as_outputs(
    example_config: dict[str, Any],
) -> pulumi.Output[None]:
    install(example_config)
    plan = plan_stack(example_config)
    apps = deploy(plan, ClusterSettings())
    outputs = {
        key: pulumi.Output.all(
            kserviceName=app.kservice_name,
            namespace=app.namespace,
            publicUrl=app.public_url,
            internalUrl=app.internal_url,
            specSha=app.spec_sha,
        )
        for key, app in apps.items()
    }

    def check(values: dict[str, Any]) -> None:
        assert values == stack_exports(plan)

    return pulumi.Output.all(**outputs).apply(check)
