"""The Pulumi program under mocks: what it registers is exactly what `render` prints."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, Final

import pulumi
import pytest
import yaml

from components.domains import register_custom_domains
from components.manager import TYPE_FLYTE_MANAGER
from components.program import EXIT_STOPPED_BY_ENGINE, MANAGER_NAME, ClusterSettings, deploy, stack_exports
from flyte_apps.core import constants as c
from flyte_apps.core.plan import plan_stack
from tests.fakes.kube_api import FakeKubeApi
from tests.fakes.kube_semantics import CONFIG_MAPS
from tests.support.bounded_run import run_bounded
from tests.support.config import REPO_ROOT, minimal_config
from tests.support.pulumi_harness import install, run_program
from tests.support.tokens import TYPE_CONFIG_MAP_PATCH, TYPE_PROVIDER

PROVIDER = "kubernetes"


def test_program_registers_exactly_what_render_prints(example_config: dict[str, Any]) -> None:
    capture, _ = install(example_config)
    run_program()
    registered = {
        (r.inputs["kind"], r.inputs["metadata"].get("namespace", ""), r.inputs["metadata"]["name"]): r
        for r in capture.registered
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
    capture, _ = install(example_config)
    run_program()
    provider = capture.one(TYPE_PROVIDER, PROVIDER)
    components = capture.of_type(c.TYPE_FLYTE_APP)
    assert len(components) == len(plan_stack(example_config).apps) == 6
    for component in components:
        kservice = capture.one(c.TYPE_KSERVICE, f"{component.name}-kservice")
        assert kservice.inputs["metadata"]["name"] == component.name, kservice.urn
        assert kservice.parent == component.urn, kservice.urn
        assert kservice.provider_urn == provider.urn, kservice.urn
    assert len(capture.of_type(c.TYPE_KSERVICE)) == len(components)


@pytest.mark.parametrize("adopt", [False, True], ids=["created-namespace", "adopted-namespace"])
def test_apps_and_the_manager_wait_for_the_namespace(example_config: dict[str, Any], adopt: bool) -> None:
    example_config["flyte-apps:platform"] = {
        **example_config.get("flyte-apps:platform", {}),
        "adoptNamespace": adopt,
    }
    capture, _ = install(example_config)
    run_program()
    (namespace,) = capture.of_type(c.TYPE_NAMESPACE_PATCH if adopt else c.TYPE_NAMESPACE)
    waiting = [*capture.of_type(c.TYPE_FLYTE_APP), *capture.of_type(TYPE_FLYTE_MANAGER)]
    assert len(waiting) == 7, "six apps and the manager"
    for component in waiting:
        assert namespace.urn in component.explicit_dependencies, component.urn


def test_every_kservice_waits_for_every_knative_patch(example_config: dict[str, Any]) -> None:
    """Regression: the patches were registered after the apps, with no dependency, so a revision
    raced the config-defaults timeout (and now the config-features flags) it needs."""
    capture, _ = install(example_config)
    run_program()
    patches = {r.urn for r in capture.of_type(TYPE_CONFIG_MAP_PATCH)}
    assert {r.name for r in capture.of_type(TYPE_CONFIG_MAP_PATCH)} >= {
        "knative-serving-config-defaults",
        "knative-serving-config-features",
    }
    kservices = capture.of_type(c.TYPE_KSERVICE)
    assert len(kservices) == 6
    for kservice in kservices:
        assert patches <= kservice.dependencies, kservice.urn
    registered = [r.urn for r in capture.registered]
    assert max(registered.index(urn) for urn in patches) < min(registered.index(k.urn) for k in kservices)


def test_knative_patches_are_kept_on_delete(example_config: dict[str, Any]) -> None:
    """A flag in config-features may serve other teams' apps: destroying the stack never turns it off."""
    capture, _ = install(example_config)
    run_program()
    features = capture.one(TYPE_CONFIG_MAP_PATCH, "knative-serving-config-features")
    assert features.inputs["data"] == {
        c.FLAG_AFFINITY: "enabled",
        c.FLAG_TOLERATIONS: "enabled",
        c.FLAG_VOLUMES_EMPTYDIR: "enabled",
    }
    for patch in capture.of_type(TYPE_CONFIG_MAP_PATCH):
        assert patch.retain_on_delete is True, patch.urn


