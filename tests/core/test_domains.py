"""Custom domains (issue 13): ``ingress.subdomain`` and ``ingress.cname`` as Knative DomainMappings and
ClusterDomainClaims, their URLs, and every config error, by key path and all at once.

DomainMappings are validated against the CRD Knative Serving publishes
(``tests/fixtures/schemas/knative-serving-v1beta1-domainmapping-crd.yaml``), made strict (unknown fields
rejected) with the product's own reading of structural schemas; without that file those tests skip and
say why. No schema of ``ClusterDomainClaim`` is at hand (Knative installs it as an internal type): its
shape is checked field by field.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any, Final

import jsonschema
import pytest
import yaml

from flyte_apps.core import constants as c
from flyte_apps.core.errors import ConfigError, ConfigProblem
from flyte_apps.core.plan import AppPlan, StackPlan, plan_stack
from flyte_apps.core.pod_schema import strict_schema
from flyte_apps.core.spec import decode_spec
from tests.support.config import SCHEMAS_DIR, minimal_config

DOMAIN_MAPPING_CRD: Final = SCHEMAS_DIR / "knative-serving-v1beta1-domainmapping-crd.yaml"
BASE_DOMAIN: Final = "apps.acme.dev"
APP: Final = "flyte-apps:apps[0]"
Validator = Any


@pytest.fixture(scope="module")
def mapping_validator() -> Validator:
    crd = yaml.safe_load(DOMAIN_MAPPING_CRD.read_text(encoding="utf-8"))
    assert crd["spec"]["names"]["kind"] == c.DOMAIN_MAPPING_KIND
    assert crd["spec"]["group"] == c.KNATIVE_GROUP
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == c.DOMAIN_MAPPING_VERSION]
    assert crd["spec"]["scope"] == "Namespaced"
    schema = strict_schema(version["schema"]["openAPIV3Schema"])
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_errors(validator: Validator, manifest: dict[str, Any]) -> list[str]:
    return sorted(f"{error.json_path}: {error.message}" for error in validator.iter_errors(manifest))


def config(*apps: dict[str, Any], **platform: Any) -> dict[str, Any]:
    raw = minimal_config()
    raw["flyte-apps:apps"] = [{"container": {"image": "nginx:1.27"}, **app} for app in apps]
    raw["flyte-apps:platform"] = {"baseDomain": BASE_DOMAIN, **platform}
    return raw


def churn(**app: Any) -> dict[str, Any]:
    return {"name": "churn", "ingress": {"subdomain": "churn", "cname": "churn.acme.dev"}, **app}


def only(raw: dict[str, Any]) -> AppPlan:
    (app,) = plan_stack(raw).apps
    return app


def problems(raw: dict[str, Any]) -> list[ConfigProblem]:
    with pytest.raises(ConfigError) as caught:
        plan_stack(raw)
    return caught.value.problems


def assert_problems(found: Sequence[ConfigProblem], expected: Sequence[tuple[str, str]]) -> None:
    listed = "\n".join(map(str, found))
    assert sorted(p.path for p in found) == sorted(path for path, _ in expected), listed
    for path, pattern in expected:
        assert any(re.search(pattern, p.message) for p in found if p.path == path), (
            f"{path} /{pattern}/\n{listed}"
        )


# --- what gets rendered ------------------------------------------------------------------------------


def test_a_public_running_app_gets_a_mapping_and_a_claim_per_custom_host() -> None:
    app = only(config(churn()))
    assert app.domains.hosts == ("churn.apps.acme.dev", "churn.acme.dev")
    assert [m["metadata"]["name"] for m in app.domains.mappings] == list(app.domains.hosts)
    for mapping in app.domains.mappings:
        assert mapping["apiVersion"] == "serving.knative.dev/v1beta1"
        assert mapping["kind"] == "DomainMapping"
        assert mapping["metadata"]["namespace"] == "flyte"
        assert mapping["spec"] == {
            "ref": {
                "apiVersion": "serving.knative.dev/v1",
                "kind": "Service",
                "name": "churn-proj-dev",
                "namespace": "flyte",
            }
        }
        assert mapping["metadata"]["labels"] == {
            "flyte.org/project": "proj",
            "flyte.org/domain": "dev",
            "flyte.org/app-name": "churn",
            "app.kubernetes.io/managed-by": "pulumi",
        }
    assert [claim["metadata"]["name"] for claim in app.domains.claims] == list(app.domains.hosts)


def test_a_claim_names_the_host_and_lets_the_apps_namespace_map_it() -> None:
    """Knative's ClusterDomainClaim: cluster-scoped, named by the domain, ``spec.namespace`` the one
    namespace allowed to map it (no published schema at hand: checked field by field)."""
    (claim, _) = only(config(churn(), namespace="apps")).domains.claims
    assert claim == {
        "apiVersion": "networking.internal.knative.dev/v1alpha1",
        "kind": "ClusterDomainClaim",
        "metadata": {"name": "churn.apps.acme.dev", "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
        "spec": {"namespace": "apps"},
    }


def test_tls_secret_goes_into_every_mapping_and_makes_the_urls_https() -> None:
    app = only(config(churn(ingress={"cname": "churn.acme.dev", "tlsSecret": "churn-tls"}), scheme="http"))
    (mapping,) = app.domains.mappings
    assert mapping["spec"]["tls"] == {"secretName": "churn-tls"}
    assert app.exports()["customUrls"] == ["https://churn.acme.dev"]


def test_custom_urls_follow_the_platforms_scheme_and_ingress_port() -> None:
    app = only(config(churn(), scheme="http", ingressAppsPort=30081))
    assert app.exports()["customUrls"] == ["http://churn.apps.acme.dev:30081", "http://churn.acme.dev:30081"]


@pytest.mark.parametrize(
    "app", [{"stopped": True}, {"visibility": "cluster-local"}], ids=["stopped", "cluster-local"]
)
def test_a_stopped_or_cluster_local_app_is_not_mapped(app: dict[str, Any]) -> None:
    """A DomainMapping makes its target reachable from outside even when the KService is cluster-local:
    a mapping would expose the app. Its claims stay (they expose nothing, and are kept on delete)."""
    planned = only(config(churn(**app)))
    assert planned.domains.mappings == ()
    assert planned.exports()["customUrls"] == []
    assert len(planned.domains.claims) == 2
    kinds = [obj.kind for obj in plan_stack(config(churn(**app))).objects()]
    assert c.DOMAIN_MAPPING_KIND not in kinds


def test_domain_claims_false_renders_no_claim() -> None:
    planned = only(config(churn(), domainClaims=False))
    assert planned.domains.claims == ()
    assert len(planned.domains.mappings) == 2


def test_an_app_without_custom_hosts_renders_nothing_more() -> None:
    planned = only(config({"name": "plain"}))
    assert (planned.domains.hosts, planned.domains.mappings, planned.domains.claims) == ((), (), ())
    assert planned.exports()["customUrls"] == []


def test_claims_come_before_the_kservices_and_mappings_after() -> None:
    kinds = [obj.kind for obj in plan_stack(config(churn())).objects()]
    assert kinds == [
        "Namespace",
        "ClusterDomainClaim",
        "ClusterDomainClaim",
        "Service",
        "DomainMapping",
        "DomainMapping",
    ]


def test_the_spec_keeps_subdomain_and_cname_as_written() -> None:
    spec = decode_spec(
        only(
            config(churn(ingress={"subdomain": "churn", "cname": "churn.acme.dev", "tlsSecret": "t"}))
        ).blob.b64
    )
    assert (spec.ingress.subdomain, spec.ingress.cname) == ("churn", "churn.acme.dev")


# --- against Knative's DomainMapping schema ---------------------------------------------------------


def every_mapping(plan: StackPlan) -> list[dict[str, Any]]:
    return [obj.manifest for obj in plan.objects() if obj.kind == c.DOMAIN_MAPPING_KIND]


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(config(churn()), id="subdomain-and-cname"),
        pytest.param(config(churn(ingress={"cname": "churn.acme.dev", "tlsSecret": "churn-tls"})), id="tls"),
    ],
)
def test_rendered_mappings_validate_against_knatives_crd(
    mapping_validator: Validator, raw: dict[str, Any]
) -> None:
    mappings = every_mapping(plan_stack(raw))
    assert mappings
    for mapping in mappings:
        assert schema_errors(mapping_validator, mapping) == []


def test_the_example_stacks_mapping_validates(
    mapping_validator: Validator, example_config: dict[str, Any]
) -> None:
    mappings = every_mapping(plan_stack(example_config))
    assert [m["metadata"]["name"] for m in mappings] == ["dashboard.localhost"]
    assert schema_errors(mapping_validator, mappings[0]) == []


def test_the_strict_schema_refuses_what_knative_would_not_take(mapping_validator: Validator) -> None:
    """The schema has teeth: a misspelled field, a missing ``ref`` and a ``tls`` without its secret fail."""
    mapping = every_mapping(plan_stack(config(churn())))[0]
    misspelled = copy.deepcopy(mapping)
    misspelled["spec"]["ref"]["nmae"] = misspelled["spec"]["ref"].pop("name")
    assert any(
        "nmae" in error or "'name' is a required" in error
        for error in schema_errors(mapping_validator, misspelled)
    )
    no_ref = copy.deepcopy(mapping)
    del no_ref["spec"]["ref"]
    assert schema_errors(mapping_validator, no_ref) == ["$.spec: 'ref' is a required property"]
    bad_tls = copy.deepcopy(mapping)
    bad_tls["spec"]["tls"] = {"secret": "x"}
    assert len(schema_errors(mapping_validator, bad_tls)) == 2


# --- config errors -------------------------------------------------------------------------------------


def test_every_custom_domain_problem_is_reported_at_once_naming_both_apps() -> None:
    raw = config(
        churn(),  # apps[0]: fine
        {"name": "copy", "ingress": {"cname": "churn.acme.dev"}},  # apps[1]: apps[0]'s cname
        {"name": "thief", "ingress": {"subdomain": "churn-proj-dev"}},  # apps[2]: apps[0]'s default host
        {"name": "self", "ingress": {"subdomain": "self-proj-dev"}},  # apps[3]: its own default host
        {"name": "twice", "ingress": {"subdomain": "twice", "cname": "twice.apps.acme.dev"}},  # apps[4]
        {
            "name": "bad",
            "ingress": {"subdomain": "Bad.Sub", "cname": "*.acme.dev", "tlsSecret": "Bad_Secret"},
        },
        {"name": "single", "ingress": {"cname": "localhost"}},  # apps[6]
        {"name": "inner", "ingress": {"cname": "api.svc.cluster.local"}},  # apps[7]
        {"name": "lonely-tls", "ingress": {"tlsSecret": "t"}},  # apps[8]
    )
    assert_problems(
        problems(raw),
        [
            (
                "flyte-apps:apps[1].ingress.cname",
                r"host 'churn.acme.dev' of app proj/dev/copy is also a custom host of app proj/dev/churn "
                r"\(at flyte-apps:apps\[0\]\.ingress\.cname\)",
            ),
            (
                "flyte-apps:apps[2].ingress.subdomain",
                r"host 'churn-proj-dev.apps.acme.dev' of app proj/dev/thief is the default host of app "
                r"proj/dev/churn \(at flyte-apps:apps\[0\]\)",
            ),
            ("flyte-apps:apps[3].ingress.subdomain", r"is the default host of its own KService"),
            ("flyte-apps:apps[4].ingress.cname", r"also a custom host of app proj/dev/twice"),
            ("flyte-apps:apps[5].ingress.subdomain", r"'Bad.Sub' is not a DNS label"),
            ("flyte-apps:apps[5].ingress.cname", r"'\*.acme.dev' is not a DNS name Knative can map"),
            ("flyte-apps:apps[5].ingress.tlsSecret", r"'Bad_Secret' is not a valid Kubernetes Secret name"),
            ("flyte-apps:apps[6].ingress.cname", r"'localhost' is not a DNS name Knative can map"),
            ("flyte-apps:apps[7].ingress.cname", r"cluster's own domain"),
            ("flyte-apps:apps[8].ingress.tlsSecret", r"serves only custom hosts"),
        ],
    )


def test_a_subdomain_needs_a_base_domain() -> None:
    raw = minimal_config(ingress={"subdomain": "churn"})
    assert_problems(
        problems(raw),
        [
            (
                f"{APP}.ingress.subdomain",
                r"needs flyte-apps:platform.baseDomain: the custom host is <subdomain>.<baseDomain>",
            )
        ],
    )


def test_a_cname_needs_no_base_domain() -> None:
    planned = only(minimal_config(ingress={"cname": "churn.acme.dev"}))
    assert planned.domains.hosts == ("churn.acme.dev",)
    assert planned.public_url is None
    assert planned.exports()["customUrls"] == ["https://churn.acme.dev"]


def test_a_host_too_long_for_dns_is_refused() -> None:
    raw = config(
        {"name": "long", "ingress": {"subdomain": "a" * 63}}, baseDomain=".".join(["b" * 60] * 4) + ".dev"
    )
    assert_problems(problems(raw), [(f"{APP}.ingress.subdomain", r"longer than a DNS name may be \(253")])


def test_unknown_ingress_keys_are_refused_with_a_suggestion() -> None:
    raw = config({"name": "typo", "ingress": {"tlsSecrets": "x"}})
    assert_problems(problems(raw), [(f"{APP}.ingress.tlsSecrets", r"did you mean 'tlsSecret'\?")])
