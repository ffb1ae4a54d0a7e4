"""``FlyteManager`` and the Knative config patches under Pulumi mocks: what is asserted is what the
harness's monitor saw go over the wire (inputs, parent, provider, dependencies, ``retainOnDelete``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from components.knative import register_knative_config
from components.manager import TYPE_FLYTE_MANAGER, FlyteManager, FlyteManagerArgs
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.knative_settings import KnativeConfig, build_knative_objects, load_knative_config
from flyte_apps.core.objects import RenderedObject
from tests.support.manager import POSTGRES, manager_objects, platform
from tests.support.pulumi_harness import CaptureMonitor, Registered, install
from tests.support.tokens import (
    TYPE_CONFIG_MAP_PATCH,
    TYPE_CRD,
    TYPE_DEPLOYMENT,
    TYPE_PROVIDER,
    TYPE_SERVICE,
    TYPES_BY_KIND,
)

COMPONENT = "flyte-manager"
PROVIDER = "kubernetes"


@dataclass
class Run:
    capture: CaptureMonitor
    outputs: dict[str, Any] = field(default_factory=dict)

    def child(self, obj: RenderedObject) -> Registered:
        return self.capture.one(TYPES_BY_KIND[obj.kind], child_name(obj))


@pytest.fixture
def run() -> Iterator[Run]:
    """Fresh mocks for each test."""
    capture, _ = install()
    yield Run(capture=capture)


def rendered(raw: dict[str, Any] | None = None) -> list[RenderedObject]:
    """The manager's objects in namespace ``flyte`` (which its URLs name)."""
    return manager_objects(raw, namespace="flyte", baseDomain="localhost")


def knative_objects(raw: dict[str, Any]) -> list[RenderedObject]:
    problems: list[ConfigProblem] = []
    loaded = load_knative_config(raw, problems)
    assert problems == []
    return [] if loaded is None else build_knative_objects(loaded, platform(baseDomain="localhost"))


@pulumi.runtime.test
def register_manager(run: Run, objects: list[RenderedObject]) -> None:
    """Register a ``FlyteManager``; the decorator waits for every registration before returning."""
    provider = k8s.Provider(PROVIDER)
    component = FlyteManager(COMPONENT, FlyteManagerArgs(objects), pulumi.ResourceOptions(provider=provider))
    component.runs_url.apply(lambda url: run.outputs.__setitem__("runs_url", url))
    component.queue_url.apply(lambda url: run.outputs.__setitem__("queue_url", url))


@pulumi.runtime.test
def register_patches(run: Run, objects: list[RenderedObject]) -> None:
    provider = k8s.Provider(PROVIDER)
    run.outputs["patches"] = register_knative_config(objects, pulumi.ResourceOptions(provider=provider))


def child_name(obj: RenderedObject) -> str:
    return f"{COMPONENT}-{obj.kind.lower()}-{obj.name}"


# --------------------------------------------------------------------------------------------------
# FlyteManager
# --------------------------------------------------------------------------------------------------


def test_manager_registers_each_object_as_its_typed_kubernetes_resource(run: Run) -> None:
    objects = rendered()
    register_manager(run, objects)
    registered = sorted(
        (r.typ, r.name) for r in run.capture.registered if r.typ not in (TYPE_FLYTE_MANAGER, TYPE_PROVIDER)
    )
    assert registered == sorted((TYPES_BY_KIND[obj.kind], child_name(obj)) for obj in objects)
    assert len(run.capture.of_type(TYPE_FLYTE_MANAGER)) == 1
    assert len(run.capture.of_type(TYPE_SERVICE)) == 4


@pytest.mark.parametrize("raw", [{}, {"database": POSTGRES}], ids=["sqlite", "postgres"])
def test_registered_inputs_equal_the_rendered_manifests(run: Run, raw: dict[str, Any]) -> None:
    objects = rendered(raw)
    register_manager(run, objects)
    assert objects, "the manager renders objects"
    for obj in objects:
        assert run.child(obj).inputs == obj.manifest, (
            f"{obj.kind} {obj.name} differs between the program and render"
        )