def test_knative_patches_are_replaced_when_they_change_never_updated_in_place(
    example_config: dict[str, Any],
) -> None:
    """A patch that changes is created again (then the old one let go: kept on delete), so that in
    that preview it has no ID and the KServices that need it skip the dry run (issue 36)."""
    capture, _ = install(example_config)
    run_program()
    patches = capture.of_type(TYPE_CONFIG_MAP_PATCH)
    assert patches, "the example stack manages Knative's config"
    for patch in patches:
        assert patch.replace_on_changes == ("*",), patch.urn
        assert patch.delete_before_replace is False, patch.urn


ADMISSION_APPS: Final = [
    {"name": "plain", "container": {"image": "nginx:1.27"}},
    {
        "name": "gpu",
        "container": {"image": "vllm:1", "resources": {"limits": {"gpu": 1}}},
        "accelerator": {"device": "nvidia-l4"},
    },
    {"name": "stopped", "container": {"image": "nginx:1.27"}, "stopped": True},
    {"name": "slow", "container": {"image": "nginx:1.27"}, "timeouts": {"request": "900s"}},
]


def admission_config() -> dict[str, Any]:
    raw = minimal_config()
    raw["flyte-apps:apps"] = ADMISSION_APPS
    raw["flyte-apps:platform"] = {"maxRequestTimeout": "1200s"}
    raw["flyte-apps:knative"] = {"manageConfig": True}
    return raw


def test_a_kservice_waits_for_the_knative_patches_its_admission_needs() -> None:
    capture, _ = install(admission_config())
    run_program()
    patches = {r.urn: r.name.removeprefix("knative-serving-") for r in capture.of_type(TYPE_CONFIG_MAP_PATCH)}
    waits = {
        r.name.removesuffix("-proj-dev-kservice"): sorted(
            patches[urn] for urn in r.input_dependencies if urn in patches
        )
        for r in capture.of_type(c.TYPE_KSERVICE)
    }
    assert waits == {
        "plain": [],
        "gpu": ["config-features"],
        "stopped": ["config-autoscaler"],
        "slow": ["config-defaults"],
    }


def test_in_a_preview_that_creates_a_patch_the_kservices_needing_it_have_unknown_annotations() -> None:
    # pulumi-kubernetes skips the dry run of an object with an unknown input: Knative's webhook would
    # refuse the GPU app's affinity until the config-features patch is applied.
    capture, _ = install(admission_config(), preview=True, created=frozenset({TYPE_CONFIG_MAP_PATCH}))
    run_program()
    kservices = {
        r.name.removesuffix("-proj-dev-kservice"): r.inputs for r in capture.of_type(c.TYPE_KSERVICE)
    }
    assert kservices, "KServices registered"
    for name, inputs in kservices.items():
        annotations = inputs["metadata"].get("annotations")
        if name == "plain":
            assert annotations == plan_stack(admission_config()).apps[0].kservice["metadata"]["annotations"]
        else:
            assert isinstance(annotations, type(pulumi.UNKNOWN)), (name, annotations)
        assert inputs["metadata"]["name"] == f"{name}-proj-dev", "a known name: no replacement in a preview"


def test_the_plans_warnings_go_to_the_pulumi_log() -> None:
    config = minimal_config(
        container={"image": "vllm/vllm-openai:v0.6.3", "resources": {"limits": {"gpu": 1}}},
        accelerator={"device": "nvidia-l4"},
    )
    _, logs = install(config)
    run_program()
    warnings = [r.getMessage() for r in logs.records if r.levelno == 30]
    assert warnings == list(plan_stack(config).warnings)
    assert len(warnings) == 2  # the feature flags it needs, and a GPU app without a probe
    assert any("kubernetes.podspec-affinity" in warning for warning in warnings)


