"""The floor of the render benchmark: print manifests as multi-document YAML, nothing else.

Reads the objects ``flyte-apps render`` prints, pre-rendered into a JSON list, and dumps each with
PyYAML's standard call, ``yaml.dump`` with the dumper ``flyte_apps.core.yamlout`` defines (libyaml's
safe dumper plus the resolver rule that quotes strings Go's YAML readers would misread: without it
the bytes would differ, e.g. for a spec sha that reads as a number). So the output is byte for byte
that of ``render``; the benchmark checks that it is::

    python -m bench.yaml_floor OBJECTS_JSON > out.yaml

``render`` writes with the same call (``flyte_apps.core.yamlout.dump_yaml``): what it spends above
this floor is reading the stack file, validating and planning.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from flyte_apps.core.yamlout import YAML_DUMPER


def main(argv: list[str] | None = None) -> None:
    (path,) = sys.argv[1:] if argv is None else argv
    manifests = json.loads(Path(path).read_text(encoding="utf-8"))
    sys.stdout.write(
        "".join(
            "---\n"
            + yaml.dump(
                manifest, Dumper=YAML_DUMPER, sort_keys=False, default_flow_style=False, allow_unicode=True
            )
            for manifest in manifests
        )
    )


if __name__ == "__main__":
    main()
