"""The core both RevisionReapers adapt (the stack-config program's dynamic resource and the component
package's own resource): their inputs by each one's names in state, when a reaper runs again or is a
new one, and the one line a failed stop is. The stop itself is ``flyte_apps.kube.reaper.stop``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from flyte_apps.core.bounds import bounded
from flyte_apps.core.errors import FlyteAppsError


@dataclass(frozen=True)
class StopInputs:
    """What a reaper stops: one KService, for one stopped spec, within a bound."""

    namespace: str
    kservice: str
    spec_sha: str
    """A new sha is a new stopped spec: a new stop revision to wait for."""
    timeout_seconds: float

    @property
    def where(self) -> str:
        return f"{self.namespace}/{self.kservice}"


@dataclass(frozen=True)
class ReaperKeys:
    """The names a reaper's inputs have in its state (each adapter keeps its own spelling)."""

    namespace: str
    kservice: str
    spec_sha: str
    timeout: str

    @property
    def compared(self) -> tuple[str, str, str, str]:
        """The inputs whose change makes the reaper run again."""
        return (self.namespace, self.kservice, self.spec_sha, self.timeout)

    @property
    def replacing(self) -> tuple[str, str]:
        """The inputs whose change makes it another reaper: another KService."""
        return (self.namespace, self.kservice)

    def inputs(self, props: Mapping[str, Any]) -> StopInputs:
        """The inputs in ``props`` (raising :class:`StopFailed` for one missing or of the wrong type)."""
        try:
            return StopInputs(
                namespace=str(props[self.namespace]),
                kservice=str(props[self.kservice]),
                spec_sha=str(props[self.spec_sha]),
                timeout_seconds=float(props[self.timeout]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise stop_failure(self.where(props), exc) from None

    def where(self, props: Mapping[str, Any]) -> str:
        """``namespace/kservice`` of props that may be incomplete (for an error message)."""
        return f"{props.get(self.namespace)}/{props.get(self.kservice)}"


@dataclass(frozen=True)
class StopDiff:
    changed: tuple[str, ...]
    """The compared inputs that differ, by their names in state."""
    replaces: tuple[str, ...]


def diff_stop(keys: ReaperKeys, old: Mapping[str, Any], new: Mapping[str, Any]) -> StopDiff:
    """Offline (a preview calls it): a new stopped spec or timeout runs the reaper again; another
    KService is another reaper. Other inputs (which cluster) never make it run again."""
    changed = tuple(key for key in keys.compared if old.get(key) != new.get(key))
    return StopDiff(changed=changed, replaces=tuple(key for key in changed if key in keys.replacing))


class StopFailed(FlyteAppsError):
    """A stop that failed, as the one line the engine shows (``stopping <namespace>/<kservice>: ...``)."""


STOP_FAILED: Final = "stopping {where}: {reason}"


def stop_failure(where: str, exc: BaseException) -> StopFailed:
    """``exc`` as one line naming the KService (our own errors by their message, others by type too)."""
    reason = str(exc) if isinstance(exc, FlyteAppsError) else f"{type(exc).__name__}: {exc}"
    return StopFailed(bounded(STOP_FAILED.format(where=where, reason=reason)))
