"""``redact_secure``: one walk gives what ``without_secure`` and ``find_secure_values`` give apart."""

from __future__ import annotations

import copy
from typing import Any, Final

import pytest

from flyte_apps.core.config.load import find_secure_values, redact_secure, without_secure

SECURE: Final = {"secure": "v1:abc"}


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
def test_redact_secure_is_without_secure_and_find_secure_values(values: dict[str, Any]) -> None:
    before = copy.deepcopy(values)
    redacted, problems = redact_secure(values)
    assert redacted == {key: without_secure(value) for key, value in values.items()}
    assert problems == find_secure_values(values)
    assert values == before
    for key, value in values.items():
        if isinstance(value, dict | list):
            assert redacted[key] is not value  # a copy: later stages never touch the caller's config
