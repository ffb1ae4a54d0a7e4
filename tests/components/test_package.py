"""The component package's provider under Pulumi's mocks: what ``FlyteApp`` and ``FlyteApps`` register
for inputs as an SDK sends them (numbers as doubles, unknowns, secrets) is what ``render`` prints."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.errors import InputPropertiesError
from pulumi.provider.experimental.property_value import Computed, PropertyValue
from pulumi.provider.experimental.provider import ConstructRequest, ConstructResponse
from pulumi.runtime import rpc

from components import schema
from components.package import FlyteAppsProvider
from flyte_apps.core import constants as c
from flyte_apps.core.config.keys import KEY_APPS, KEY_DOMAIN, KEY_KNATIVE, KEY_PLATFORM, KEY_PROJECT, PREFIX
from flyte_apps.core.plan import plan_stack
from tests.support.config import REPO_ROOT
from tests.support.pulumi_harness import CaptureMonitor, install

UNKNOWN: Any = object()
"""Stands for a value another resource computes (unknown during a preview)."""


class Secret:
    def __init__(self, value: Any) -> None:
        self.value = value


def as_sent(value: Any) -> PropertyValue:
    """``value`` as an SDK sends it: every number a double."""
    if value is UNKNOWN:
        return PropertyValue(Computed())
    if isinstance(value, Secret):
        return as_sent(value.value).with_secret(True)
    if isinstance(value, dict):
        return PropertyValue({key: as_sent(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return PropertyValue([as_sent(item) for item in value])
    if isinstance(value, int) and not isinstance(value, bool):
        return PropertyValue(float(value))
    return PropertyValue(value)


@pulumi.runtime.test
def construct(
    kind: str, name: str, inputs: dict[str, Any], out: list[ConstructResponse | Exception]
) -> pulumi.Output[None]:
    provider = FlyteAppsProvider("0.0.0")

    async def run() -> None:
        request = ConstructRequest(
            kind, name, {key: as_sent(value) for key, value in inputs.items()}, pulumi.ResourceOptions()
        )
        try:
            out.append(await provider.construct(request))
        except Exception as exc:  # the test asserts on it
            out.append(exc)

    done: Awaitable[None] = asyncio.ensure_future(run())
    return pulumi.Output.from_input(done)


def run_construct(
    kind: str, name: str, inputs: dict[str, Any], *, preview: bool = False
) -> tuple[CaptureMonitor, ConstructResponse | Exception]:
    capture, _ = install()
    if preview:
        pulumi.runtime.settings.SETTINGS.dry_run = True
    out: list[ConstructResponse | Exception] = []
    try:
        construct(kind, name, inputs, out)
    finally:
        pulumi.runtime.settings.SETTINGS.dry_run = False
    assert len(out) == 1
    return capture, out[0]


def kservices(capture: CaptureMonitor) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in capture.of_type(c.TYPE_KSERVICE)}


def app_inputs(config: dict[str, Any], index: int) -> dict[str, Any]:
    """An app of the dev stack as a FlyteApp's inputs: its entry, its project/domain, the platform."""
    app = dict(config[PREFIX + KEY_APPS][index])
    app.setdefault(KEY_PROJECT, config[PREFIX + KEY_PROJECT])
    app.setdefault(KEY_DOMAIN, config[PREFIX + KEY_DOMAIN])
    return {**app, schema.INPUT_PLATFORM: config[PREFIX + KEY_PLATFORM]}


def test_a_flyte_app_registers_the_kservice_render_prints_for_the_same_app(
    example_config: dict[str, Any],
) -> None:
    rendered = {app.kservice_name: app for app in plan_stack(example_config).apps}
    for index in range(len(example_config[PREFIX + KEY_APPS])):
        inputs = app_inputs(example_config, index)
        inputs[schema.INPUT_KUBECONFIG] = "/nowhere/kubeconfig"  # a stopped app needs its cluster named
        capture, response = run_construct(c.TYPE_FLYTE_APP, f"app-{index}", inputs)
        assert isinstance(response, ConstructResponse), response
        [(name, registered)] = kservices(capture).items()
        assert registered == rendered[name].kservice, f"{name}: the package and render differ"
        component = capture.one(c.TYPE_FLYTE_APP, f"app-{index}")
        assert capture.one(c.TYPE_KSERVICE, f"app-{index}-kservice").parent == component.urn
        assert response.state[c.OUTPUT_SPEC_SHA].value == rendered[name].blob.sha
        assert response.state[c.OUTPUT_KSERVICE_NAME].value == name


