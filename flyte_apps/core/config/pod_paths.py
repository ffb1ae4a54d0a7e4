"""Places in an app's merged pod spec, and the config keys they were written at.

The merged pod spec (``flyte_apps.core.config.payload``) mixes what the pod template says with what
the app's ``container`` says; a problem found in it is reported where the user wrote the value:
``flyte-apps:apps[0].pod.spec.containers[1].image``, or ``flyte-apps:apps[0].container.ports[0]``
for what came from the app's container.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final

from flyte_apps.core.config.payload import ContainerOrigin, Payload

CONTAINER_LISTS: Final = ("containers", "initContainers")

Place = tuple[str | int, ...]
"""Keys and list indexes from the pod spec's root: ``("containers", 0, "image")``."""


class KeyPaths:
    """Turns a place in the merged pod spec into the config key the user wrote it at."""

    def __init__(self, payload: Payload, app_path: str) -> None:
        self.payload = payload
        self.app_path = app_path

    def __call__(self, place: Place) -> str:
        origins = self.payload.origins
        if (
            len(place) >= 2
            and place[0] == "containers"
            and isinstance(place[1], int)
            and place[1] < len(origins)
        ):
            return self._in_container(origins[place[1]], list(place[2:]))
        return self.payload.spec_path + suffix(place)

    def _in_container(self, origin: ContainerOrigin, rest: list[str | int]) -> str:
        if len(rest) >= 2 and rest[0] in ("env", "ports") and isinstance(rest[1], int):
            offset = origin.env_offset if rest[0] == "env" else origin.ports_offset
            if rest[1] < offset:  # written in the app's container
                given: Place = (rest[0], rest[1]) if rest[0] == "ports" else (rest[0],)
                return f"{self.app_path}.container{suffix(given)}"
            rest = [rest[0], rest[1] - offset, *rest[2:]]
        return origin.path + suffix(tuple(rest))


def suffix(place: Sequence[str | int]) -> str:
    """``place`` as a key path's tail: ``.key`` for a key, ``[i]`` for an index."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in place)


def dicts(value: object) -> Iterator[tuple[int, dict[str, Any]]]:
    """The items of a list that are maps, with their indexes (the schemas report the others)."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, dict):
                yield index, item
