"""The event store port: append with an expected version, read in order.

`EventStore` is what services use; `InMemoryEventStore` (tests, pure tools) and
`JetStreamEventStore` (`boulevard.eventlog.jetstream`) both pass one contract test class.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from boulevard.eventlog.errors import ConcurrencyConflict, InvalidStreamId

_STREAM_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}\Z")


def check_stream_id(stream_id: str) -> None:
    """Stream ids become NATS subject tokens: no dots, spaces or wildcards."""
    if not _STREAM_ID.match(stream_id):
        raise InvalidStreamId(
            f"stream id {stream_id!r} must be 1-128 characters of letters, digits, '_' or '-'"
        )


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to append. `event_id` is unique forever: it is the dedupe key."""

    event_id: str
    type: str
    data: bytes


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    stream_id: str
    version: int  # 1-based position in its stream
    event_id: str
    type: str
    data: bytes
    sequence: int = 0  # position in the whole store (the JetStream stream sequence)


class EventStore(Protocol):
    async def append(
        self, stream_id: str, events: Sequence[NewEvent], expected_version: int
    ) -> int:
        """Append atomically after `expected_version`; return the new version.

        Raises ConcurrencyConflict (nothing written) when the stream is at another version,
        unless exactly these events (by event id) already follow `expected_version`: a
        retried append then succeeds without writing twice."""
        ...

    async def read(self, stream_id: str, from_version: int = 1) -> list[RecordedEvent]:
        """Every event of the stream from `from_version` on, in order."""
        ...

    async def version(self, stream_id: str) -> int:
        """The stream's current version (0 when empty)."""
        ...


def already_appended(
    existing: Sequence[RecordedEvent], events: Sequence[NewEvent], expected_version: int
) -> bool:
    """Whether `events` are exactly the ones recorded right after `expected_version`."""
    after = [e for e in existing if e.version > expected_version][: len(events)]
    return len(after) == len(events) and all(
        a.event_id == b.event_id for a, b in zip(after, events, strict=True)
    )


class InMemoryEventStore:
    """The reference implementation: a dict of lists. Not durable."""

    def __init__(self) -> None:
        self._streams: dict[str, list[RecordedEvent]] = {}
        self._sequence = 0

    async def append(
        self, stream_id: str, events: Sequence[NewEvent], expected_version: int
    ) -> int:
        check_stream_id(stream_id)
        stream = self._streams.setdefault(stream_id, [])
        if len(stream) != expected_version:
            if already_appended(stream, events, expected_version):
                return expected_version + len(events)
            raise ConcurrencyConflict(stream_id, expected_version, len(stream))
        for i, ev in enumerate(events):
            self._sequence += 1
            stream.append(
                RecordedEvent(
                    stream_id,
                    expected_version + i + 1,
                    ev.event_id,
                    ev.type,
                    ev.data,
                    self._sequence,
                )
            )
        return len(stream)

    async def read(self, stream_id: str, from_version: int = 1) -> list[RecordedEvent]:
        check_stream_id(stream_id)
        return list(self._streams.get(stream_id, [])[max(from_version, 1) - 1 :])

    async def version(self, stream_id: str) -> int:
        check_stream_id(stream_id)
        return len(self._streams.get(stream_id, []))