def test_manager_children_are_parented_by_it_and_use_the_programs_provider(
    example_config: dict[str, Any],
) -> None:
    """What it waits for inside is ``test_manager_program``'s; this is the program's wiring."""
    capture, _ = install(example_config)
    run_program()
    manager = capture.one(TYPE_FLYTE_MANAGER, MANAGER_NAME)
    provider = capture.one(TYPE_PROVIDER, PROVIDER)
    children = capture.children_of(manager)
    assert sorted(r.name for r in children) == sorted(
        f"{MANAGER_NAME}-{obj.kind.lower()}-{obj.name}" for obj in plan_stack(example_config).manager
    )
    for child in children:
        assert child.provider_urn == provider.urn, child.urn


def test_program_builds_one_explicit_provider_from_stack_cluster_settings() -> None:
    config = minimal_config()
    config["kubernetes:context"] = "kind-flyte"
    config["flyte-apps:platform"] = {"renderYamlToDirectory": "rendered"}
    capture, _ = install(config)
    run_program()
    providers = capture.of_type(TYPE_PROVIDER)
    assert len(providers) == 1
    assert providers[0].inputs["context"] == "kind-flyte"
    assert providers[0].inputs["renderYamlToDirectory"] == "rendered"


def test_the_provider_names_a_cluster_identifier_so_a_new_kubeconfig_replaces_nothing() -> None:
    """Without ``clusterIdentifier`` pulumi-kubernetes replaces its provider, and so deletes and creates
    every object, whenever the kubeconfig's active cluster entry changes (another address of the same
    cluster: seen in `make e2e-faults`)."""
    capture, _ = install(minimal_config())
    run_program()
    assert capture.one(TYPE_PROVIDER, PROVIDER).inputs["clusterIdentifier"] == "flyte-apps"


def test_a_stack_moved_to_another_cluster_names_a_new_identifier() -> None:
    config = minimal_config()
    config["flyte-apps:platform"] = {"clusterIdentifier": "prod-eu-2"}
    capture, _ = install(config)
    run_program()
    assert capture.one(TYPE_PROVIDER, PROVIDER).inputs["clusterIdentifier"] == "prod-eu-2"


def test_namespace_is_created_and_retained_by_default() -> None:
    capture, _ = install(minimal_config())
    run_program()
    (namespace,) = capture.of_type(c.TYPE_NAMESPACE)
    assert namespace.inputs["metadata"] == {
        "name": "flyte",
        "labels": {"app.kubernetes.io/managed-by": "pulumi"},
    }
    assert capture.of_type(c.TYPE_NAMESPACE_PATCH) == []


def test_adopted_namespace_is_patched_not_created() -> None:
    config = minimal_config()
    config["flyte-apps:platform"] = {"adoptNamespace": True, "namespace": "apps"}
    capture, _ = install(config)
    run_program()
    assert capture.of_type(c.TYPE_NAMESPACE) == []
    (patch,) = capture.of_type(c.TYPE_NAMESPACE_PATCH)
    assert patch.inputs["metadata"]["name"] == "apps"


def test_config_errors_register_nothing_and_log_every_problem() -> None:
    config = minimal_config(container={"image": ""}, autoscaling={"target": 5})
    capture, logs = install(config)
    with pytest.raises(pulumi.RunError, match="2 problem"):
        run_program()
    assert [r.typ for r in capture.registered] == []
    errors = [r.getMessage() for r in logs.records if r.levelno >= 40]
    assert "flyte-apps:apps[0].container.image: must not be empty" in errors
    assert "flyte-apps:apps[0].autoscaling.target: needs a metric (concurrency or rps)" in errors


def test_encrypted_config_value_is_refused() -> None:
    capture, logs = install(minimal_config(), secret_keys=["flyte-apps:apps"])
    with pytest.raises(pulumi.RunError):
        run_program()
    assert "flyte-apps:apps: encrypted (secure:) values are not supported here" in [
        r.getMessage() for r in logs.records
    ]
    assert [r.typ for r in capture.registered] == []


