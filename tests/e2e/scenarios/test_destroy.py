"""`pulumi destroy` of the main and the adopt stacks, last of all (``SCENARIO_ORDER``): every object the
stacks made is gone, except what the product keeps by design (the ClusterDomainClaims, Knative's config
keys, the adopted namespace)."""

from __future__ import annotations

from tests.e2e import cluster
from tests.e2e.outcome import check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.stacks import ADOPT_NAMESPACE, ADOPT_STACK, Adoption, Deployed
from tests.e2e.scenarios.suite import CLAIMS, KSERVICES, NAMESPACE, Suite


def test_destroy(suite: Suite, deployed: Deployed, adopted: Adoption, record: Record) -> None:
    hosts = [c["metadata"]["name"] for c in suite.get(CLAIMS, namespace=None)["items"]]
    suite.pulumi("destroy", "--yes")
    left = [r["type"] for r in suite.state_resources()]
    check(not left, f"the state still holds {left}")
    check(
        not suite.exists("namespaces", NAMESPACE, namespace=None), f"namespace {NAMESPACE} outlived destroy"
    )
    claims = {c["metadata"]["name"] for c in suite.get(CLAIMS, namespace=None)["items"]}
    check(bool(hosts) and set(hosts) <= claims, f"ClusterDomainClaims were not kept: {hosts} -> {claims}")
    suite.pulumi("destroy", "--yes", stack=ADOPT_STACK)
    check(
        suite.exists("namespaces", ADOPT_NAMESPACE, namespace=None),
        f"the adopted namespace {ADOPT_NAMESPACE} was deleted",
    )
    left_over = [k["metadata"]["name"] for k in suite.get(KSERVICES, namespace=ADOPT_NAMESPACE)["items"]]
    check(not left_over, f"KServices outlived destroy: {left_over}")
    autoscaler = suite.get("configmaps", "config-autoscaler", namespace=cluster.KNATIVE_NAMESPACE)
    check(
        autoscaler["data"].get("allow-zero-initial-scale") == "true", "the Knative config patch was removed"
    )
    record(f"everything gone but the kept claims {sorted(hosts)} and Knative's config keys")
