"""Our validators agree with Kubernetes' own on every committed vector (tests/fixtures/
kube_validation_vectors.json, written by ``make vectors`` from ``k8s.io/apimachinery`` and the
kubelet's image reference parser: tests/vectors/judge)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from flyte_apps.core.config.names import (
    DNS1123_LABEL,
    LABEL_VALUE,
    MAX_LABEL_LEN,
    image_problem,
    is_env_var_name,
    is_subdomain,
    label_key_problem,
)
from flyte_apps.core.quantities import canonical_quantity, is_quantity
from tests.support.config import REPO_ROOT

VECTORS: list[dict[str, Any]] = json.loads(
    (REPO_ROOT / "tests" / "fixtures" / "kube_validation_vectors.json").read_text(encoding="utf-8")
)

NO_NUMBER = re.compile(r"[+-]?\.?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
"""A sign, a point and a suffix, but no digit before the suffix."""

OURS: dict[str, Callable[[str], bool]] = {
    "qualifiedName": lambda s: label_key_problem(s) is None,
    "labelValue": lambda s: len(s) <= MAX_LABEL_LEN and LABEL_VALUE.fullmatch(s) is not None,
    "dns1123Label": lambda s: len(s) <= MAX_LABEL_LEN and DNS1123_LABEL.fullmatch(s) is not None,
    "dns1123Subdomain": is_subdomain,
    "envVarName": is_env_var_name,
    "quantity": is_quantity,
    "image": lambda s: image_problem(s) is None,
}


def test_the_vectors_cover_each_validator_both_ways() -> None:
    assert len(VECTORS) > 400
    for judge in OURS:
        verdicts = {vector[judge] for vector in VECTORS}
        assert verdicts == {True, False}, judge


@pytest.mark.parametrize("judge", sorted(OURS))
def test_ours_agree_with_kubernetes_on_every_vector(judge: str) -> None:
    ours = OURS[judge]
    disagree = [
        (vector["input"], vector[judge])
        for vector in VECTORS
        if ours(vector["input"]) != vector[judge] and not stricter_on_purpose(judge, vector["input"])
    ]
    assert disagree == []


def stricter_on_purpose(judge: str, text: str) -> bool:
    """Where we refuse what Kubernetes accepts, by decision: a quantity whose number has no digit
    (``Gi``, ``m``, ``.``, ``-``, ``e1``), which ``ParseQuantity`` reads as zero; surely a mistake in a
    stack file."""
    return judge == "quantity" and NO_NUMBER.fullmatch(text) is not None


def test_a_quantity_without_a_digit_is_refused_though_kubernetes_reads_zero() -> None:
    digitless = [
        v["input"] for v in VECTORS if v["quantity"] and not any("0" <= ch <= "9" for ch in v["input"])
    ]
    assert {"Gi", "m", "."} <= set(digitless)
    assert not any(is_quantity(text) for text in digitless)


def test_quantities_are_written_back_as_kubernetes_writes_them() -> None:
    """``resource.Quantity``'s String (and MarshalJSON) on every quantity we accept: what Flyte's app
    service and Knative's webhook write into a KService."""
    accepted = [v for v in VECTORS if v["quantity"] and is_quantity(v["input"])]
    rewritten = [v for v in accepted if v["canonical"] != v["input"]]
    assert len(accepted) > 500
    assert len(rewritten) > 100
    assert [
        (v["input"], v["canonical"]) for v in accepted if canonical_quantity(v["input"]) != v["canonical"]
    ] == []


@pytest.mark.parametrize("text", ["", "1 Gi", "Gi", "1e99999", "1gi"])
def test_a_text_that_is_no_quantity_has_no_written_form(text: str) -> None:
    with pytest.raises(ValueError, match="quantity"):
        canonical_quantity(text)
