"""The KService carries every quantity as Kubernetes writes it back (Flyte's typed Go, Knative's
webhook), so it is Flyte's to the byte and a second `pulumi up` proposes nothing; the app's spec keeps
what the stack says."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, Final

from flyte_apps.core.plan import plan_stack
from flyte_apps.core.pod_quantities import QUANTITY_PATHS, canonical_pod_quantities
from flyte_apps.core.spec import decode_spec
from tests.support.config import minimal_config

DIVISOR: Final = {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1024Ki"}}
EVERY_QUANTITY: Final[dict[str, Any]] = {
    "containers": [
        {
            "name": "app",
            "resources": {"limits": {"memory": "1024Mi", "cpu": 2}, "requests": {"cpu": "0.5"}},
            "env": [{"name": "MEMORY", "valueFrom": DIVISOR}, {"name": "PLAIN", "value": "1024Mi"}],
        }
    ],
    "initContainers": [
        {
            "name": "init",
            "resources": {"limits": {"cpu": "1000m"}, "requests": {"cpu": 0.25}},
            "env": [{"name": "MEMORY", "valueFrom": DIVISOR}],
        }
    ],
    "ephemeralContainers": [
        {
            "name": "debug",
            "resources": {"limits": {"memory": "2048Ki"}, "requests": {"cpu": "0.1"}},
            "env": [{"name": "MEMORY", "valueFrom": DIVISOR}],
        }
    ],
    "volumes": [
        {"name": "scratch", "emptyDir": {"sizeLimit": "1.5Gi"}},
        {
            "name": "claim",
            "ephemeral": {
                "volumeClaimTemplate": {
                    "spec": {"resources": {"requests": {"storage": "1000G"}, "limits": {"storage": "1e4"}}}
                }
            },
        },
        {"name": "info", "downwardAPI": {"items": [{"path": "mem", **DIVISOR}]}},
        {"name": "all", "projected": {"sources": [{"downwardAPI": {"items": [{"path": "mem", **DIVISOR}]}}]}},
    ],
    "overhead": {"cpu": "250m", "memory": "0.5Gi"},
    "resources": {"limits": {"memory": "4096Mi"}, "requests": {"memory": "1048576Ki"}},
}


def test_every_quantity_field_of_a_pod_spec_is_written_back() -> None:
    given = copy.deepcopy(EVERY_QUANTITY)
    written = canonical_pod_quantities(given)
    assert given == EVERY_QUANTITY  # not changed in place
    container = written["containers"][0]
    assert container["resources"] == {"limits": {"memory": "1Gi", "cpu": "2"}, "requests": {"cpu": "500m"}}
    assert container["env"][0]["valueFrom"]["resourceFieldRef"]["divisor"] == "1Mi"
    assert container["env"][1] == {"name": "PLAIN", "value": "1024Mi"}  # an env value is no quantity
    init = written["initContainers"][0]
    assert init["resources"] == {"limits": {"cpu": "1"}, "requests": {"cpu": "250m"}}
    assert init["env"][0]["valueFrom"]["resourceFieldRef"]["divisor"] == "1Mi"
    assert written["ephemeralContainers"][0]["resources"] == {
        "limits": {"memory": "2Mi"},
        "requests": {"cpu": "100m"},
    }
    scratch, claim, info, projected = written["volumes"]
    assert scratch["emptyDir"] == {"sizeLimit": "1536Mi"}
    claim_resources = claim["ephemeral"]["volumeClaimTemplate"]["spec"]["resources"]
    assert claim_resources == {"requests": {"storage": "1T"}, "limits": {"storage": "10e3"}}
    assert info["downwardAPI"]["items"][0]["resourceFieldRef"]["divisor"] == "1Mi"
    assert (
        projected["projected"]["sources"][0]["downwardAPI"]["items"][0]["resourceFieldRef"]["divisor"]
        == "1Mi"
    )
    assert written["overhead"] == {"cpu": "250m", "memory": "512Mi"}
    assert written["resources"] == {"limits": {"memory": "4Gi"}, "requests": {"memory": "1Gi"}}


def test_every_path_rewrites_a_quantity_of_the_example() -> None:
    """No path leads nowhere: each one's values in the example change when written back."""
    written = canonical_pod_quantities(EVERY_QUANTITY)
    for path in QUANTITY_PATHS:
        pairs = list(zip(values_at(EVERY_QUANTITY, path), values_at(written, path), strict=True))
        assert any(given != back for given, back in pairs), path


def values_at(node: Any, path: tuple[str, ...]) -> Iterator[Any]:
    if not path:
        yield node
    elif path[0] == "[]":
        for item in node:
            yield from values_at(item, path[1:])
    elif path[0] == "{}":
        for value in node.values():
            yield from values_at(value, path[1:])
    elif path[0] in node:
        yield from values_at(node[path[0]], path[1:])


def test_what_needs_no_rewriting_is_shared_not_copied() -> None:
    pod = {"containers": [{"name": "app", "resources": {"limits": {"memory": "1Gi"}}}], "volumes": []}
    written = canonical_pod_quantities(pod)
    assert written == pod
    assert written["containers"] is pod["containers"]


def test_text_that_is_no_quantity_is_left_for_validation_to_name() -> None:
    pod = {"containers": [{"name": "app", "resources": {"limits": {"memory": "lots", "cpu": True}}}]}
    assert canonical_pod_quantities(pod) == pod


def test_the_kservice_holds_the_written_back_form_and_the_spec_what_the_stack_says() -> None:
    resources = {
        "limits": {"memory": "1024Mi", "cpu": "1000m"},
        "requests": {"memory": "512Mi", "cpu": "0.5"},
    }
    app = plan_stack(minimal_config(container={"image": "nginx:1.27", "resources": resources})).apps[0]
    container = app.kservice["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {
        "limits": {"memory": "1Gi", "cpu": "1"},
        "requests": {"memory": "512Mi", "cpu": "500m"},
    }
    spec_resources = decode_spec(app.blob.b64).container.resources
    assert {(r.name, r.value) for r in spec_resources.limits} >= {(3, "1024Mi")}  # MEMORY, as written
