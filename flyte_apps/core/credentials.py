"""Credentials: which env vars look like them (shared by the policy pack's ``no-plaintext-credentials``
rule and by ``flyte-apps import``, which never writes such a value into a stack file), and taking them
out of text before anyone sees it.

Errors name servers, headers and settings, and the people who run this tool paste them into tickets
and pull requests. A kubeconfig's server URL may carry ``user:password@`` or ``?access_token=``, an
HTTP library's complaint may quote an ``Authorization`` header, and a bad value may be a token. Every
message of the Kubernetes layer, and every error the CLI prints, goes through :func:`redact`."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Final

CREDENTIAL_PATTERNS: Final = (
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*PASSPHRASE*",
    "*TOKEN*",
    "*ACCESS_KEY*",
    "*ACCESSKEY*",
    "*API_KEY*",
    "*APIKEY*",
    "*PRIVATE_KEY*",
    "*CREDENTIAL*",
)
"""Env var names (upper-cased, every other character as ``_``) that name a credential."""
NOT_A_CREDENTIAL_SUFFIXES: Final = ("_FILE", "_PATH", "_DIR", "_URL", "_URI", "_ENDPOINT", "_NAME")
"""``TOKEN_URL``, ``PASSWORD_FILE``, ``SECRET_NAME``: where a credential is, not the credential."""
CREDENTIAL_VALUE: Final = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----"  # PEM private keys
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key ids
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|\bgithub_pat_[A-Za-z0-9_]{30,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"  # Slack tokens
    r"|\bsk-[A-Za-z0-9_-]{20,}"  # OpenAI-style secret keys
    r"|\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\."  # JWTs
    r"|://[^/\s:@]+:[^/\s@]+@"  # a URL with a password in it
)
"""Values that are credentials whatever their env var is called."""


def looks_like_credential(name: str, allowed: frozenset[str] = frozenset()) -> bool:
    """Whether an env var named ``name`` carries a credential (``allowed``: names declared safe)."""
    if name in allowed:
        return False
    normalized = re.sub(r"[^A-Z0-9]", "_", name.upper())
    if normalized.endswith(NOT_A_CREDENTIAL_SUFFIXES):
        return False
    return any(fnmatchcase(normalized, pattern) for pattern in CREDENTIAL_PATTERNS)


def value_looks_like_credential(value: str) -> bool:
    """Whether ``value`` itself has the shape of a well-known kind of credential."""
    return CREDENTIAL_VALUE.search(value) is not None


HIDDEN: Final = "***"
_REDACTIONS: Final = (
    # userinfo of a URL: https://user:secret@host -> https://***@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]+@"), rf"\1{HIDDEN}@"),
    # a URL's query string: https://host/path?access_token=x -> https://host/path?***
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s?#'\"]+)\?[^\s#'\"]+"), rf"\1?{HIDDEN}"),
    # an Authorization header's credential: Bearer x, Basic x
    (re.compile(r"(?i)\b(bearer|basic)(\s+|%20)[A-Za-z0-9._~+/=-]+"), rf"\1\2{HIDDEN}"),
    # token: x, password=x, client-key-data: x ...
    (
        re.compile(
            r"(?i)\b(token|password|passwd|secret|access[-_]token|id[-_]token|api[-_]?key|"
            r"client[-_]key[-_]data)(['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+"
        ),
        rf"\1\2{HIDDEN}",
    ),
    # a JSON Web Token, all three parts (service-account tokens, OIDC id-tokens)
    (re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"), HIDDEN),
    # whatever has the shape of a well-known credential (a PEM key's head, cloud and chat tokens)
    (CREDENTIAL_VALUE, HIDDEN),
)


def redact(text: str) -> str:
    """``text`` with URL userinfo and query strings, authorization credentials, ``token=`` /
    ``password:``-style values and anything shaped like a well-known credential replaced by ``***``."""
    for pattern, replacement in _REDACTIONS:
        text = pattern.sub(replacement, text)
    return text
