"""``redact_secure``: one walk gives the redacted copy and what ``find_secure_values`` reports."""

from __future__ import annotations

import copy
from typing import Any, Final

import pytest

from flyte_apps.core.config.load import find_secure_values, redact_secure

SECURE: Final = {"secure": "v1:abc"}


def without_secure(node: object) -> object:
    """The meaning of redaction, written plainly: every ``{secure: ...}`` map becomes None."""
    if isinstance(node, dict):
        if set(node) == {"secure"}:
            return None
        return {key: without_secure(child) for key, child in node.items()}
    if isinstance(node, list):
        return [without_secure(child) for child in node]
    return node


@pytest.mark.parametrize(
    "values",
    [
        pytest.param({}, id="empty"),
        pytest.param({"project": "p", "apps": [{"name": "a", "container": {"env": {"A": "1"}}}]}, id="none"),
        pytest.param({"project": SECURE, "domain": "d"}, id="top-level"),
        pytest.param(
            {
                "apps": [
                    {"name": "a", "container": {"env": [{"name": "T", "value": SECURE}]}},
                    SECURE,
                    [SECURE],
                ]
            },
            id="nested",
        ),
    ],
)
def test_redact_secure_replaces_and_reports_every_secure_value(values: dict[str, Any]) -> None:
    before = copy.deepcopy(values)
    redacted, problems = redact_secure(values)
    assert redacted == {key: without_secure(value) for key, value in values.items()}
    assert problems == find_secure_values(values)
    assert values == before
    for key, value in values.items():
        if isinstance(value, dict | list):
            assert redacted[key] is not value  # a copy: later stages never touch the caller's config
