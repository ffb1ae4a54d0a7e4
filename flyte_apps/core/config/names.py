"""What Kubernetes, Knative and Flyte accept as names, label values and DNS names, and the
messages that say so."""

from __future__ import annotations

import re
from typing import Final

DNS1123_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL: Final = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE: Final = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
FLYTE_APP_NAME: Final = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,28}[A-Za-z0-9])?$")  # proto: 1..30 chars
ENV_VAR_NAME: Final = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")  # Kubernetes' classic IsEnvVarName
QUALIFIED_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")  # a label key's name part
MAX_LABEL_LEN: Final = 63
MAX_SUBDOMAIN_LEN: Final = 253


def label_value_problem(value: str, key: str) -> str | None:
    if not value:
        return f"{key} must not be empty"
    if len(value) > MAX_LABEL_LEN or not LABEL_VALUE.match(value):
        return (
            f"'{value}' is not a valid Kubernetes label value (at most 63 letters, digits, '-', '_' "
            "or '.', starting and ending with a letter or digit); Flyte labels the KService with it"
        )
    return None


def label_key_problem(key: str) -> str | None:
    """Why Kubernetes would refuse ``key`` as a label or annotation key (an optional DNS-subdomain
    prefix and ``/``, then a name of at most 63 characters), or None."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > MAX_SUBDOMAIN_LEN or not DNS1123_SUBDOMAIN.match(prefix)):
        return f"'{key}': the prefix is not a DNS subdomain of at most {MAX_SUBDOMAIN_LEN} characters"
    if len(name) > MAX_LABEL_LEN or not QUALIFIED_NAME.match(name):
        return f"'{key}': the name is not {MAX_LABEL_LEN} or fewer letters, digits, '-', '_' or '.'"
    return None


def is_subdomain(value: str) -> bool:
    return len(value) <= MAX_SUBDOMAIN_LEN and DNS1123_SUBDOMAIN.match(value) is not None


def not_dns_label(value: str, kind: str) -> str:
    return f"'{value}' is not a {kind} label (lower-case letters, digits and '-', at most 63 characters)"
