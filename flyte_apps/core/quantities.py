"""Kubernetes resource quantities, checked with the API server's own grammar.

Upstream parses them with ``MustParse`` and panics on bad input (reference (j)9); we reject them
in config validation instead, so the message can name the config key.
"""

from __future__ import annotations

import re
from fractions import Fraction
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


_BINARY: Final = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: Final = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
MAX_EXPONENT: Final = 10_000
"""An exponent past which a quantity is not computed exactly (Kubernetes caps its own far lower)."""


def quantity_value(text: str) -> Fraction | None:
    """The exact value of a quantity (``1001m`` is 1001/1000, ``1Gi`` is 1073741824), or None for
    text that is not one (:func:`is_quantity`) or whose exponent is beyond :data:`MAX_EXPONENT`."""
    match = _QUANTITY.fullmatch(text)
    if match is None:
        return None
    number = Fraction(match["number"]) * (-1 if match["sign"] == "-" else 1)
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    exponent = int(suffix[1:])
    if abs(exponent) > MAX_EXPONENT:
        return None
    return number * Fraction(10) ** exponent


def suffix_of(text: str) -> str | None:
    """The suffix of a quantity (``Gi``, ``G``, ``e3``, ``""`` for a bare number), or None."""
    match = _QUANTITY.fullmatch(text)
    return None if match is None else match["suffix"] or ""
