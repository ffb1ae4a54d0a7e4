"""``FlyteManager`` and the Knative config patches under Pulumi mocks.

``CaptureMocks`` sees a resource's type, name and inputs but not its options, so these tests also
install a mock monitor that records the options of each registration as the engine would receive
them (``retainOnDelete``, parent, dependencies): what is asserted is what goes over the wire.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from pulumi.runtime.mocks import MockMonitor

from components.knative import register_knative_config
from components.manager import TYPE_FLYTE_MANAGER, FlyteManager, FlyteManagerArgs
from flyte_apps.core.config.models import PlatformConfig
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.knative_settings import KnativeConfig, build_knative_objects, load_knative_config
from flyte_apps.core.manager.models import load_manager_config
from flyte_apps.core.manager.objects import build_manager_objects
from flyte_apps.core.objects import RenderedObject
from flyte_apps.core.stack import load_stack_config
from tests.support.pulumi_harness import CaptureMocks

IMAGE = "ghcr.io/flyteorg/flyte:v2.0.0"
COMPONENT = "flyte-manager"
POSTGRES = {
    "type": "postgres",
    "host": "db",
    "dbname": "flyte",
    "username": "flyte",
    "passwordSecret": {"name": "db", "key": "pw"},
}
TYPE_CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
TYPE_DEPLOYMENT = "kubernetes:apps/v1:Deployment"
TYPE_SERVICE = "kubernetes:core/v1:Service"
TYPE_CONFIG_MAP_PATCH = "kubernetes:core/v1:ConfigMapPatch"
TYPE_PROVIDER = "pulumi:providers:kubernetes"
TYPES_BY_KIND = {
    "ServiceAccount": "kubernetes:core/v1:ServiceAccount",
    "ClusterRole": "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
    "ClusterRoleBinding": "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
    "CustomResourceDefinition": TYPE_CRD,
    "ConfigMap": "kubernetes:core/v1:ConfigMap",
    "PersistentVolumeClaim": "kubernetes:core/v1:PersistentVolumeClaim",
    "Deployment": TYPE_DEPLOYMENT,
    "Service": TYPE_SERVICE,
}


@dataclass(frozen=True)
class Options:
    urn: str
    parent: str
    retain_on_delete: bool | None
    dependencies: tuple[str, ...]


class OptionsMonitor(MockMonitor):
    """The standard mock monitor, also recording the options of every registration."""

    def __init__(self, mocks: CaptureMocks) -> None:
        super().__init__(mocks)
        self.options: dict[tuple[str, str], Options] = {}

    def RegisterResource(self, request: Any) -> Any:  # the gRPC method's name
        retain = request.retainOnDelete if request.HasField("retainOnDelete") else None
        self.options[(request.type, request.name)] = Options(
            urn=self.make_urn(request.parent, request.type, request.name),
            parent=request.parent,
            retain_on_delete=retain,
            dependencies=tuple(request.dependencies),
        )
        return super().RegisterResource(request)  # type: ignore[no-untyped-call]


@dataclass
class Run:
    mocks: CaptureMocks
    monitor: OptionsMonitor
    outputs: dict[str, Any] = field(default_factory=dict)

    def inputs(self, typ: str, name: str) -> dict[str, Any]:
        (found,) = [r.inputs for r in self.mocks.resources if (r.typ, r.name) == (typ, name)]
        return found


@pytest.fixture
def run() -> Iterator[Run]:
    """Fresh mocks for each test."""
    mocks = CaptureMocks()
    monitor = OptionsMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="flyte-apps", stack="dev", preview=False, monitor=monitor)
    yield Run(mocks=mocks, monitor=monitor)


def platform(**settings: Any) -> PlatformConfig:
    return load_stack_config({"flyte-apps:platform": settings}).platform


def manager_objects(raw: dict[str, Any] | None = None) -> list[RenderedObject]:
    settings = platform(namespace="flyte", baseDomain="localhost")
    problems: list[ConfigProblem] = []
    loaded = load_manager_config({"image": IMAGE, **(raw or {})}, settings, problems)
    assert loaded is not None, problems
    return build_manager_objects(loaded, settings)


def knative_objects(raw: dict[str, Any]) -> list[RenderedObject]:
    problems: list[ConfigProblem] = []
    loaded = load_knative_config(raw, problems)
    assert problems == []
    return [] if loaded is None else build_knative_objects(loaded, platform(baseDomain="localhost"))


@pulumi.runtime.test
def register_manager(run: Run, objects: list[RenderedObject]) -> None:
    """Register a ``FlyteManager``; the decorator waits for every registration before returning."""
    provider = k8s.Provider("kubernetes")
    component = FlyteManager(COMPONENT, FlyteManagerArgs(objects), pulumi.ResourceOptions(provider=provider))
    component.runs_url.apply(lambda url: run.outputs.__setitem__("runs_url", url))
    component.queue_url.apply(lambda url: run.outputs.__setitem__("queue_url", url))


@pulumi.runtime.test
def register_patches(run: Run, objects: list[RenderedObject]) -> None:
    provider = k8s.Provider("kubernetes")
    run.outputs["patches"] = register_knative_config(objects, provider)


def child_name(obj: RenderedObject) -> str:
    return f"{COMPONENT}-{obj.kind.lower()}-{obj.name}"


# --------------------------------------------------------------------------------------------------
# FlyteManager
# --------------------------------------------------------------------------------------------------


def test_manager_registers_each_object_as_its_typed_kubernetes_resource(run: Run) -> None:
    objects = manager_objects()
    register_manager(run, objects)
    registered = sorted(
        (r.typ, r.name) for r in run.mocks.resources if r.typ not in (TYPE_FLYTE_MANAGER, TYPE_PROVIDER)
    )
    assert registered == sorted((TYPES_BY_KIND[obj.kind], child_name(obj)) for obj in objects)
    assert len(run.mocks.of_type(TYPE_FLYTE_MANAGER)) == 1
    assert len(run.mocks.of_type(TYPE_SERVICE)) == 4


@pytest.mark.parametrize("raw", [{}, {"database": POSTGRES}], ids=["sqlite", "postgres"])
def test_registered_inputs_equal_the_rendered_manifests(run: Run, raw: dict[str, Any]) -> None:
    objects = manager_objects(raw)
    register_manager(run, objects)
    for obj in objects:
        inputs = run.inputs(TYPES_BY_KIND[obj.kind], child_name(obj))
        assert inputs == obj.manifest, f"{obj.kind} {obj.name} differs between the program and render"


def test_children_are_parented_by_the_component_and_use_its_provider(run: Run) -> None:
    objects = manager_objects()
    register_manager(run, objects)
    component = run.monitor.options[(TYPE_FLYTE_MANAGER, COMPONENT)]
    for obj in objects:
        typ, name = TYPES_BY_KIND[obj.kind], child_name(obj)
        assert run.monitor.options[(typ, name)].parent == component.urn, name
        (registered,) = [r for r in run.mocks.resources if (r.typ, r.name) == (typ, name)]
        assert registered.provider is not None
        assert "$pulumi:providers:kubernetes::kubernetes::" in registered.provider, name


def test_only_the_crd_is_retained_on_delete(run: Run) -> None:
    objects = manager_objects()
    register_manager(run, objects)
    retained = {name for (typ, name), options in run.monitor.options.items() if options.retain_on_delete}
    assert retained == {f"{COMPONENT}-customresourcedefinition-taskactions.flyte.org"}


def test_deployment_waits_for_everything_but_the_services(run: Run) -> None:
    objects = manager_objects()
    register_manager(run, objects)
    deployment = run.monitor.options[(TYPE_DEPLOYMENT, f"{COMPONENT}-deployment-flyte-manager")]
    expected = {
        run.monitor.options[(TYPES_BY_KIND[obj.kind], child_name(obj))].urn
        for obj in objects
        if obj.kind not in ("Deployment", "Service")
    }
    assert set(deployment.dependencies) == expected
    assert len(expected) == 6  # ServiceAccount, ClusterRole, binding, CRD, ConfigMap, claim


def test_manager_outputs_are_the_in_cluster_urls(run: Run) -> None:
    register_manager(run, manager_objects())
    assert run.outputs == {
        "runs_url": "http://flyte-manager-runs.flyte.svc.cluster.local:8090",
        "queue_url": "http://flyte-manager-queue.flyte.svc.cluster.local:8089",
    }


def test_manager_without_the_crd_registers_no_crd(run: Run) -> None:
    register_manager(run, manager_objects({"installCrd": False}))
    assert run.mocks.of_type(TYPE_CRD) == []
    assert len(run.mocks.of_type(TYPE_DEPLOYMENT)) == 1


def test_manager_refuses_objects_it_does_not_own(run: Run) -> None:
    patches = knative_objects({"manageConfig": True})
    with pytest.raises(ValueError, match="is not an object the manager component registers"):
        register_manager(run, [*manager_objects(), patches[0]])


# --------------------------------------------------------------------------------------------------
# Knative config patches
# --------------------------------------------------------------------------------------------------


def test_knative_patches_are_retained_server_side_apply_patches(run: Run) -> None:
    objects = knative_objects({"manageConfig": True})
    register_patches(run, objects)
    patches = run.mocks.of_type(TYPE_CONFIG_MAP_PATCH)
    assert sorted(p.name for p in patches) == [
        "knative-serving-config-autoscaler",
        "knative-serving-config-defaults",
        "knative-serving-config-domain",
        "knative-serving-config-network",
    ]
    for obj in objects:
        name = f"{obj.namespace}-{obj.name}"
        assert run.inputs(TYPE_CONFIG_MAP_PATCH, name) == obj.manifest
        assert run.monitor.options[(TYPE_CONFIG_MAP_PATCH, name)].retain_on_delete is True
    assert all(p.provider and "pulumi:providers:kubernetes::kubernetes" in p.provider for p in patches)
    assert len(run.outputs["patches"]) == 4


def test_knative_config_is_not_patched_unless_managed(run: Run) -> None:
    objects = knative_objects({"manageConfig": False})
    register_patches(run, objects)
    assert run.mocks.of_type(TYPE_CONFIG_MAP_PATCH) == []


def test_knative_patching_refuses_an_owned_object(run: Run) -> None:
    owned = RenderedObject(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "y"}}
    )
    with pytest.raises(ValueError, match="is not a ConfigMap patch"):
        register_patches(run, [*build_knative_objects(KnativeConfig("knative-serving"), platform()), owned])
