"""How a scenario fails: one exception type every scenario raises, with what was seen. An
``AssertionError``, so pytest reports it as the scenario's failure (not an error in the harness), and
the scenarios' PASS/FAIL line shows its message alone (``scenarios/reporting.py``)."""

from __future__ import annotations


class ScenarioFailed(AssertionError):
    """A scenario's assertion, with what was seen."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise ScenarioFailed(message)
