"""Checks on the wire form of a request that the generated classes cannot make."""

from __future__ import annotations

from google.protobuf import unknown_fields
from google.protobuf.message import Message


def sent_unknown_field(message: Message, number: int) -> bool:
    """Whether the sender set field `number`, which this schema no longer has (a reserved
    field): e.g. an old client still sending a plaintext client seed where only its
    commitment is accepted now. Such a request is refused, not silently half-read."""
    fields = unknown_fields.UnknownFieldSet(message)
    return any(fields[i].field_number == number for i in range(len(fields)))
