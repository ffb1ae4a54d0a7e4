"""What `pulumi up` printed about each failing resource, read from its "Diagnostics:" section (the fault
scenarios judge the messages there: the progress lines above it repeat them, cut short)."""

from __future__ import annotations

import re
from typing import Final

STACK_TYPE: Final = "pulumi:pulumi:Stack"
"""The stack's own diagnostics are Pulumi's summary ("update failed"), naming no object."""
HEADER: Final = re.compile(r"  (\S+ \(.+\)):")
"""A resource's line in the section: two spaces, ``<type> (<name>):``."""


def failures(output: str) -> dict[str, list[str]]:
    """``<type> (<name>)`` -> its message lines, for each resource but the stack (pulumi-kubernetes'
    multi-errors take several lines: ``1 error occurred:`` then tab-indented ``* ...`` items)."""
    found: dict[str, list[str]] = {}
    _, _, section = output.partition("Diagnostics:\n")
    current: list[str] | None = None
    for line in section.splitlines():
        if line and not line[0].isspace():
            break  # the next section (Outputs, Resources)
        header = HEADER.fullmatch(line)
        if header:
            name = header.group(1)
            current = None if name.startswith(STACK_TYPE) else found.setdefault(name, [])
        elif current is not None and line.strip():
            current.append(line.strip())
    return found
