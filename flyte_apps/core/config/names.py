"""What Kubernetes, Knative and Flyte accept as names, label values and DNS names, and the
messages that say so."""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from flyte_apps.core.bounds import shown

# Every pattern is used with ``fullmatch`` and spells its classes in ASCII: ``^...$`` with ``match``
# accepts a trailing newline (``$`` matches before one), and ``\d`` accepts any script's digits.
DNS1123_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1035_LABEL: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_VALUE: Final = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
FLYTE_APP_NAME: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,28}[A-Za-z0-9])?")  # proto: 1..30 chars
ENV_VAR_NAME: Final = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")  # Kubernetes' classic IsEnvVarName
QUALIFIED_NAME: Final = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")  # a label key's name part
MAX_LABEL_LEN: Final = 63
MAX_SUBDOMAIN_LEN: Final = 253


def label_value_problem(value: str, key: str) -> str | None:
    if not value:
        return f"{key} must not be empty"
    if len(value) > MAX_LABEL_LEN or not LABEL_VALUE.fullmatch(value):
        return (
            f"'{value}' is not a valid Kubernetes label value (at most 63 letters, digits, '-', '_' "
            "or '.', starting and ending with a letter or digit); Flyte labels the KService with it"
        )
    return None


def label_key_problem(key: str) -> str | None:
    """Why Kubernetes would refuse ``key`` as a label or annotation key (an optional DNS-subdomain
    prefix and ``/``, then a name of at most 63 characters), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return f"'{key}': the prefix before '/' is empty"
    if prefix and (len(prefix) > MAX_SUBDOMAIN_LEN or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return f"'{key}': the prefix is not a DNS subdomain of at most {MAX_SUBDOMAIN_LEN} characters"
    if len(name) > MAX_LABEL_LEN or not QUALIFIED_NAME.fullmatch(name):
        return f"'{key}': the name is not {MAX_LABEL_LEN} or fewer letters, digits, '-', '_' or '.'"
    return None


def is_env_var_name(name: str) -> bool:
    """Kubernetes' classic ``IsEnvVarName``: letters, digits, ``-``, ``.``, ``_``, not starting with a
    digit, and neither ``.`` nor starting with ``..``."""
    return ENV_VAR_NAME.fullmatch(name) is not None and name != "." and not name.startswith("..")


def is_subdomain(value: str) -> bool:
    return len(value) <= MAX_SUBDOMAIN_LEN and DNS1123_SUBDOMAIN.fullmatch(value) is not None


def not_dns_label(value: str, kind: str) -> str:
    return f"'{value}' is not a {kind} label (lower-case letters, digits and '-', at most 63 characters)"


# --- image references, as the kubelet reads them (github.com/distribution/reference v0.6.0) --------

_PATH_COMPONENT: Final = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT: Final = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST: Final = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
IMAGE_REFERENCE: Final = re.compile(
    rf"(?P<name>(?:{_HOST}(?::[0-9]+)?/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    r"(?::(?P<tag>[0-9A-Za-z_][0-9A-Za-z_.-]{0,127}))?"
    r"(?:@(?P<algorithm>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*):(?P<hex>[0-9a-fA-F]{32,}))?"
)
"""The reference grammar: ``[host[:port]/]path[:tag][@algorithm:hex]``, paths in lower case."""
IMAGE_DIGEST_LENGTHS: Final = {"sha256": 64, "sha384": 96, "sha512": 128}
"""The digest algorithms the parser knows (``go-digest``), and their lengths in lower-case hex."""
MAX_IMAGE_NAME_LEN: Final = 255
"""Characters of a repository path (without the registry), as normalized (``library/`` added)."""
DOCKER_HUB: Final = "docker.io"
_IMAGE_ID: Final = re.compile(r"[a-f0-9]{64}")


def _character(text: str) -> tuple[int, str] | None:
    """The first character of ``text`` that is not printable ASCII, with its position."""
    for position, char in enumerate(text):
        if not " " < char < "\x7f":
            return position, char
    return None


def _docker_split(image: str) -> tuple[str, str]:
    """``(registry, rest)`` as the parser normalizes a reference: a first component that is not a
    registry (no ``.`` or ``:``, not ``localhost``, in lower case) is Docker Hub's, and a bare name is
    Docker Hub's ``library/``."""
    first, slash, rest = image.partition("/")
    if not slash:
        return DOCKER_HUB, f"library/{image}"
    if first == "localhost" or any(char in first for char in ".:") or first.lower() != first:
        return first, rest
    return DOCKER_HUB, image


def image_problem(image: str) -> str | None:
    """Why the kubelet would refuse ``image`` (``InvalidImageName``: the pod never starts), or None.
    An invisible or look-alike character is named with its code point: it reads like a valid image."""
    odd = _character(image)
    if odd is not None:
        position, char = odd
        name = unicodedata.name(char, "a control character")
        return (
            f"{shown(image)} has U+{ord(char):04X} ({name}) at position {position + 1}: an image "
            "reference is printable ASCII without spaces"
        )
    if _IMAGE_ID.fullmatch(image):
        return f"{shown(image)} is a 64-digit image ID, not a reference to pull (add a repository name)"
    registry, rest = _docker_split(image)
    repository = rest.split(":", 1)[0]
    found = IMAGE_REFERENCE.fullmatch(f"{registry}/{rest}")
    if repository.lower() != repository or (found is None and IMAGE_REFERENCE.fullmatch(image.lower())):
        return f"{shown(image)}: the repository name must be lower case"
    if found is None:
        return (
            f"{shown(image)} is not an image reference ([registry[:port]/]path[:tag][@sha256:digest]; "
            "the path in lower case)"
        )
    if len(found["name"]) - len(registry) - 1 > MAX_IMAGE_NAME_LEN:
        return f"{shown(image)}: the repository path is longer than {MAX_IMAGE_NAME_LEN} characters"
    algorithm = found["algorithm"]
    if algorithm is not None:
        length = IMAGE_DIGEST_LENGTHS.get(algorithm)
        if length is None:
            known = ", ".join(IMAGE_DIGEST_LENGTHS)
            return f"{shown(image)}: the digest algorithm {algorithm!r} is not one of {known}"
        digits = found["hex"]
        if len(digits) != length or digits != digits.lower():
            return f"{shown(image)}: a {algorithm} digest is {length} lower-case hex digits"
    return None
