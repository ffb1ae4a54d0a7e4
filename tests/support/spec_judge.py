"""The independent judge of ``flyte.org/spec`` bytes: protobuf-go itself (``tests/e2e/tools/spec-judge``).

The judge is a Go program on ``google.golang.org/protobuf``'s public API that knows the messages only
from a ``FileDescriptorSet``: ``descriptor_set`` gives it the pinned ``flyteidl2`` descriptors with
every field that upstream's generated Go at 6fadb90 lacks taken out (so those stay unknown fields, as
they are to upstream), read from ``tests/fixtures/upstream_fields.json`` (made from upstream's own
generated code by ``tests/vectors/upstream_fields.py``), never from our encoder's list. It also holds
one message of ours, ``flyteapps.test.Mixed``, with a real oneof and a proto3 ``optional`` field,
which no ``flyteidl2`` message reachable from ``Spec`` has.

Nothing here imports ``flyte_apps.core.goorder``: the judge must not mirror the code it judges.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Final

from flyteidl2.app import app_definition_pb2 as app_pb
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.message import Message

from tests.support.config import REPO_ROOT

UPSTREAM_FIELDS: Final = REPO_ROOT / "tests" / "fixtures" / "upstream_fields.json"
CORPUS: Final = REPO_ROOT / "tests" / "fixtures" / "go_spec_corpus.json"
JUDGE_TOOL: Final = "spec-judge"
JUDGE_TIMEOUT_S: Final = 120
SPEC: Final = app_pb.Spec.DESCRIPTOR.full_name
UPSTREAM_PACKAGE: Final = "flyteidl2."
"""Messages upstream generates itself; the well-known types (``google.protobuf.*``) come from the same
protobuf module on both sides."""
MIXED: Final = "flyteapps.test.Mixed"
SPEC_ANNOTATION: Final = "flyte.org/spec"
SHA_ANNOTATION: Final = "flyte.org/spec-sha"
SHA_HEX_CHARS: Final = 16
"""Written out here, not imported from flyte_apps: the judge reads what Flyte reads (reference (b))."""
_MIXED_FILE: Final = "flyteapps/test/mixed.proto"


def upstream_fields() -> dict[str, dict[int, tuple[str, str | None]]]:
    """Upstream's fields of every ``flyteidl2`` message reachable from ``Spec``: number -> (name, real
    oneof or None)."""
    data = json.loads(UPSTREAM_FIELDS.read_text(encoding="utf-8"))
    return {
        message: {int(number): (entry[0], entry[1]) for number, entry in fields.items()}
        for message, fields in data["messages"].items()
    }


def reachable(root: Descriptor) -> list[Descriptor]:
    """``root`` and every message type its fields reach, each once, in a stable order."""
    seen: dict[str, Descriptor] = {}

    def visit(described: Descriptor) -> None:
        if described.full_name in seen:
            return
        seen[described.full_name] = described
        for field in described.fields:
            if field.message_type is not None:
                visit(field.message_type)

    visit(root)
    return list(seen.values())


def pinned_only_fields() -> set[tuple[str, int]]:
    """Fields of the pinned ``flyteidl2`` (reachable from ``Spec``) that upstream's messages lack."""
    upstream = upstream_fields()
    return {
        (described.full_name, field.number)
        for described in reachable(app_pb.Spec.DESCRIPTOR)
        if described.full_name.startswith(UPSTREAM_PACKAGE)
        for field in described.fields
        if field.number not in upstream.get(described.full_name, {})
    }


def _files_in_order(root: FileDescriptor) -> list[FileDescriptor]:
    """``root`` and its imports, each after the files it imports."""
    order: list[FileDescriptor] = []

    def visit(file: FileDescriptor) -> None:
        if any(known.name == file.name for known in order):
            return
        for dependency in file.dependencies:
            visit(dependency)
        order.append(file)

    visit(root)
    return order


def _strip(message: descriptor_pb2.DescriptorProto, prefix: str, unknown: set[tuple[str, int]]) -> None:
    name = f"{prefix}.{message.name}"
    kept = [field for field in message.field if (name, field.number) not in unknown]
    del message.field[:]
    message.field.extend(kept)
    for nested in message.nested_type:
        _strip(nested, name, unknown)


