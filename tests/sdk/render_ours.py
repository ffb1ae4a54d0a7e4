"""Write the specs this project renders for the SDK fixtures' apps, for ``make_fixtures.py --compare``.

Runs in the project's venv (it renders with ``flyte_apps``), from the repository root::

    .venv/bin/python -m tests.sdk.render_ours DIR
    python tests/sdk/make_fixtures.py --compare DIR --report tests/fixtures/sdk/ours-comparison.json

Each case of ``tests/support/sdk_cases.py`` becomes ``DIR/<case id>.json``: ``spec_b64`` (``flyte.org/spec``
as ``render`` writes it), ``sdk_fixture`` (the SDK's spec for the same app, which the comparison takes as
the updated spec) and ``tier``. ``tests/core/test_sdk_parity.py`` checks that every spec recorded in the
report is still the one ``render`` writes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tests.support.sdk_cases import cases


def write_specs(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for case in cases():
        path = directory / f"{case.id}.json"
        data = {"spec_b64": case.spec_b64(), "sdk_fixture": case.fixture, "tier": case.tier}
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("directory", type=Path, help="where the <case>.json files go")
    args = parser.parse_args(argv)
    written = write_specs(args.directory)
    print(f"wrote {len(written)} specs to {args.directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
