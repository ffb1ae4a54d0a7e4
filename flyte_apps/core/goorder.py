"""A proto message's bytes as Flyte's Go app service writes them: protobuf-go's ``proto.Marshal``.

Python's protobuf writes every message in field-number order. protobuf-go does not: in a message that
has a oneof, it writes the fields outside any (non-synthetic) oneof by number, then the members of the
oneofs (oneofs in declaration order, then by number), then the fields it does not know. Facts from
``google.golang.org/protobuf`` v1.36 (``internal/impl/codec_message.go``, ``internal/order``), checked
against vectors from upstream's own code (``tests/core/test_goorder.py``).

Upstream's Go was generated from an older ``flyteidl2`` than ours: a field only our pinned package has
(``FIELDS_UNKNOWN_TO_UPSTREAM``) is an unknown field to upstream and goes last in its message, in
field-number order (the order Flyte's SDK sent it in). Map entries are written sorted by key, as
Go's deterministic option does; Go's default order is random, so for a spec with a map (a pod
payload) no byte-exact match with upstream's live annotation exists.

Only protobuf's public API is used: a scalar or repeated scalar field is serialized by protobuf
itself, alone in an otherwise empty message of its type; nested messages and map entries are framed
here (a tag and a length) around their own bytes in this order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

FIELDS_UNKNOWN_TO_UPSTREAM: Final = frozenset(
    {
        ("flyteidl2.app.Spec", 16),  # cluster
        ("flyteidl2.core.GPUAccelerator", 5),  # accelerator_model
    }
)
"""Fields our pinned ``flyteidl2`` has and Flyte's Go app service at 6fadb90 (the commit
docs/upstream.md cites) does not know: (message, field number). ``tests/core/test_goorder.py`` keeps
this list equal to the pinned descriptors less upstream's (``tests/fixtures/upstream_fields.json``)."""

_WIRE_LENGTH_DELIMITED: Final = 2
_MAP_KEY: Final = "key"
_MAP_VALUE: Final = "value"


def marshal(message: Message) -> bytes:
    """``message`` in protobuf-go's order, maps sorted by key (Go's ``Deterministic: true``)."""
    return _Encoder().message(message)


class _Encoder:
    """One marshalling: remembers each message type's oneof ranks (a pod payload's ``Struct`` holds
    many ``Value`` messages of one type)."""

    def __init__(self) -> None:
        self._ranks: dict[str, dict[int, int]] = {}

    def message(self, message: Message) -> bytes:
        known: list[tuple[FieldDescriptor, Any]] = []
        unknown: list[tuple[FieldDescriptor, Any]] = []
        descriptor = message.DESCRIPTOR
        for field, value in message.ListFields():
            target = unknown if (descriptor.full_name, field.number) in FIELDS_UNKNOWN_TO_UPSTREAM else known
            target.append((field, value))
        if len(known) > 1 and descriptor.oneofs:
            rank = self._oneof_ranks(descriptor)
            known.sort(key=lambda pair: (rank.get(pair[0].number, -1), pair[0].number))
        unknown.sort(key=lambda pair: pair[0].number)
        return b"".join(self._field(message, field, value) for field, value in (*known, *unknown))

    def _oneof_ranks(self, descriptor: Descriptor) -> dict[int, int]:
        """Field number -> declaration index of its real oneof; fields outside one are absent. A proto3
        ``optional`` field sits in a synthetic oneof of its own, which Go does not count as a oneof."""
        found = self._ranks.get(descriptor.full_name)
        if found is None:
            synthetic = _proto3_optional_numbers(descriptor)
            found = {
                field.number: index
                for index, oneof in enumerate(descriptor.oneofs)
                for field in oneof.fields
                if field.number not in synthetic
            }
            self._ranks[descriptor.full_name] = found
        return found

    def _field(self, message: Message, field: FieldDescriptor, value: Any) -> bytes:
        if field.type != FieldDescriptor.TYPE_MESSAGE:
            return _alone(message, field, value)
        if field.message_type.GetOptions().map_entry:
            return b"".join(self._map_entry(message, field, key, value[key]) for key in sorted(value))
        if _is_repeated(field):
            return b"".join(_length_delimited(field.number, self.message(item)) for item in value)
        return _length_delimited(field.number, self.message(value))

    def _map_entry(self, message: Message, field: FieldDescriptor, key: Any, value: Any) -> bytes:
        """One map entry. Go writes the key and the value even when they are defaults, as protobuf does
        for a map with a single entry; a message value is written in Go's order."""
        value_field = field.message_type.fields_by_name[_MAP_VALUE]
        if value_field.type != FieldDescriptor.TYPE_MESSAGE:
            single = type(message)()
            getattr(single, field.name)[key] = value
            data: bytes = single.SerializeToString()
            return data
        key_field = field.message_type.fields_by_name[_MAP_KEY]
        if key_field.type != FieldDescriptor.TYPE_STRING:
            text = f"{field.full_name}: a message-valued map with {key_field.type} keys is not supported"
            raise TypeError(text)
        entry = _length_delimited(key_field.number, key.encode("utf-8")) + _length_delimited(
            value_field.number, self.message(value)
        )
        return _length_delimited(field.number, entry)


def _proto3_optional_numbers(descriptor: Descriptor) -> frozenset[int]:
    proto = descriptor_pb2.DescriptorProto()
    descriptor.CopyToProto(proto)
    return frozenset(field.number for field in proto.field if field.proto3_optional)


def _alone(message: Message, field: FieldDescriptor, value: Any) -> bytes:
    """A scalar field's bytes, as protobuf writes them (packing, zigzag, fixed widths, presence)."""
    single = type(message)()
    if _is_repeated(field):
        getattr(single, field.name).extend(value)
    else:
        setattr(single, field.name, value)
    data: bytes = single.SerializeToString()
    return data


def _is_repeated(field: FieldDescriptor) -> bool:
    return bool(field.label == FieldDescriptor.LABEL_REPEATED)


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | _WIRE_LENGTH_DELIMITED) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    return bytes(_varint_digits(value))


def _varint_digits(value: int) -> Iterable[int]:
    while value > 0x7F:
        yield (value & 0x7F) | 0x80
        value >>= 7
    yield value
