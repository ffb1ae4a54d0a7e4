"""Regenerate tests/fixtures/kube_validation_vectors.json: Kubernetes' own verdicts on tricky strings.

``python -m tests.vectors.generate`` (``make vectors``; needs Go and the Go module proxy) runs the
judge in ``tests/vectors/judge`` — ``k8s.io/apimachinery``'s ``IsQualifiedName``,
``IsValidLabelValue``, ``IsDNS1123Label``, ``IsDNS1123Subdomain``, ``IsEnvVarName`` and
``resource.ParseQuantity`` (and, for a quantity, the text ``resource.Quantity`` writes back), and
``reference.ParseNormalizedNamed`` (how the kubelet reads an image) —
over the inputs below and writes its answers. The file is committed; ``make test`` only reads it
(tests/core/test_kube_vectors.py), so the suite needs no Go.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Final

from tests.vectors.gorun import write_judged

HERE: Final = Path(__file__).resolve().parent
OUTPUT: Final = HERE.parent / "fixtures" / "kube_validation_vectors.json"
RANDOM_INPUTS: Final = 400
SEED: Final = 20261202
RANDOM_QUANTITIES: Final = 600
QUANTITY_SEED: Final = 20261205
QUANTITY_SUFFIXES: Final = (
    "",
    "n",
    "u",
    "m",
    "k",
    "M",
    "G",
    "T",
    "P",
    "E",
    "Ki",
    "Mi",
    "Gi",
    "Ti",
    "Pi",
    "Ei",
)
ALPHABET: Final = "aZ09-._/:@+=~ \t\n\r\x00\u00e9\u0430\u0445\u0661\u0663\u200b\u00a0\ufeffkKmMGiEeu"
"""Letters, digits, every separator the grammars use, whitespace, NUL and look-alikes: Cyrillic a and x
(U+0430, U+0445), Arabic-Indic digits, a zero-width space, a no-break space, a BOM."""

SHA: Final = "sha256:" + "a" * 64
CURATED: Final = [
    # names, label values, subdomains
    "",
    "a",
    "abc",
    "ABC",
    "a-b",
    "-a",
    "a-",
    "a.b",
    "a_b",
    "a..b",
    "a" * 63,
    "a" * 64,
    "a." * 126 + "a",
    "a." * 127 + "a",
    "example.com/name",
    "example.com/",
    "/name",
    "Example.com/name",
    "a/b/c",
    "flyte\n",
    "flyte\r",
    "flyte ",
    " flyte",
    "fly te",
    "nam\u0435",  # a Cyrillic e
    "na\u200bme",
    "\ufeffname",
    "x\x00y",
    # environment variable names
    "GOOD",
    "GOOD\n",
    "_GOOD",
    "1BAD",
    "good.name-x",
    "A=B",
    "PATH",
    "caf\u00e9",
    # quantities
    "1",
    "0",
    "1Gi",
    "1Gi\n",
    " 1Gi",
    "1gi",
    "1G",
    "1e3",
    "1E3",
    "1.5",
    ".5",
    "5.",
    "-1",
    "+1",
    "100m",
    "1001m",
    "1Ki",
    "1k",
    "1K",
    "\u0663",
    "1\u0663",
    "\u0661Gi",
    "1Mi ",
    "1.5Gi",
    "0.1m",
    "1n",
    "1u",
    "9" * 20,
    "1Ei",
    "2Ei",
    "1e",
    "e1",
    "Gi",
    # quantities Kubernetes writes back in another form (resource.Quantity's String)
    "1024Mi",
    "1536Mi",
    "2048Ki",
    "8Ki",
    "1.5Gi",
    "0.5Gi",
    "0.5Ki",
    "1.5Ki",
    "1000",
    "1000m",
    "1500m",
    "2000m",
    "0.5",
    "0.25",
    "0.1m",
    "0.5n",
    "1e4",
    "1e-3",
    "10e3",
    "01",
    "001.5",
    "-0",
    "0.0",
    "0Gi",
    "-1024Mi",
    "9Ei",
    "8Ei",
    "1000E",
    "1000000000000000000000",
    "0.000000000001",
    "123456789012345678901234",
    "1.0",
    "2.",
    "1.G",
    "1.50Gi",
    "3000Mi",
    "4096",
    "128974848",
    "129e6",
    "129M",
    "123Mi",
    "1Pi",
    "1024Pi",
    # images
    "nginx",
    "nginx:1.27",
    "nginx:1.27\u200b",
    "ngin\u0445:1.27",
    "Nginx",
    "nginx:Latest",
    "library/nginx",
    "docker.io/library/nginx:1.27",
    "ghcr.io/flyteorg/flyte:v2.0.0",
    "localhost/app",
    "localhost:5000/app:tag",
    "127.0.0.1:5000/app",
    "[fe80::1]:5000/app",
    "[fe80::1%eth0]:5000/app",
    "registry.example.com/Team/app",
    "Registry.Example.com/team/app",
    "app@" + SHA,
    "app:1.0@" + SHA,
    "app@sha256:" + "a" * 63,
    "app@sha256:" + "A" * 64,
    "app@sha512:" + "a" * 128,
    "app@md5:" + "a" * 32,
    "a" * 64,
    "a" * 256,
    "example.com/" + "a" * 250,
    "app:" + "t" * 128,
    "app:" + "t" * 129,
    "app:-tag",
    "app:_tag",
    "app:.tag",
    "a__b/c",
    "a___b/c",
    "a--b/c",
    "a.-b",
    "app:",
    ":tag",
    "app//x",
    "app/",
    "app\n",
    " app",
    "app ",
    "foo_bar.com:8080",
    "foo/foo_bar.com:8080",
    "ex\u00e4mple.com/app",
]


def random_quantity(rng: random.Random) -> str:
    """A quantity in Kubernetes' grammar: a sign, digits (leading zeros at times), a fraction, a suffix
    or an exponent, sized from tiny to past what an int64 holds."""
    sign = rng.choice(("", "", "", "+", "-"))
    whole = "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, rng.choice((3, 8, 22)))))
    fraction = (
        "." + "".join(rng.choice("0123456789") for _ in range(rng.randrange(0, 12)))
        if rng.random() < 0.4
        else ""
    )
    suffix = f"e{rng.randrange(-12, 25)}" if rng.random() < 0.15 else rng.choice(QUANTITY_SUFFIXES)
    return sign + whole + fraction + suffix


def inputs() -> list[str]:
    rng = random.Random(SEED)
    generated = [
        "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(1, 12))) for _ in range(RANDOM_INPUTS)
    ]
    quantities = random.Random(QUANTITY_SEED)
    generated += [random_quantity(quantities) for _ in range(RANDOM_QUANTITIES)]
    seen: dict[str, None] = {}
    for value in [*CURATED, *generated]:
        seen.setdefault(value, None)
    return list(seen)


def main() -> int:
    return write_judged(HERE / "judge", inputs(), OUTPUT, "inputs")


if __name__ == "__main__":
    raise SystemExit(main())