def test_children_are_parented_by_the_component_and_use_its_provider(run: Run) -> None:
    objects = rendered()
    register_manager(run, objects)
    component = run.capture.one(TYPE_FLYTE_MANAGER, COMPONENT)
    provider = run.capture.one(TYPE_PROVIDER, PROVIDER)
    for obj in objects:
        child = run.child(obj)
        assert child.parent == component.urn, child.urn
        assert child.provider_urn == provider.urn, child.urn
    assert len(run.capture.children_of(component)) == len(objects)


def test_only_the_crd_is_retained_on_delete(run: Run) -> None:
    objects = rendered()
    register_manager(run, objects)
    retained = {r.name for r in run.capture.registered if r.retain_on_delete}
    assert retained == {f"{COMPONENT}-customresourcedefinition-taskactions.flyte.org"}


def test_deployment_waits_for_its_rbac_config_volume_and_crd_but_not_the_services(run: Run) -> None:
    objects = rendered()
    register_manager(run, objects)
    deployment = run.capture.one(TYPE_DEPLOYMENT, f"{COMPONENT}-deployment-flyte-manager")
    waited_for = {obj.kind for obj in objects if run.child(obj).urn in deployment.explicit_dependencies}
    assert waited_for == {
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "ConfigMap",
        "PersistentVolumeClaim",
    }, deployment.urn
    assert deployment.explicit_dependencies == {
        run.child(obj).urn for obj in objects if obj.kind in waited_for
    }, deployment.urn


def test_manager_outputs_are_the_in_cluster_urls(run: Run) -> None:
    register_manager(run, rendered())
    assert run.outputs == {
        "runs_url": "http://flyte-manager-runs.flyte.svc.cluster.local:8090",
        "queue_url": "http://flyte-manager-queue.flyte.svc.cluster.local:8089",
    }


def test_manager_without_the_crd_registers_no_crd(run: Run) -> None:
    register_manager(run, rendered({"installCrd": False}))
    assert run.capture.of_type(TYPE_CRD) == []
    assert len(run.capture.of_type(TYPE_DEPLOYMENT)) == 1


def test_manager_refuses_objects_it_does_not_own(run: Run) -> None:
    patches = knative_objects({"manageConfig": True})
    with pytest.raises(ValueError, match="is not an object the manager component registers"):
        register_manager(run, [*rendered(), patches[0]])


# --------------------------------------------------------------------------------------------------
# Knative config patches
# --------------------------------------------------------------------------------------------------


def test_knative_patches_are_retained_server_side_apply_patches(run: Run) -> None:
    objects = knative_objects({"manageConfig": True})
    register_patches(run, objects)
    patches = run.capture.of_type(TYPE_CONFIG_MAP_PATCH)
    assert sorted(p.name for p in patches) == [
        "knative-serving-config-autoscaler",
        "knative-serving-config-defaults",
        "knative-serving-config-domain",
        "knative-serving-config-network",
    ]
    provider = run.capture.one(TYPE_PROVIDER, PROVIDER)
    for obj in objects:
        patch = run.capture.one(TYPE_CONFIG_MAP_PATCH, f"{obj.namespace}-{obj.name}")
        assert patch.inputs == obj.manifest, patch.urn
        assert patch.retain_on_delete is True, patch.urn
        assert patch.provider_urn == provider.urn, patch.urn
    assert len(run.outputs["patches"]) == 4


def test_knative_config_is_not_patched_unless_managed(run: Run) -> None:
    objects = knative_objects({"manageConfig": False})
    register_patches(run, objects)
    assert run.capture.of_type(TYPE_CONFIG_MAP_PATCH) == []


def test_knative_patching_refuses_an_owned_object(run: Run) -> None:
    owned = RenderedObject(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "y"}}
    )
    with pytest.raises(ValueError, match="is not a ConfigMap patch"):
        register_patches(run, [*build_knative_objects(KnativeConfig("knative-serving"), platform()), owned])