def test_an_encrypted_value_is_reported_with_the_configs_other_problems() -> None:
    config = {**minimal_config(container={"image": ""}), "flyte-apps:domain": "dev"}
    capture, logs = install(config, secret_keys=["flyte-apps:domain"])
    with pytest.raises(pulumi.RunError, match="2 problem"):
        run_program()
    errors = [r.getMessage() for r in logs.records if r.levelno >= 40]
    assert "flyte-apps:domain: encrypted (secure:) values are not supported here" in errors
    assert "flyte-apps:apps[0].container.image: must not be empty" in errors
    assert [r.typ for r in capture.registered] == []


def registrations(capture: Any) -> dict[str, tuple[str, dict[str, Any], frozenset[str]]]:
    """Every registration by URN: its parent, inputs and dependencies."""
    return {r.urn: (r.parent, r.inputs, r.dependencies) for r in capture.registered}


def test_apps_files_are_read_from_the_project_directory_and_registered_as_the_same_apps_inline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    apps = [{"name": f"app{index}", "container": {"image": "nginx:1.27"}} for index in range(3)]
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "more.yaml").write_text(yaml.safe_dump(apps[1:]), encoding="utf-8")
    # Under mocks the SDK has no root directory; the engine runs the program there (Pulumi.yaml's).
    monkeypatch.chdir(tmp_path)
    split, _ = install(
        {**minimal_config(), "flyte-apps:apps": apps[:1], "flyte-apps:appFiles": ["apps/more.yaml"]}
    )
    run_program()
    inline, _ = install({**minimal_config(), "flyte-apps:apps": apps})
    run_program()
    assert len([r for r in split.registered if r.typ == c.TYPE_KSERVICE]) == len(apps)
    assert registrations(split) == registrations(inline)


