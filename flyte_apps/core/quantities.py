"""Kubernetes resource quantities, checked with the API server's own grammar.

Upstream parses them with ``MustParse`` and panics on bad input (reference (j)9); we reject them
in config validation instead, so the message can name the config key.
"""

from __future__ import annotations

import re
from typing import Final

_QUANTITY: Final = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)


def is_quantity(text: str) -> bool:
    """True when Kubernetes would parse ``text`` as a quantity."""
    return _QUANTITY.fullmatch(text) is not None


def is_negative_quantity(text: str) -> bool:
    """True for a syntactically valid quantity below zero (never valid for a resource)."""
    match = _QUANTITY.fullmatch(text)
    return match is not None and match.group("sign") == "-" and float(match.group("number")) != 0


def is_zero_quantity(text: str) -> bool:
    """True for a syntactically valid quantity equal to zero (``0``, ``0Gi``, ``0.0``)."""
    match = _QUANTITY.fullmatch(text)
    return match is not None and float(match.group("number")) == 0
