"""The project's domain errors: one exception per failure family, translated only at the edges."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class ConfigProblem:
    """One mistake in the stack config, located by its key path (``flyte-apps:apps[2].name``)."""

    path: str
    message: str
    file: str | None = None
    """The stack file and line the key is written at, once located (``located``), else None."""
    line: int | None = None

    @property
    def where(self) -> str:
        """``Pulumi.dev.yaml:42 flyte-apps:apps[1].name`` once located, else the key path."""
        return f"{self.file}:{self.line} {self.path}" if self.file is not None else self.path

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class FlyteAppsError(Exception):
    """Base class for every error this project raises on purpose."""


class ConfigError(FlyteAppsError):
    """The stack config has one or more problems; all of them are listed, none is applied."""

    def __init__(self, problems: list[ConfigProblem]) -> None:
        self.problems = sorted(set(problems), key=_problem_order)
        super().__init__("\n".join(str(p) for p in self.problems))


def _problem_order(problem: ConfigProblem) -> tuple[object, ...]:
    """Order problems by path, treating list indexes numerically (apps[10] after apps[9])."""
    parts: list[object] = []
    token = ""
    for char in problem.where:
        if char.isdigit():
            token += char
            continue
        if token:
            parts.append((1, int(token)))
            token = ""
        parts.append((0, char))
    if token:
        parts.append((1, int(token)))
    return (tuple(parts), problem.message)
