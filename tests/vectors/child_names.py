"""Regenerate tests/fixtures/knative_child_names.json: the names Knative gives child objects.

``python -m tests.vectors.child_names`` (``make vectors``; needs Go and the Go module proxy) runs
``tests/vectors/childname`` — knative.dev/pkg's ``kmeta.ChildName`` at the version Knative Serving
v0.48.2 builds with, which names a Configuration's revisions (``-%05d`` of its generation) — over the
pairs below and writes its answers. The file is committed; ``make test`` only reads it
(tests/core/test_knative_names.py), so the suite needs no Go.
"""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Final

from tests.vectors.gorun import write_judged

HERE: Final = Path(__file__).resolve().parent
OUTPUT: Final = HERE.parent / "fixtures" / "knative_child_names.json"
SEED: Final = 20261206
RANDOM_PAIRS: Final = 400
NAME_ALPHABET: Final = string.ascii_lowercase + string.digits + "-"
GENERATIONS: Final = (1, 2, 10, 99_999, 100_000, 1_234_567, 2**63 - 1)
"""Revision suffixes ``-%05d``: the first generations, where the five digits overflow, int64's top."""
CURATED_PARENTS: Final = (
    "a",
    "notebook-flytesnacks-development",
    "x" * 57,  # + "-00001" is exactly 63
    "x" * 58,  # one past: hashed
    "y" * 63,
    "app-" + "z" * 55,
    "app-name-with-dashes-" * 3,
)


def random_name(rng: random.Random, longest: int) -> str:
    """A lower-case DNS-label-like name (dashes anywhere, so a cut can end on one)."""
    return "".join(rng.choice(NAME_ALPHABET) for _ in range(rng.randrange(1, longest + 1)))


def pairs() -> list[tuple[str, str]]:
    """Every curated parent with every revision suffix, then seeded random parents with revision
    suffixes and with free suffixes up to 70 characters (31 or more take ChildName's other branch)."""
    chosen = [(parent, f"-{generation:05d}") for parent in CURATED_PARENTS for generation in GENERATIONS]
    rng = random.Random(SEED)
    for _ in range(RANDOM_PAIRS):
        parent = random_name(rng, 70)
        if rng.random() < 0.5:
            chosen.append((parent, f"-{rng.choice(GENERATIONS):05d}"))
        else:
            chosen.append((parent, "-" + random_name(rng, 70)))
    return list(dict.fromkeys(chosen))


def main() -> int:
    return write_judged(HERE / "childname", pairs(), OUTPUT, "names")


if __name__ == "__main__":
    raise SystemExit(main())