def mixed_file() -> descriptor_pb2.FileDescriptorProto:
    """``message Mixed { oneof choice { string a = 1; int64 d = 4; } optional string b = 2;
    string c = 3; map<string, Mixed> children = 5; repeated int32 e = 6; }`` (proto3; Go wants a
    oneof's fields declared one after another)."""
    file = descriptor_pb2.FileDescriptorProto(name=_MIXED_FILE, package="flyteapps.test", syntax="proto3")
    mixed = file.message_type.add(name="Mixed")
    mixed.oneof_decl.add(name="choice")
    mixed.oneof_decl.add(name="_b")
    types = descriptor_pb2.FieldDescriptorProto
    optional, repeated = types.LABEL_OPTIONAL, types.LABEL_REPEATED
    mixed.field.add(name="a", number=1, type=types.TYPE_STRING, label=optional, oneof_index=0)
    mixed.field.add(name="d", number=4, type=types.TYPE_INT64, label=optional, oneof_index=0)
    mixed.field.add(
        name="b", number=2, type=types.TYPE_STRING, label=optional, oneof_index=1, proto3_optional=True
    )
    mixed.field.add(name="c", number=3, type=types.TYPE_STRING, label=optional)
    mixed.field.add(
        name="children",
        number=5,
        type=types.TYPE_MESSAGE,
        label=repeated,
        type_name=".flyteapps.test.Mixed.ChildrenEntry",
    )
    mixed.field.add(name="e", number=6, type=types.TYPE_INT32, label=repeated)
    entry = mixed.nested_type.add(name="ChildrenEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=types.TYPE_STRING, label=optional)
    entry.field.add(
        name="value", number=2, type=types.TYPE_MESSAGE, label=optional, type_name=".flyteapps.test.Mixed"
    )
    return file


@cache
def mixed_class() -> type[Message]:
    """The Python class of ``flyteapps.test.Mixed``, in a pool of its own."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(mixed_file())
    found: type[Message] = message_factory.GetMessageClass(pool.FindMessageTypeByName(MIXED))
    return found


def descriptor_set() -> bytes:
    """What the judge knows: the pinned files under ``Spec``, less the fields upstream lacks, and Mixed."""
    unknown = pinned_only_fields()
    files = descriptor_pb2.FileDescriptorSet()
    for file in _files_in_order(app_pb.Spec.DESCRIPTOR.file):
        proto = files.file.add()
        file.CopyToProto(proto)
        for message in proto.message_type:
            _strip(message, proto.package, unknown)
    files.file.append(mixed_file())
    data: bytes = files.SerializeToString()
    return data


def judge(binary: Path, message: str, specs: Sequence[bytes], work: Path) -> list[bytes]:
    """Go's bytes for each of ``specs`` (any serialization of ``message``), in order."""
    descriptors = work / "spec-judge-descriptors.binpb"
    descriptors.write_bytes(descriptor_set())
    lines = "".join(base64.b64encode(data).decode("ascii") + "\n" for data in specs)
    done = subprocess.run(
        [str(binary), "-descriptors", str(descriptors), "-message", message],
        input=lines,
        capture_output=True,
        text=True,
        timeout=JUDGE_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{binary.name} exited {done.returncode}: {done.stderr.strip()}")
    answers = [base64.b64decode(line) for line in done.stdout.splitlines()]
    if len(answers) != len(specs):
        raise RuntimeError(f"{binary.name} answered {len(answers)} lines for {len(specs)} specs")
    return answers


def corpus() -> list[dict[str, Any]]:
    """The committed corpus: each case's message, input bytes (field-number order) and Go's bytes."""
    data: dict[str, Any] = json.loads(CORPUS.read_text(encoding="utf-8"))
    return list(data["cases"])


def message_class(name: str) -> type[Message]:
    """The Python class of a corpus message: ``Spec`` or ``Mixed``."""
    if name == MIXED:
        return mixed_class()
    if name == SPEC:
        spec: type[Message] = app_pb.Spec
        return spec
    raise KeyError(f"no message {name} in the judge's corpus")


def decoded(cases: Iterable[Mapping[str, Any]], key: str) -> list[bytes]:
    return [base64.b64decode(case[key]) for case in cases]


def misjudged(binary: Path, kservices: Sequence[Mapping[str, Any]], work: Path) -> list[str]:
    """Every KService whose ``flyte.org/spec`` is not protobuf-go's bytes for the spec it holds, or whose
    ``flyte.org/spec-sha`` is not those bytes' sha, one line each (``make e2e`` judges every KService
    the suite deploys)."""
    found: list[str] = []
    specs: list[tuple[str, bytes]] = []
    for kservice in kservices:
        metadata = kservice.get("metadata", {})
        name = f"{metadata.get('namespace')}/{metadata.get('name')}"
        annotations = metadata.get("annotations") or {}
        if SPEC_ANNOTATION not in annotations:
            found.append(f"{name}: no {SPEC_ANNOTATION}")
            continue
        data = base64.b64decode(annotations[SPEC_ANNOTATION])
        if hashlib.sha256(data).hexdigest()[:SHA_HEX_CHARS] != annotations.get(SHA_ANNOTATION):
            found.append(f"{name}: {SHA_ANNOTATION} is not the sha of its {SPEC_ANNOTATION}")
        specs.append((name, data))
    canonical = [app_pb.Spec.FromString(data).SerializeToString(deterministic=True) for _, data in specs]
    for (name, ours), go in zip(specs, judge(binary, SPEC, canonical, work), strict=True):
        if ours != go:
            found.append(
                f"{name}: {SPEC_ANNOTATION} is {base64.b64encode(ours).decode()}, protobuf-go writes "
                f"{base64.b64encode(go).decode()}"
            )
    return found
