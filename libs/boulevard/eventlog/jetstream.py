"""The event store on NATS JetStream: one subject per stream id, one message per append.

- One message per append (an `EventCommit` holding its events) makes an append atomic
  without JetStream atomic batches, which measured ~7 ms per batch and serialized across
  subjects here (docs/architecture.md, "One message per append").
- Optimistic concurrency: each append carries `Nats-Expected-Last-Subject-Sequence`, so a
  stale writer is refused by the server and nothing is written.
- Idempotency: `Nats-Msg-Id` = the first event's id; and a retried append whose events are
  already there (checked by id, so also after the dedupe window) succeeds without writing.
- Reads use an ordered push consumer (about 5x faster than pull fetches in nats-py).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from google.protobuf.message import DecodeError
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy
from nats.js.errors import APIError, NotFoundError

from boulevard.api.v1 import events_pb2
from boulevard.eventlog.errors import ConcurrencyConflict, EventStoreError
from boulevard.eventlog.store import NewEvent, RecordedEvent, already_appended, check_stream_id
from boulevard.messaging.poison import poisoned
from boulevard.messaging.requests import requests_on

MSG_ID = "Nats-Msg-Id"
EXPECTED_LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence"
WRONG_LAST_SEQUENCE = 10071
# The same refusal as a clustered stream's leader words it ("wrong last sequence", no
# number): seen when a leader changes under concurrent appends (tests/e2e/test_cluster.py).
WRONG_LAST_SEQUENCE_CLUSTERED = 10164
DUPLICATE = -1  # our marker for a publish the server recognised as a duplicate
# How long an append waits for JetStream's acknowledgement (nats-py's JetStream default).
PUBLISH_TIMEOUT = 5.0


def encode_commit(events: Sequence[NewEvent], first_version: int) -> bytes:
    commit = events_pb2.EventCommit(
        first_version=first_version,
        events=[
            events_pb2.StoredEvent(event_id=e.event_id, type=e.type, data=e.data) for e in events
        ],
    )
    return commit.SerializeToString()


def decode_commit(stream_id: str, data: bytes, sequence: int = 0) -> list[RecordedEvent]:
    """The events of one stored message (what any consumer of the stream gets)."""
    commit = events_pb2.EventCommit.FromString(data)
    first = commit.first_version
    return [
        RecordedEvent(stream_id, first + i, e.event_id, e.type, e.data, sequence)
        for i, e in enumerate(commit.events)
    ]


def stream_sequence(msg: Msg) -> int:
    """The stream sequence of a delivered message, from its ack subject
    `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.…` (cheaper than msg.metadata)."""
    tokens = msg.reply.split(".")
    # v2 subjects carry a domain and an account hash before the stream name.
    return int(tokens[5] if len(tokens) < 12 else tokens[7])


class JetStreamEventStore:
    def __init__(
        self,
        nc: NATS,
        stream: str,
        subject_prefix: str,
        read_timeout: float = 30.0,
        cache_size: int = 100_000,
    ) -> None:
        self._nc = nc
        self._js: JetStreamContext = nc.jetstream()
        # Appends are per move: published through the lean request path (issue 28).
        self._requests = requests_on(nc)
        self.stream = stream
        self.prefix = subject_prefix
        self._read_timeout = read_timeout
        # stream id -> (version, stream sequence) of its last event, as far as we know.
        self._heads: OrderedDict[str, tuple[int, int]] = OrderedDict()
        self._cache_size = cache_size

    def subject(self, stream_id: str) -> str:
        return f"{self.prefix}.{stream_id}"

    def _remember(self, stream_id: str, version: int, seq: int) -> None:
        self._heads[stream_id] = (version, seq)
        self._heads.move_to_end(stream_id)
        if len(self._heads) > self._cache_size:
            self._heads.popitem(last=False)

    async def _head(self, stream_id: str, direct: bool = False) -> tuple[int, int]:
        """(version, sequence) of the stream's last event, asked of the server.

        `direct`: a direct get, which any replica of a clustered stream may answer, and a
        replica may lag the appends the leader has acknowledged (seen after network faults:
        docs/operations.md). Only `append` asks so: a stale head there costs a refused
        publish (the leader checks the expected sequence) and a read. Every other caller
        gets the leader's answer, which holds every acknowledged append."""
        try:
            msg = await self._js.get_last_msg(self.stream, self.subject(stream_id), direct=direct)
        except NotFoundError:
            return 0, 0
        assert msg.seq is not None and msg.data is not None
        try:
            events = decode_commit(stream_id, msg.data, msg.seq)
        except DecodeError:
            # The subject's last message is not ours: the version is that of the last good
            # commit before it, and the next append must expect this message's sequence.
            return await self._scan_version(stream_id, msg.seq), msg.seq
        if not events:
            return await self._scan_version(stream_id, msg.seq), msg.seq
        return events[-1].version, msg.seq

    async def _scan_version(self, stream_id: str, last_seq: int) -> int:
        """The version of the last decodable commit up to stream sequence `last_seq`."""
        version = 0
        done = asyncio.get_running_loop().create_future()

        async def on_message(msg: Msg) -> None:
            nonlocal version
            seq = stream_sequence(msg)
            events = _decoded(stream_id, msg, seq)
            if events and seq <= last_seq:
                version = events[-1].version
            if seq >= last_seq and not done.done():
                done.set_result(None)

        sub = await self.subscribe_all(stream_id, on_message)
        try:
            await asyncio.wait_for(done, self._read_timeout)
        finally:
            await sub.unsubscribe()
        return version

    async def version(self, stream_id: str) -> int:
        check_stream_id(stream_id)
        version, seq = await self._head(stream_id)
        self._remember(stream_id, version, seq)
        return version

    async def append(
        self, stream_id: str, events: Sequence[NewEvent], expected_version: int
    ) -> int:
        check_stream_id(stream_id)
        if not events:
            return expected_version
        head = self._heads.get(stream_id)
        if head is None or head[0] != expected_version:
            head = await self._head(stream_id, direct=True)
            self._remember(stream_id, *head)
        if head[0] != expected_version:
            return await self._resolve_conflict(stream_id, events, expected_version)
        try:
            seq = await self._publish(stream_id, events, expected_version, head[1])
        except APIError as err:
            if err.err_code in (WRONG_LAST_SEQUENCE, WRONG_LAST_SEQUENCE_CLUSTERED, DUPLICATE):
                self._heads.pop(stream_id, None)
                return await self._resolve_conflict(stream_id, events, expected_version)
            raise EventStoreError(f"append to {stream_id!r} failed: {err.description}") from err
        new_version = expected_version + len(events)
        self._remember(stream_id, new_version, seq)
        return new_version

    async def _resolve_conflict(
        self, stream_id: str, events: Sequence[NewEvent], expected_version: int
    ) -> int:
        existing = await self.read(stream_id, expected_version + 1)
        if already_appended(existing, events, expected_version):
            return expected_version + len(events)
        actual = existing[-1].version if existing else await self.version(stream_id)
        raise ConcurrencyConflict(stream_id, expected_version, actual)

    async def _publish(
        self, stream_id: str, events: Sequence[NewEvent], expected_version: int, last_seq: int
    ) -> int:
        headers = {MSG_ID: events[0].event_id, EXPECTED_LAST_SUBJECT_SEQ: str(last_seq)}
        data = encode_commit(events, expected_version + 1)
        ack = await self._requests.publish(
            self.subject(stream_id), data, PUBLISH_TIMEOUT, headers=headers
        )
        if ack.duplicate:
            # The server saw this id inside its dedupe window: a retry of a stored append.
            raise APIError(code=400, err_code=DUPLICATE, description="duplicate")
        return ack.seq

    async def subscribe_all(
        self, stream_id: str, on_message: Callable[[Msg], Awaitable[None]]
    ) -> Subscription:
        """An ordered push consumer over the stream id's subject from its first message."""
        return await self._js.subscribe(
            self.subject(stream_id),
            stream=self.stream,
            cb=on_message,
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.ALL,
            idle_heartbeat=5.0,
            pending_msgs_limit=1_000_000,
        )

    async def read(self, stream_id: str, from_version: int = 1) -> list[RecordedEvent]:
        check_stream_id(stream_id)
        last_version, last_seq = await self._head(stream_id)
        if last_version < from_version:
            return []
        out: list[RecordedEvent] = []
        done = asyncio.get_running_loop().create_future()

        async def on_message(msg: Msg) -> None:
            seq = stream_sequence(msg)
            for event in _decoded(stream_id, msg, seq):
                if event.version >= from_version:
                    out.append(event)
            if seq >= last_seq and not done.done():
                done.set_result(None)

        sub = await self.subscribe_all(stream_id, on_message)
        try:
            await asyncio.wait_for(done, self._read_timeout)
        finally:
            await sub.unsubscribe()
        self._remember(stream_id, last_version, last_seq)
        return out


