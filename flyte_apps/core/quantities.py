"""Kubernetes resource quantities, checked with the API server's own grammar.

Upstream parses them with ``MustParse`` and panics on bad input (reference (j)9); we reject them
in config validation instead, so the message can name the config key.
"""

from __future__ import annotations

import math
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


_BINARY_EXPONENT: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
"""Each binary suffix's power of 2."""
_DECIMAL_EXPONENT: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
"""Each decimal suffix's power of 10."""
_BINARY: Final[dict[str, int]] = {suffix: 2**exponent for suffix, exponent in _BINARY_EXPONENT.items()}
_DECIMAL: Final[dict[str, Fraction]] = {
    suffix: Fraction(10) ** exponent for suffix, exponent in _DECIMAL_EXPONENT.items()
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


# --- the text Kubernetes writes back (resource.Quantity's String and MarshalJSON) -------------------

_DECIMAL_SUFFIX: Final = {exponent: suffix for suffix, exponent in _DECIMAL_EXPONENT.items()}
_BINARY_SUFFIX: Final = {exponent // 10: suffix for suffix, exponent in _BINARY_EXPONENT.items()}
_INT64_MAX: Final = 2**63 - 1
_NANO: Final = -9
_INT64_DIGITS: Final = 18
"""apimachinery's ``maxInt64Factors``: the digits its int64 fast path takes."""


def canonical_quantity(text: str) -> str:
    """The text Kubernetes' ``resource.Quantity`` writes back for ``text`` (``String``, and
    ``MarshalJSON`` alike), as any Go program that decodes and encodes a pod spec does: Flyte's app
    service building a KService, Knative's webhook defaulting one. ``1024Mi`` becomes ``1Gi``, ``0.5``
    ``500m``, ``1000`` ``1k``; text Go keeps (``1Gi``, ``100m``, ``+1``) is kept. Checked against
    apimachinery v0.34.4 itself (``tests/fixtures/kube_validation_vectors.json``). ``ValueError`` for
    text that is not a quantity (:func:`is_quantity`)."""
    match = _QUANTITY.fullmatch(text)
    exact = quantity_value(text)
    if match is None or exact is None:
        msg = f"not a Kubernetes quantity (or an exponent beyond {MAX_EXPONENT}): {text!r}"
        raise ValueError(msg)
    if text == "0":
        return text
    whole, _, denom = match["number"].partition(".")
    num = whole.lstrip("0") or "0"
    suffix = match["suffix"] or ""
    binary = suffix in _BINARY_EXPONENT
    if binary:
        exponent = _BINARY_EXPONENT[suffix]
    elif suffix in _DECIMAL_EXPONENT:
        exponent = _DECIMAL_EXPONENT[suffix]
    else:
        exponent = int(suffix[1:])  # e3, E-2
    fast = _int64_fast_path(num, denom, exponent, binary=binary)
    if fast and _kept_as_written(num, denom, exponent, binary=binary):
        return text
    value = abs(exact)
    if value and not fast:
        value = Fraction(math.ceil(value * 10**-_NANO), 10**-_NANO)  # rounded up to 1n, as Go
        if binary:
            value = min(value, Fraction(_INT64_MAX))
    if value == 0:
        return "0"
    if exact < 0:
        value = -value
    if binary and abs(value) >= 1024 and value.denominator == 1:
        return _base1024(int(value))
    return _decimal(value, exponent_format=not binary and suffix not in _DECIMAL_EXPONENT)


def _kept_as_written(num: str, denom: str, exponent: int, *, binary: bool) -> bool:
    """Whether Go's int64 fast path (:func:`_int64_fast_path`) reuses the text as written
    (apimachinery's ParseQuantity)."""
    shifted = num + denom
    value = int(shifted)
    if binary:
        return exponent % 10 == 0 and value & 0x07 != 0
    scale = exponent - len(denom)
    return scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"


def _int64_fast_path(num: str, denom: str, exponent: int, *, binary: bool) -> bool:
    """Whether Go reads the quantity on its int64 fast path (no rounding to 1n, no cap)."""
    if binary:
        if denom:
            return False
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        scale = 0
        mantissa = 2**exponent
    else:
        precision = _INT64_DIGITS - len(num) - len(denom)
        scale = exponent - len(denom)
        mantissa = 1
    return precision >= 0 and scale >= _NANO and int(num + denom) * mantissa <= _INT64_MAX


def _decimal(value: Fraction, *, exponent_format: bool) -> str:
    """``AsCanonicalBytes``: an integer mantissa and an exponent that is a multiple of 3."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    exponent = 0
    while value.denominator != 1:
        value *= 10
        exponent -= 1
    mantissa = int(value)
    while mantissa >= 10 and mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    while exponent % 3:
        mantissa *= 10
        exponent -= 1
    if exponent_format:
        return f"{sign}{mantissa}{f'e{exponent}' if exponent else ''}"
    return f"{sign}{mantissa}{_DECIMAL_SUFFIX.get(exponent, '')}"  # beyond E, Go writes no suffix


def _base1024(value: int) -> str:
    """``AsCanonicalBase1024Bytes``: the largest binary suffix that divides the value."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    power = 0
    while value >= 1024 and value % 1024 == 0:
        value //= 1024
        power += 1
    return f"{sign}{value}{_BINARY_SUFFIX.get(power, '')}"
