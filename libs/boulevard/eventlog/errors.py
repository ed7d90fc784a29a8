"""The event store's errors (one root, codes tests can assert on)."""

from __future__ import annotations


class EventStoreError(Exception):
    code = "event_store_error"


class ConcurrencyConflict(EventStoreError):
    """The stream moved on since the writer read it: nothing was written."""

    code = "concurrency_conflict"

    def __init__(self, stream_id: str, expected: int, actual: int | None) -> None:
        seen = "unknown" if actual is None else str(actual)
        super().__init__(f"stream {stream_id!r} is at version {seen}, not the expected {expected}")
        self.stream_id = stream_id
        self.expected = expected
        self.actual = actual


class InvalidStreamId(EventStoreError):
    code = "invalid_stream_id"
