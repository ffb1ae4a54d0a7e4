"""Names and URLs, with the upstream test vectors (reference (g))."""

from __future__ import annotations

import hashlib

import pytest

from flyte_apps.core.naming import (
    endpoint_pattern,
    internal_url,
    is_hashed,
    kservice_name,
    namespaced_suffix,
    public_url,
)

LONG_NAME = "this-is-a-very-long-app-name-that-exceeds-the-kubernetes-dns-label-limit"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("myapp", "myapp-proj-dev"),
        ("MyApp", "myapp-proj-dev"),
        ("my-long-service-name-v1", "my-long-service-name-v1-proj-dev"),
        ("my-long-service-name-v2", "my-long-service-name-v2-proj-dev"),
        (LONG_NAME, "this-is-a-very-long-app-name-that-exceeds-the-kubernet-3111c9c5"),
    ],
)
def test_kservice_name_matches_upstream_vectors(name: str, expected: str) -> None:
    result = kservice_name(project="proj", domain="dev", name=name)
    assert result == expected
    assert len(result) <= 63


def test_hashed_name_hashes_original_case_identity() -> None:
    # The digest covers "project/domain/name" in the ORIGINAL case, so Proj and proj differ
    # only in the hash, never in the readable prefix.
    upper = kservice_name(project="Proj", domain="dev", name=LONG_NAME)
    lower = kservice_name(project="proj", domain="dev", name=LONG_NAME)
    assert upper[:55] == lower[:55]
    assert upper[-8:] == hashlib.sha256(f"Proj/dev/{LONG_NAME}".encode()).hexdigest()[:8]
    assert upper != lower


def test_name_of_exactly_63_characters_is_not_hashed() -> None:
    name = "a" * (63 - len("-proj-dev"))
    assert kservice_name(project="proj", domain="dev", name=name) == f"{name}-proj-dev"
    assert not is_hashed(project="proj", domain="dev", name=name)
    assert is_hashed(project="proj", domain="dev", name=name + "b")


def test_hashed_prefix_may_end_in_a_dash_giving_a_double_dash() -> None:
    name = "a" * 53 + "-bcdefghijk"
    result = kservice_name(project="proj", domain="dev", name=name)
    assert result.startswith("a" * 53 + "--")
    assert len(result) == 63


@pytest.mark.parametrize(
    ("template", "project", "domain", "expected"),
    [
        ("{{ project }}-{{ domain }}", "myproject", "dev", "myproject-dev"),
        ("{{ project }}-{{ domain }}", "MyProject", "Dev", "myproject-dev"),
        ("{{ project }}-{{ domain }}", "proj", "prod", "proj-prod"),
        ("custom-{{ domain }}", "proj", "dev", "custom-dev"),
        ("", "proj", "dev", ""),
        ("{{project}}-{{ domain }}", "proj", "dev", "{{project}}-dev"),
    ],
)
def test_namespaced_suffix_replaces_only_exact_tokens(
    template: str, project: str, domain: str, expected: str
) -> None:
    assert namespaced_suffix(template, project=project, domain=domain) == expected


def test_endpoint_pattern_leaves_app_fqdn_placeholder() -> None:
    pattern = endpoint_pattern("{{ project }}-{{ domain }}", project="proj", domain="dev", namespace="flyte")
    assert pattern == "http://{app_fqdn}-proj-dev.flyte.svc.cluster.local"


@pytest.mark.parametrize(
    ("base_domain", "scheme", "port", "expected"),
    [
        ("", "https", 0, None),
        ("example.com", "https", 0, "https://myapp-proj-dev.example.com"),
        ("Example.COM", "http", 30081, "http://myapp-proj-dev.example.com:30081"),
        ("example.com", "https", 443, "https://myapp-proj-dev.example.com:443"),
        ("example.com", "", 0, "https://myapp-proj-dev.example.com"),
    ],
)
def test_public_url_follows_public_ingress_rules(
    base_domain: str, scheme: str, port: int, expected: str | None
) -> None:
    url = public_url(ksvc="myapp-proj-dev", base_domain=base_domain, scheme=scheme, ingress_apps_port=port)
    assert url == expected


def test_internal_url_is_the_cluster_local_service_address() -> None:
    assert (
        internal_url(ksvc="myapp-proj-dev", namespace="flyte")
        == "http://myapp-proj-dev.flyte.svc.cluster.local"
    )
