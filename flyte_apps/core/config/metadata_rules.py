"""Rules for a pod template's metadata (``pod.metadata``): valid label and annotation keys and label
values always (they are in the spec), and, once applied to the revision template
(``platform.applyPodMetadata``), no key that Flyte, its secret webhook or Knative own there: those
would be silently overridden, or override what Flyte's app service and Knative rely on.
"""

from __future__ import annotations

from typing import Final

from flyte_apps.core import constants as c
from flyte_apps.core.bounds import shown
from flyte_apps.core.config.models import PodMetadata
from flyte_apps.core.config.names import LABEL_VALUE, MAX_LABEL_LEN, label_key_problem
from flyte_apps.core.errors import ConfigProblem

SECRET_WEBHOOK_LABELS: Final = (
    c.SECRET_LABEL_ORGANIZATION,
    c.SECRET_LABEL_PROJECT,
    c.SECRET_LABEL_DOMAIN,
    c.SECRET_LABEL_INJECT,
)
"""The labels Flyte puts on a revision for its secret webhook's object selector."""


def pod_metadata_problems(metadata: PodMetadata, *, applied: bool, path: str) -> list[ConfigProblem]:
    """Valid label and annotation keys and label values; once applied to the revision template, no
    key of Flyte, its secret webhook or Knative (they would be silently overridden, or override)."""
    found: list[ConfigProblem] = []
    for kind, entries in (("labels", metadata.labels), ("annotations", metadata.annotations)):
        for key, value in entries.items():
            where = f"{path}.{kind}.{key}"
            problem = label_key_problem(key)
            if problem:
                found.append(ConfigProblem(where, f"not a valid Kubernetes {kind[:-1]} key: {problem}"))
                continue
            if kind == "labels" and (len(value) > MAX_LABEL_LEN or not LABEL_VALUE.fullmatch(value)):
                found.append(
                    ConfigProblem(
                        where,
                        f"{shown(value)} is not a valid Kubernetes label value (at most 63 letters, digits, "
                        "'-', '_' or '.', starting and ending with a letter or digit)",
                    )
                )
            if applied and (owner := reserved_owner(key, labels=kind == "labels")):
                found.append(
                    ConfigProblem(
                        where,
                        f"'{key}' belongs to {owner}; pod metadata may not set it on the revision template",
                    )
                )
    return found


def reserved_owner(key: str, *, labels: bool) -> str | None:
    """Who owns ``key`` on a revision template, if anyone but the app."""
    prefix, slash, _ = key.rpartition("/")
    if slash and any(
        prefix == domain or prefix.endswith(f".{domain}") for domain in c.RESERVED_TEMPLATE_DOMAINS
    ):
        return "Flyte" if prefix.endswith(("flyte.org", "flyte.secrets")) else "Knative"
    if labels and key in SECRET_WEBHOOK_LABELS:
        return "Flyte's secret webhook"
    return None