def test_flyte_apps_registers_every_object_render_prints_but_the_manager(
    example_config: dict[str, Any],
) -> None:
    stack = {
        key: example_config[PREFIX + key] for key in (KEY_PLATFORM, KEY_PROJECT, KEY_DOMAIN, KEY_KNATIVE)
    }
    stack[KEY_APPS] = example_config[PREFIX + KEY_APPS]
    stack[schema.INPUT_KUBECONFIG] = "/nowhere/kubeconfig"
    capture, response = run_construct(c.TYPE_FLYTE_APPS, "stack", stack)
    assert isinstance(response, ConstructResponse), response
    without_manager = {key: value for key, value in example_config.items() if key != PREFIX + "manager"}
    plan = plan_stack(without_manager)
    registered = {
        (r.inputs["kind"], r.inputs["metadata"].get("namespace", ""), r.inputs["metadata"]["name"]): r.inputs
        for r in capture.registered
        if r.typ.startswith("kubernetes:")
    }
    rendered = {(obj.kind, obj.namespace, obj.name): obj.manifest for obj in plan.objects()}
    assert registered == rendered
    exported = response.state[schema.OUTPUT_APPS].value
    assert isinstance(exported, Mapping)
    assert set(exported) == {app.key for app in plan.apps}


def test_a_stopped_app_registers_the_packages_reaper_with_its_cluster_kept_secret(
    example_config: dict[str, Any],
) -> None:
    kubeconfig = Secret("apiVersion: v1")  # a secret by the schema: the cluster's, never the app's
    inputs = app_inputs(example_config, 0) | {"stopped": True, schema.INPUT_KUBECONFIG: kubeconfig}
    capture, response = run_construct(c.TYPE_FLYTE_APP, "stopped", inputs)
    assert isinstance(response, ConstructResponse), response
    [reaper] = capture.of_type(c.TYPE_PACKAGE_REVISION_REAPER)
    assert reaper.custom
    assert reaper.parent == capture.one(c.TYPE_FLYTE_APP, "stopped").urn
    assert reaper.inputs[schema.REAPER_SPEC_SHA] == response.state[c.OUTPUT_SPEC_SHA].value
    kubeconfig = reaper.inputs[schema.INPUT_KUBECONFIG]
    assert rpc.is_rpc_secret(kubeconfig)
    assert rpc.unwrap_rpc_secret(kubeconfig) == "apiVersion: v1"


def test_a_stopped_app_without_a_named_cluster_is_refused_by_input_path(
    example_config: dict[str, Any],
) -> None:
    _, response = run_construct(
        c.TYPE_FLYTE_APP, "stopped", app_inputs(example_config, 0) | {"stopped": True}
    )
    assert isinstance(response, InputPropertiesError)
    assert [e["property_path"] for e in response.errors or []] == ["stopped"]
    assert "KUBECONFIG is never assumed" in (response.errors or [])[0]["reason"]


def test_every_stopped_app_of_flyte_apps_without_a_named_cluster_is_refused_by_its_path(
    example_config: dict[str, Any],
) -> None:
    stack = {key: example_config[PREFIX + key] for key in (KEY_PLATFORM, KEY_PROJECT, KEY_DOMAIN)}
    apps = [dict(app) | {"stopped": False} for app in example_config[PREFIX + KEY_APPS]]
    assert len(apps) >= 3, "the dev stack has three apps or more"
    for index in (0, 2):
        apps[index]["stopped"] = True
    _, response = run_construct(c.TYPE_FLYTE_APPS, "stack", {**stack, KEY_APPS: apps})
    assert isinstance(response, InputPropertiesError)
    paths = [e["property_path"] for e in response.errors or []]
    assert paths == [f"{schema.INPUT_APPS}[0].stopped", f"{schema.INPUT_APPS}[2].stopped"]