async def follow(
    store: JetStreamEventStore, stream_id: str, queue_size: int = 10_000
) -> AsyncIterator[list[RecordedEvent]]:
    """Every event of a stream from the start, then new ones as they are appended (an
    ordered consumer that stays open), in batches of what has arrived so far, so a
    watcher can do its per-update work once per burst. Stops when the caller stops."""
    check_stream_id(stream_id)
    queue: asyncio.Queue[Msg] = asyncio.Queue(queue_size)

    async def on_message(msg: Msg) -> None:
        await queue.put(msg)

    sub = await store.subscribe_all(stream_id, on_message)
    try:
        while True:
            msgs = [await queue.get()]
            while not queue.empty():
                msgs.append(queue.get_nowait())
            yield [
                event for msg in msgs for event in _decoded(stream_id, msg, stream_sequence(msg))
            ]
    finally:
        await sub.unsubscribe()


def _decoded(stream_id: str, msg: Msg, seq: int) -> list[RecordedEvent]:
    """The events of a message read back, or none when it is not an EventCommit: a message
    the store never wrote is skipped and reported (docs/security.md, "Poison messages")
    rather than failing every read of the stream."""
    try:
        return decode_commit(stream_id, msg.data, seq)
    except DecodeError as exc:
        poisoned("eventlog.read", "undecodable", subject=msg.subject, seq=seq, error=exc)
        return []
