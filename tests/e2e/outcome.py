"""How a scenario fails: one exception type every scenario module raises and the runner catches."""

from __future__ import annotations


class ScenarioFailed(AssertionError):
    """A scenario's assertion, with what was seen."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise ScenarioFailed(message)