def test_bad_inputs_fail_with_every_problem_by_input_path(example_config: dict[str, Any]) -> None:
    inputs = app_inputs(example_config, 0)
    inputs["autoscaling"] = {"minReplicas": -1}
    inputs["container"] = {**inputs["container"], "ports": [{"containerPort": 70000}]}
    inputs[schema.INPUT_PLATFORM] = {**inputs[schema.INPUT_PLATFORM], "namespace": "Not_A_Label"}
    capture, response = run_construct(c.TYPE_FLYTE_APP, "bad", inputs)
    assert isinstance(response, InputPropertiesError)
    paths = sorted(e["property_path"] for e in response.errors or [])
    assert paths == ["autoscaling.minReplicas", "container.ports[0].containerPort", "platform.namespace"]
    assert response.message == "FlyteApp 'bad' has 3 invalid input(s)"
    assert not capture.of_type(c.TYPE_KSERVICE), "nothing is registered for bad inputs"


def test_a_secret_env_value_is_refused_never_written_in_plain_text(example_config: dict[str, Any]) -> None:
    inputs = app_inputs(example_config, 0)
    inputs["container"] = {**inputs["container"], "env": [{"name": "TOKEN", "value": Secret("s3cr3t")}]}
    capture, response = run_construct(c.TYPE_FLYTE_APP, "leaky", inputs)
    assert isinstance(response, InputPropertiesError)
    assert [e["property_path"] for e in response.errors or []] == ["container.env[0].value"]
    assert "s3cr3t" not in response.message
    assert not capture.of_type(c.TYPE_KSERVICE)


def test_an_unknown_image_is_checked_at_up_and_the_known_inputs_at_preview(
    example_config: dict[str, Any],
) -> None:
    inputs = app_inputs(example_config, 0)
    inputs["container"] = {**inputs["container"], "image": UNKNOWN}
    capture, response = run_construct(c.TYPE_FLYTE_APP, "later", inputs, preview=True)
    assert isinstance(response, ConstructResponse), response
    assert isinstance(response.state[c.OUTPUT_SPEC_SHA].value, Computed)
    [kservice] = capture.of_type(c.TYPE_KSERVICE)
    assert kservice.name == "later-kservice"

    inputs["autoscaling"] = {"minReplicas": -1}
    _, response = run_construct(c.TYPE_FLYTE_APP, "later", inputs, preview=True)
    assert isinstance(response, InputPropertiesError)
    assert [e["property_path"] for e in response.errors or []] == ["autoscaling.minReplicas"]


@pytest.mark.parametrize("value", [8080, 8080.5])
def test_numbers_arrive_as_doubles_and_integral_ones_are_integers(
    example_config: dict[str, Any], value: float
) -> None:
    inputs = app_inputs(example_config, 0)
    inputs["container"] = {**inputs["container"], "ports": [{"containerPort": value}]}
    _, response = run_construct(c.TYPE_FLYTE_APP, "ports", inputs)
    if value == int(value):
        assert isinstance(response, ConstructResponse), response
    else:
        assert isinstance(response, InputPropertiesError)
        assert [e["property_path"] for e in response.errors or []] == ["container.ports[0].containerPort"]


def test_the_model_server_of_the_docs_is_the_same_kservice_from_the_package() -> None:
    docs = (REPO_ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    block = docs.split("## A model server, end to end", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    config = yaml.safe_load(block)["config"]
    [rendered] = plan_stack(config).apps
    capture, response = run_construct(c.TYPE_FLYTE_APP, "llm", app_inputs(config, 0))
    assert isinstance(response, ConstructResponse), response
    assert kservices(capture) == {rendered.kservice_name: rendered.kservice}


def test_the_yaml_example_of_the_package_docs_is_the_kservice_render_prints() -> None:
    docs = (REPO_ROOT / "docs" / "component-package.md").read_text(encoding="utf-8")
    block = docs.split("\nYAML:\n", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    properties = yaml.safe_load(block)["resources"]["dashboard"]["properties"]
    app = {key: value for key, value in properties.items() if key != schema.INPUT_PLATFORM}
    config = {PREFIX + KEY_PLATFORM: properties[schema.INPUT_PLATFORM], PREFIX + KEY_APPS: [app]}
    [rendered] = plan_stack(config).apps
    capture, response = run_construct(c.TYPE_FLYTE_APP, "dashboard", properties)
    assert isinstance(response, ConstructResponse), response
    assert kservices(capture) == {rendered.kservice_name: rendered.kservice}