def test_a_problem_in_an_apps_file_is_logged_at_its_line_and_nothing_is_registered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "team.yaml").write_text("- name: broken\n  container:\n    image: ''\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    capture, logs = install({**minimal_config(), "flyte-apps:appFiles": ["team.yaml", "gone.yaml"]})
    with pytest.raises(pulumi.RunError, match="2 problem"):
        run_program()
    errors = [r.getMessage() for r in logs.records if r.levelno >= 40]
    assert "team.yaml:3 flyte-apps:appFiles[0][0].container.image: must not be empty" in errors
    assert (
        "flyte-apps:appFiles[1]: 'gone.yaml' is not found (a name is relative to the project directory, "
        "where Pulumi.yaml is)" in errors
    )
    assert capture.registered == []


def test_stack_exports_apps_by_identity(example_config: dict[str, Any]) -> None:
    plan = plan_stack(example_config)
    values = stack_exports(plan)
    assert values["flytesnacks/development/notebook"] == {
        "kserviceName": "notebook-flytesnacks-development",
        "namespace": "flyte",
        "publicUrl": None,  # stopped: cluster-local, so no public URL
        "internalUrl": "http://notebook-flytesnacks-development.flyte.svc.cluster.local",
        "specSha": next(app for app in plan.apps if app.key.endswith("/notebook")).blob.sha,
        "customUrls": [],
    }
    assert values["flytesnacks/development/dashboard"]["publicUrl"] == (
        "http://dashboard-flytesnacks-development.localhost:30081"
    )
    assert values["flytesnacks/development/dashboard"]["customUrls"] == ["http://dashboard.localhost:30081"]
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
        expected = stack_exports(plan)
        for exported in expected.values():
            del exported["customUrls"]  # a CustomDomains output (test_custom_domains_expose_their_urls)
        assert values == expected

    return pulumi.Output.all(**outputs).apply(check)


# --- custom domains -------------------------------------------------------------------------------


def domain_config(**app: Any) -> dict[str, Any]:
    config = minimal_config(ingress={"subdomain": "churn", "cname": "churn.acme.dev"}, **app)
    config["flyte-apps:platform"] = {"baseDomain": "apps.acme.dev"}
    return config


def test_custom_domains_are_registered_as_render_prints_them() -> None:
    """A ClusterDomainClaim and a DomainMapping per host, beside the app, parented by one
    ``CustomDomains`` component; inputs exactly the rendered manifests."""
    config = domain_config()
    capture, _ = install(config)
    run_program()
    plan = plan_stack(config)
    (component,) = capture.of_type(c.TYPE_CUSTOM_DOMAINS)
    assert component.name == "myapp-proj-dev-domains"
    mappings = capture.of_type(c.TYPE_DOMAIN_MAPPING)
    claims = capture.of_type(c.TYPE_DOMAIN_CLAIM)
    by_name = sorted(mappings, key=lambda r: r.name)
    assert [r.inputs for r in by_name] == sorted(
        plan.apps[0].domains.mappings, key=lambda m: m["metadata"]["name"]
    )
    by_name = sorted(claims, key=lambda r: r.name)
    assert [r.inputs for r in by_name] == sorted(
        plan.apps[0].domains.claims, key=lambda m: m["metadata"]["name"]
    )
    assert (
        sorted(r.name for r in mappings)
        == sorted(r.name for r in claims)
        == [
            "churn.acme.dev",
            "churn.apps.acme.dev",
        ]
    )
    provider = capture.one(TYPE_PROVIDER, PROVIDER)
    for resource in [*mappings, *claims]:
        assert resource.parent == component.urn, resource.urn
        assert resource.provider_urn == provider.urn, resource.urn


def test_claims_are_kept_on_delete_and_mappings_wait_for_the_app_and_their_claim() -> None:
    capture, _ = install(domain_config())
    run_program()
    # Depending on the FlyteApp component reaches the engine as depending on its children.
    kservice = capture.one(c.TYPE_KSERVICE, "myapp-proj-dev-kservice")
    claims = {r.name: r for r in capture.of_type(c.TYPE_DOMAIN_CLAIM)}
    assert claims, "claims registered"
    for claim in claims.values():
        assert claim.retain_on_delete is True, claim.urn
    for mapping in capture.of_type(c.TYPE_DOMAIN_MAPPING):
        assert mapping.retain_on_delete is not True, mapping.urn
        assert {kservice.urn, claims[mapping.name].urn} <= mapping.explicit_dependencies, mapping.urn


@pytest.mark.parametrize(
    "app", [{"stopped": True}, {"visibility": "cluster-local"}], ids=["stopped", "cluster-local"]
)
def test_a_stopped_or_cluster_local_app_keeps_its_claims_and_gets_no_mapping(app: dict[str, Any]) -> None:
    capture, _ = install(domain_config(**app))
    run_program()
    assert capture.of_type(c.TYPE_DOMAIN_MAPPING) == []
    assert sorted(r.name for r in capture.of_type(c.TYPE_DOMAIN_CLAIM)) == [
        "churn.acme.dev",
        "churn.apps.acme.dev",
    ]


def test_without_domain_claims_only_the_mappings_are_registered() -> None:
    config = domain_config()
    config["flyte-apps:platform"]["domainClaims"] = False
    capture, _ = install(config)
    run_program()
    assert capture.of_type(c.TYPE_DOMAIN_CLAIM) == []
    assert len(capture.of_type(c.TYPE_DOMAIN_MAPPING)) == 2


def test_an_app_without_custom_hosts_has_no_custom_domains_component() -> None:
    capture, _ = install(minimal_config())
    run_program()
    assert capture.of_type(c.TYPE_CUSTOM_DOMAINS) == []


@pulumi.runtime.test
def test_custom_domains_expose_their_urls() -> pulumi.Output[None]:
    config = domain_config()
    install(config)
    plan = plan_stack(config)
    app = plan.apps[0]
    component = register_custom_domains(
        app.domains,
        pulumi.ComponentResource("test:index:App", "app"),
        app.kservice_name,
        pulumi.ResourceOptions(),
    )
    assert component is not None

    def check(urls: list[str]) -> None:
        assert (
            urls
            == stack_exports(plan)[app.key]["customUrls"]
            == [
                "https://churn.apps.acme.dev",
                "https://churn.acme.dev",
            ]
        )

    return component.custom_urls.apply(check)


def test_without_manage_config_an_app_needing_a_flag_the_cluster_leaves_off_is_refused_before_registering(
    kube_server: FakeKubeApi,
) -> None:
    # Knative's webhook would refuse the KService (the preview's dry run included) in its own words.
    features = {"kubernetes.podspec-affinity": "Allowed", "kubernetes.podspec-tolerations": "disabled"}
    kube_server.create(
        CONFIG_MAPS,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config-features"}, "data": features},
        "knative-serving",
    )
    raw = admission_config()
    del raw["flyte-apps:knative"]
    assert kube_server.kubeconfig_path is not None
    raw["kubernetes:kubeconfig"] = str(kube_server.kubeconfig_path)
    capture, logs = install(raw)
    with pytest.raises(
        pulumi.RunError, match="1 app\\(s\\) need Knative feature flags left off: nothing was"
    ):
        run_program()
    errors = [r.getMessage() for r in logs.records if r.levelno == logging.ERROR]
    assert errors == [
        "flyte-apps:apps[1]: app proj/dev/gpu needs Knative's feature flag(s) "
        "kubernetes.podspec-tolerations, which knative-serving/config-features does not enable: set "
        "flyte-apps:knative.manageConfig: true to have this program enable them, or enable them there"
    ]
    assert [r.typ for r in capture.registered if r.typ.startswith("kubernetes:")] == []
    kube_server.patch(
        CONFIG_MAPS,
        "knative-serving",
        "config-features",
        {"data": {"kubernetes.podspec-tolerations": "Enabled"}},
    )
    capture, _ = install(raw)
    run_program()
    assert len(capture.of_type(c.TYPE_KSERVICE)) == len(ADMISSION_APPS)


def test_the_program_leaves_without_a_traceback_when_the_engine_stops_it(tmp_path: Path) -> None:
    # The language host sends SIGINT when the engine stops the program (a resource failed): Python's
    # KeyboardInterrupt printed tracebacks beside the provider's message (issue 36, seen in `make e2e`).
    script = (
        "import os, signal, time\n"
        "from components.program import exit_quietly_when_stopped\n"
        "exit_quietly_when_stopped()\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "time.sleep(30)\n"
    )
    done = run_bounded(
        [sys.executable, "-c", script], timeout=60, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    )
    assert (done.returncode, done.stderr) == (EXIT_STOPPED_BY_ENGINE, "")
    assert EXIT_STOPPED_BY_ENGINE == 130


def test_running_the_program_under_mocks_leaves_the_test_runs_sigint_handler_alone() -> None:
    # Regression: the program's SIGINT handler, installed in the test run's own process, ended the
    # whole run (exit 130) at the next test that simulates a Ctrl-C.
    before = signal.getsignal(signal.SIGINT)
    install(minimal_config())
    run_program()
    assert signal.getsignal(signal.SIGINT) is before


UNUSED_BY_A_STACK_OF_APPS: Final = (
    "kubernetes",
    "components.manager",
    "flyte_apps.core.manager",
    "flyte_apps.kube",
)
"""What a stack of apps (Knative's config managed, an app stopped) never needs at `pulumi up`: the
Kubernetes client (only the reaper's create and update reach the cluster, in the provider host) and
the Flyte manager's component and models. Every module the program loads costs each preview."""


def test_a_stack_of_apps_loads_neither_the_kubernetes_client_nor_the_manager() -> None:
    script = (
        "import json, sys\n"
        "from tests.support.pulumi_harness import install, run_program\n"
        "from tests.support.config import minimal_config\n"
        "config = minimal_config(stopped=True)\n"
        "config['flyte-apps:knative'] = {'manageConfig': True}\n"
        "capture, _ = install(config)\n"
        "run_program()\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({UNUSED_BY_A_STACK_OF_APPS!r}))))\n"
        "print(json.dumps(sorted(r.typ for r in capture.registered)))\n"
    )
    done = run_bounded(
        [sys.executable, "-c", script], timeout=60, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    )
    assert done.returncode == 0, done.stderr
    loaded, types = done.stdout.splitlines()
    assert json.loads(loaded) == []
    assert {TYPE_CONFIG_MAP_PATCH, c.TYPE_DYNAMIC_REVISION_REAPER} <= set(json.loads(types))
