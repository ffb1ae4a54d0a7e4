"""The floor of the render benchmark: print manifests as multi-document YAML, nothing else.

Reads the objects ``flyte-apps render`` prints, pre-rendered into a JSON list, and dumps each with
the very call ``flyte_apps.core.yamlout.yaml_text`` makes (``yaml.dump`` with PyYAML's libyaml safe dumper
and the same arguments), so
the output is byte for byte that of ``render``; the benchmark checks that it is::

    python -m bench.yaml_floor OBJECTS_JSON > out.yaml
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def main(argv: list[str] | None = None) -> None:
    (path,) = sys.argv[1:] if argv is None else argv
    manifests = json.loads(Path(path).read_text(encoding="utf-8"))
    sys.stdout.write(
        "".join(
            "---\n"
            + yaml.dump(
                manifest, Dumper=DUMPER, sort_keys=False, default_flow_style=False, allow_unicode=True
            )
            for manifest in manifests
        )
    )


if __name__ == "__main__":
    main()
