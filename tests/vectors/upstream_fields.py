"""Regenerate tests/fixtures/upstream_fields.json: the fields Flyte's Go app service knows.

Upstream marshals ``flyteidl2.app.Spec`` with the Go code generated into its own repository
(``gen/go``), which can be older than our pinned ``flyteidl2``: a field it lacks is an unknown field
to it, written last in its message. This reads the descriptors embedded in that generated code
(``file_..._rawDesc``) at one commit and records, for every ``flyteidl2`` message reachable from
``Spec``, each field's number, name and real oneof.

    python -m tests.vectors.upstream_fields <flyte git dir> [<commit>]

The git directory is a clone or mirror of github.com/flyteorg/flyte (the search tool's ``fetch``
gives one); the commit defaults to the one docs/upstream.md cites. Not part of ``make test``, which
reads the committed file (tests/core/test_goorder.py).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

from google.protobuf import descriptor_pb2

HERE: Final = Path(__file__).resolve().parent
OUTPUT: Final = HERE.parent / "fixtures" / "upstream_fields.json"
COMMIT: Final = "6fadb90d65af26f4db908ec1c5f5af546a3e4299"
GENERATED: Final = "gen/go/"
ROOT: Final = "flyteidl2.app.Spec"
PACKAGE: Final = "flyteidl2."
_RAW_DESC: Final = re.compile(r"_rawDesc = \[\]byte\{(.*?)\n\}", re.S)
_BYTE: Final = re.compile(r"0x([0-9a-f]{2})")

Fields = dict[int, tuple[str, str | None, str]]


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, check=True, timeout=300
    ).stdout


def _messages(prefix: str, message: descriptor_pb2.DescriptorProto, into: dict[str, Fields]) -> None:
    name = f"{prefix}.{message.name}"
    fields: Fields = {}
    for field in message.field:
        in_oneof = field.HasField("oneof_index") and not field.proto3_optional
        oneof = message.oneof_decl[field.oneof_index].name if in_oneof else None
        message_type = field.type_name.lstrip(".") if field.type == field.TYPE_MESSAGE else ""
        fields[field.number] = (field.name, oneof, message_type)
    into[name] = fields
    for nested in message.nested_type:
        _messages(name, nested, into)


def generated_messages(git_dir: Path, commit: str) -> dict[str, Fields]:
    """Every message of every generated Go file at ``commit``."""
    found: dict[str, Fields] = {}
    for path in _git(git_dir, "ls-tree", "-r", "--name-only", commit, GENERATED).split():
        if not path.endswith(".pb.go"):
            continue
        source = _git(git_dir, "show", f"{commit}:{path}")
        raw = _RAW_DESC.search(source)
        if raw is None:
            if "_rawDesc" in source:
                raise SystemExit(f"{path}: its raw descriptor is not a []byte literal; teach this script")
            continue
        file = descriptor_pb2.FileDescriptorProto.FromString(
            bytes(int(b, 16) for b in _BYTE.findall(raw.group(1)))
        )
        for message in file.message_type:
            _messages(file.package, message, found)
    return found


def reachable_from(root: str, messages: dict[str, Fields]) -> dict[str, Fields]:
    kept: dict[str, Fields] = {}
    pending = [root]
    while pending:
        name = pending.pop()
        if name in kept or not name.startswith(PACKAGE):
            continue
        kept[name] = messages[name]
        pending.extend(type_name for _, _, type_name in messages[name].values() if type_name)
    return kept


def _one_message_a_line(document: dict[str, Any]) -> str:
    messages = ",\n".join(
        f"  {json.dumps(name)}: {json.dumps(fields)}" for name, fields in document["messages"].items()
    )
    return f'{{\n "source": {json.dumps(document["source"])},\n "messages": {{\n{messages}\n }}\n}}\n'


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    git_dir, commit = Path(argv[0]), argv[1] if len(argv) == 2 else COMMIT
    full = _git(git_dir, "rev-parse", f"{commit}^{{commit}}").strip()
    messages = reachable_from(ROOT, generated_messages(git_dir, full))
    document = {
        "source": f"github.com/flyteorg/flyte@{full} {GENERATED} (tests/vectors/upstream_fields.py)",
        "messages": {
            name: {str(number): [entry[0], entry[1]] for number, entry in sorted(fields.items())}
            for name, fields in sorted(messages.items())
        },
    }
    OUTPUT.write_text(_one_message_a_line(document), encoding="utf-8")
    print(f"wrote {OUTPUT} ({len(messages)} messages)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
