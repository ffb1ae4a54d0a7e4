"""The failures of the Kubernetes access layer, already phrased for the person running the tool.

Every failure talking to Kubernetes reaches the user as one :class:`KubeError` whose message names
the operation, the object and what to fix, instead of a raw ``ApiException`` dump (which also
prints response headers). The subclasses let callers and the CLI's exit codes tell the families
apart; :class:`KubeError` derives from the project's ``FlyteAppsError`` (errors raised on purpose).
"""

from __future__ import annotations

from flyte_apps.core.credentials import redact
from flyte_apps.core.errors import FlyteAppsError


class KubeError(FlyteAppsError):
    """Any failure talking to Kubernetes; ``status`` is the HTTP status when there was one. The
    message is redacted (``flyte_apps.core.credentials``): servers, headers and libraries' complaints
    end up in it, and it is printed, logged and, from the reaper, stored by the engine."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(redact(message))
        self.status = status


class KubeNotFound(KubeError):
    """The object (or its namespace) does not exist: HTTP 404."""


class KubeApiMissing(KubeError):
    """The API server has no such resource type at all (a CRD that is not installed): HTTP 404 for
    the type itself, not for one object. Not a :class:`KubeNotFound`: no app is "missing", the
    cluster is."""


class KubeForbidden(KubeError):
    """RBAC denied the request: HTTP 403."""


class KubeConflict(KubeError):
    """HTTP 409: already exists, or a write raced another writer; never retried blindly."""


class KubeUnreachable(KubeError):
    """No HTTP answer at all: refused, reset, timed out (after our retries)."""


class KubeConfigError(KubeError):
    """No usable cluster configuration: nothing found, or what was found does not load."""


class KubeBadResponse(KubeError):
    """The API server answered, but not with what the Kubernetes API sends: invalid JSON, a JSON
    array where an object belongs, an object of the wrong shape, an HTML page (a proxy's login page
    answered with status 200), or a list whose ``continue`` token repeats. Never retried."""
