"""Flyte's secret annotations: ``flyte.secrets/s{i}`` = Base32 (Flyte's alphabet, no padding) of the
golang/protobuf text form of a ``flyteidl2.core.Secret``, which Flyte's pod webhook decodes to inject
the secret (reference (b), (c)5 step 6)."""

from __future__ import annotations

import base64
from typing import Final

from flyteidl2.core import security_pb2

FLYTE_BASE32_ALPHABET: Final = "abcdefghijklmnopqrstuvwxyz123456"
_STANDARD_BASE32_ALPHABET: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_TO_FLYTE: Final = str.maketrans(_STANDARD_BASE32_ALPHABET, FLYTE_BASE32_ALPHABET)
_FROM_FLYTE: Final = str.maketrans(FLYTE_BASE32_ALPHABET, _STANDARD_BASE32_ALPHABET)
_ESCAPES: Final = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"', ord("\\"): "\\\\"}
_PRINTABLE: Final = range(0x20, 0x7F)


def secret_text(secret: security_pb2.Secret) -> str:
    """The golang/protobuf ``MarshalTextString`` form: one ``name: value`` line per set field, in field
    order; strings quoted with C escapes (apostrophes kept as they are, as golang/protobuf does) and
    every non-printable or non-ASCII byte as octal."""
    lines = []
    for field, value in secret.ListFields():
        if field.enum_type is not None:
            rendered = field.enum_type.values_by_number[value].name
        else:
            rendered = _quote(str(value))
        lines.append(f"{field.name}: {rendered}\n")
    return "".join(lines)


def encode_secret(secret: security_pb2.Secret) -> str:
    """The annotation value for one secret."""
    encoded = base64.b32encode(secret_text(secret).encode("utf-8")).decode("ascii")
    return encoded.rstrip("=").translate(_TO_FLYTE)


def decode_secret_text(encoded: str) -> str:
    """Inverse of the Base32 step (for tests and for reading live objects)."""
    standard = encoded.translate(_FROM_FLYTE)
    return base64.b32decode(standard + "=" * (-len(standard) % 8)).decode("utf-8")


def _quote(text: str) -> str:
    out = []
    for byte in text.encode("utf-8"):
        if byte in _ESCAPES:
            out.append(_ESCAPES[byte])
        elif byte in _PRINTABLE:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'
