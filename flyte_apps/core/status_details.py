"""What ``flyte-apps status`` shows about an app besides Flyte's own status: the profile and links its
spec stores (Flyte's app service only keeps them; Flyte's UI shows them) and the custom URLs its
DomainMappings serve.

Pure: the live app (``flyte_apps.core.status.kservice_to_app``) and the custom URLs in, text out. The
values come from the cluster, so each is made one bounded line (``flyte_apps.core.bounds.bounded``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from flyteidl2.app import app_definition_pb2 as app_pb

from flyte_apps.core.bounds import bounded
from flyte_apps.core.domain_status import custom_urls, mapping_drift, missing_mappings, read_mappings
from flyte_apps.core.status import Drift, app_key

HEADING: Final = "details:"
"""The line above the details in ``status``'s table output."""


@dataclass(frozen=True)
class AppDetails:
    """The profile, links and custom URLs of one app, as ``status`` prints them."""

    profile: str = ""
    """``name (type)``, or whichever of the two is set; empty without either."""
    links: tuple[str, ...] = ()
    """``title url`` (or just the url); relative links resolved against the app's public URL when it has
    one, else shown as their path."""
    custom_urls: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.profile or self.links or self.custom_urls)

    def line(self) -> str:
        """``profile: ...; links: ..., ...; custom URLs: ...`` (the parts that are set)."""
        parts = []
        if self.profile:
            parts.append(f"profile: {self.profile}")
        if self.links:
            parts.append(f"links: {', '.join(self.links)}")
        if self.custom_urls:
            parts.append(f"custom URLs: {', '.join(self.custom_urls)}")
        return "; ".join(parts)


def app_details(app: app_pb.App, custom_urls: Sequence[str] = ()) -> AppDetails:
    """What ``status`` shows of ``app``'s spec, with the custom URLs found for it."""
    spec = app.spec
    base_url = app.status.ingress.public_url
    return AppDetails(
        profile=profile_text(spec.profile) if spec.HasField("profile") else "",
        links=tuple(link_text(link, base_url) for link in spec.links),
        custom_urls=tuple(bounded(url) for url in custom_urls),
    )


def profile_text(profile: app_pb.Profile) -> str:
    name, kind = bounded(profile.name), bounded(profile.type)
    if name and kind:
        return f"{name} ({kind})"
    return name or kind


def link_text(link: app_pb.Link, base_url: str) -> str:
    """``title url``: a relative path joined to ``base_url`` (kept as a path without one)."""
    target = link.path
    if link.is_relative and base_url:
        target = f"{base_url.rstrip('/')}/{link.path.lstrip('/')}"
    text = f"{link.title} {target}" if link.title else target
    return bounded(text)


def details_lines(details: Sequence[tuple[str, AppDetails]]) -> list[str]:
    """The ``details:`` block under the table: one indented line per app that has any; none at all
    when no app has any."""
    lines = [f"  {key}: {found.line()}" for key, found in details if found]
    return [HEADING, *lines] if lines else []


@dataclass(frozen=True)
class StatusExtras:
    """What ``status`` adds to Flyte's view of each app, by ``project/domain/name``."""

    details: dict[str, AppDetails] = field(default_factory=dict)
    drift: dict[str, list[Drift]] = field(default_factory=dict)
    """Only apps with drift: a DomainMapping that exposes a stopped or cluster-local app, or one the
    stack maps that the cluster lacks."""

    def lines(self) -> list[str]:
        """The ``details:`` block of the table output (nothing when no app has details)."""
        return details_lines(list(self.details.items()))

    def json_fields(self, key: str) -> dict[str, Any]:
        """Added to the app's entry of ``status -o json``: ``customUrls`` when it has any."""
        found = self.details.get(key)
        return {"customUrls": list(found.custom_urls)} if found is not None and found.custom_urls else {}


def status_extras(
    apps: Iterable[tuple[app_pb.App, Mapping[str, Any]]],
    mapping_items: Iterable[Mapping[str, Any]],
    namespace: str,
    planned: Mapping[str, Sequence[str]] | None = None,
) -> StatusExtras:
    """The details and mapping drift of each ``(app, live KService)``, given the namespace's
    DomainMappings as the API lists them and, with a stack, the hosts it maps per app (``planned``:
    ``project/domain/name`` -> hosts; leave it out when the mappings could not be read)."""
    mappings = read_mappings(mapping_items, namespace)
    extras = StatusExtras()
    for app, ksvc in apps:
        key = app_key(app.metadata.id)
        name = str((ksvc.get("metadata") or {}).get("name") or "")
        extras.details[key] = app_details(app, custom_urls(name, mappings))
        found = [
            *mapping_drift(ksvc, mappings),
            *missing_mappings(name, (planned or {}).get(key, ()), mappings),
        ]
        if found:
            extras.drift[key] = found
    return extras
