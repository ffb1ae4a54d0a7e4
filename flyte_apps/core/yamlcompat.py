"""What different YAML readers make of one plain (unquoted) scalar.

The same text is not the same value to every reader. PyYAML (what ``flyte-apps`` reads stack files
with) follows YAML 1.1 its own way; Pulumi's CLI reads ``Pulumi.<stack>.yaml`` and ``kubectl apply``
reads manifests with Go's YAML 1.1 reader (gopkg.in/yaml.v2, through sigs.k8s.io/yaml); kustomize
and Argo CD use Go's YAML 1.2 reader (yaml.v3). Examples: ``y`` is a string to PyYAML but a boolean to
yaml.v2; ``0o17`` is a string to PyYAML and 15 to both Go readers; ``1e3`` and ``08`` are strings to
PyYAML and numbers to Go; ``1:20`` is 80 to PyYAML and a string to Go.

The kinds below are the YAML core tags' names; every reader here resolves only plain scalars (quoted
ones are always strings). The Go rules are transcribed as behaviour from yaml.v2's ``resolve``:
a map of exact words, then for text starting with a digit or a sign, a timestamp, then an integer
as Go's ``strconv.ParseInt(text, 0, 64)`` reads it after dropping every ``_``, then a float.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Final

import yaml

STR: Final = "str"
BOOL: Final = "bool"
INT: Final = "int"
FLOAT: Final = "float"
NULL: Final = "null"
TIMESTAMP: Final = "timestamp"
MERGE: Final = "merge"
VALUE: Final = "value"

TAG_PREFIX: Final = "tag:yaml.org,2002:"

KIND_NAMES: Final = {
    STR: "a string",
    BOOL: "a boolean",
    INT: "an integer",
    FLOAT: "a number",
    NULL: "null",
    TIMESTAMP: "a timestamp",
    MERGE: "a merge key",
    VALUE: "a value key",
}

# yaml.v2: words looked up before anything else (YAML 1.1's booleans, nulls and special floats).
_GO_V2_WORDS: Final = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO"), BOOL),
    **dict.fromkeys(("true", "True", "TRUE", "false", "False", "FALSE"), BOOL),
    **dict.fromkeys(("on", "On", "ON", "off", "Off", "OFF"), BOOL),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), NULL),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), FLOAT),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"), FLOAT),
    "<<": MERGE,
}
# yaml.v3 (YAML 1.2) dropped the 1.1 booleans y/n/yes/no/on/off; the rest is yaml.v2's.
_GO_V3_DROPPED: Final = frozenset(("y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO")) | frozenset(
    ("on", "On", "ON", "off", "Off", "OFF")
)
_GO_FLOAT: Final = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_GO_INT_BODY: Final = (
    (re.compile(r"0[xX][0-9a-fA-F]+"), 16),
    (re.compile(r"0[oO][0-7]+"), 8),
    (re.compile(r"0[bB][01]+"), 2),
    (re.compile(r"0[0-7]*"), 8),
    (re.compile(r"[1-9][0-9]*"), 10),
)
_GO_TIMESTAMPS: Final = (
    re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})"),
    re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(\.\d+)?(Z|[-+]\d{2}:\d{2})"),
    re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2}) (\d{1,2}):(\d{1,2}):(\d{1,2})(\.\d+)?"),
)
_INT64_MAX: Final = 2**63 - 1
_UINT64_MAX: Final = 2**64 - 1
_GO_NUMERIC_START: Final = frozenset("0123456789+-")

# YAML 1.2 core schema (the spec's own regular expressions), for readers stricter than yaml.v3.
_CORE_12: Final = (
    (re.compile(r"null|Null|NULL|~|"), NULL),
    (re.compile(r"true|True|TRUE|false|False|FALSE"), BOOL),
    (re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"), INT),
    (re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?"), FLOAT),
    (re.compile(r"[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"), FLOAT),
)
_QUICK_STRING_START: Final = frozenset("0123456789+-.yYnNtTfFoO~<=")
"""A plain scalar whose first character is none of these is a string to every reader here."""


def pyyaml_kind(text: str) -> str:
    """The kind PyYAML's safe loader gives ``text`` as a plain scalar."""
    resolver: Any = yaml.resolver.Resolver()
    tag = resolver.resolve(yaml.ScalarNode, text, (True, False))
    return str(tag).removeprefix(TAG_PREFIX)


def go_yaml_v2_kind(text: str) -> str:
    """The kind Go's gopkg.in/yaml.v2 (Pulumi's stack files, ``kubectl apply``) gives ``text``."""
    word = _GO_V2_WORDS.get(text)
    if word is not None:
        return word
    if not text:
        return NULL
    first = text[0]
    if first == ".":
        return FLOAT if _go_parse_float(text) else STR
    if first not in _GO_NUMERIC_START:
        return STR
    if _go_timestamp(text):
        return TIMESTAMP
    plain = text.replace("_", "")
    if _go_parse_int(plain):
        return INT
    if _GO_FLOAT.fullmatch(plain) and _go_parse_float(plain):
        return FLOAT
    if plain.startswith(("0b", "-0b")) and re.fullmatch(r"-?0b[01]+", plain):
        return INT
    return STR


def go_yaml_v3_kind(text: str) -> str:
    """The kind Go's gopkg.in/yaml.v3 (kustomize, Argo CD) gives ``text``: yaml.v2's, less the YAML
    1.1 booleans."""
    return STR if text in _GO_V3_DROPPED else go_yaml_v2_kind(text)


def yaml12_core_kind(text: str) -> str:
    """The kind the YAML 1.2 core schema gives ``text``."""
    for pattern, kind in _CORE_12:
        if pattern.fullmatch(text):
            return kind
    return STR


def read_as_non_string(text: str) -> bool:
    """True when any reader here would take plain ``text`` for something other than a string, so a
    writer must quote it to keep it a string for all of them."""
    if text and text[0] not in _QUICK_STRING_START:
        return False
    return any(
        kind(text) != STR for kind in (pyyaml_kind, go_yaml_v2_kind, go_yaml_v3_kind, yaml12_core_kind)
    )


def _go_parse_int(plain: str) -> bool:
    """Whether Go's ``strconv.ParseInt(plain, 0, 64)`` or ``ParseUint`` accepts ``plain``."""
    sign = plain[:1] if plain[:1] in ("+", "-") else ""
    body = plain[len(sign) :]
    for pattern, base in _GO_INT_BODY:
        if pattern.fullmatch(body):
            digits = body[2:] if base != 10 and len(body) > 1 and body[1].isalpha() else body
            value = int(digits or "0", base)
            if sign == "-":
                return value <= _INT64_MAX + 1
            return value <= (_INT64_MAX if sign else _UINT64_MAX)
    return False


def _go_parse_float(text: str) -> bool:
    """Whether Go's ``strconv.ParseFloat(text, 64)`` accepts ``text`` (decimal forms, in range)."""
    if not _GO_FLOAT.fullmatch(text):
        return False
    return abs(float(text)) != float("inf")


def _go_timestamp(text: str) -> bool:
    """yaml.v2 tries timestamps only for text that starts with four digits and a dash."""
    if not re.match(r"\d{4}-", text):
        return False
    for pattern in _GO_TIMESTAMPS:
        match = pattern.fullmatch(text)
        if match is None:
            continue
        year, month, day = (int(part) for part in match.groups()[:3])
        try:
            datetime.date(year, month, day)
        except ValueError:
            return False
        if len(match.groups()) > 3:
            hour, minute, second = (int(part) for part in match.groups()[3:6])
            if hour > 23 or minute > 59 or second > 59:
                return False
        return True
    return False
