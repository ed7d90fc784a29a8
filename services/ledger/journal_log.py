"""The LEDGER stream: where entries, signed tree heads and refusals are stored.

Subjects (prefix from settings, `ledger` by default):
- `ledger.entry.<game_id>`: one journal entry, its canonical bytes as the payload;
- `ledger.head`: one signed tree head (a serialized `boulevard.v1.SignedTreeHead`);
- `ledger.rejected.<game_id>`: a money-moving event the ledger refused (JSON), an alarm.

This service is the stream's only writer, and every publish carries
`Nats-Expected-Last-Sequence`: a second writer (or a stale view after a failure) is refused
by the server instead of forking the journal.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import APIError, NotFoundError

EXPECTED_LAST_SEQ = "Nats-Expected-Last-Sequence"
MSG_ID = "Nats-Msg-Id"
BATCH_ID = "Nats-Batch-Id"
BATCH_SEQ = "Nats-Batch-Sequence"
BATCH_COMMIT = "Nats-Batch-Commit"
MAX_ATOMIC = 500  # messages per atomic batch (the server allows 1,000)


class LogError(Exception):
    """A publish to LEDGER did not land where expected; the in-memory view is stale."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    subject: str
    data: bytes
    msg_id: str


class LedgerLog:
    def __init__(self, nc: NATS, stream: str, prefix: str, timeout: float = 10.0) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self.stream = stream
        self.prefix = prefix
        self.timeout = timeout
        self.atomic = True

    def entry_subject(self, game_id: str) -> str:
        return f"{self.prefix}.entry.{game_id}"

    @property
    def head_subject(self) -> str:
        return f"{self.prefix}.head"

    def rejected_subject(self, game_id: str) -> str:
        return f"{self.prefix}.rejected.{game_id}"

    def kind_of(self, subject: str) -> str:
        """`entry`, `head` or `rejected`."""
        return subject[len(self.prefix) + 1 :].split(".", 1)[0]

    async def last_seq(self) -> int:
        info = await self._js.stream_info(self.stream)
        return int(info.state.last_seq)

    async def publish(self, batch: Sequence[Outgoing], after_seq: int) -> list[int]:
        """Store `batch` in order right after stream sequence `after_seq`, all or nothing;
        returns their stream sequences. Raises LogError unless all landed as expected.

        Several messages go as one JetStream atomic batch (ADR-50): one commit, so a crash
        can never leave half a batch. (It saves no disk sync: on a one-replica stream with
        `sync_interval: always` the server stages the batch and then syncs each message,
        measured in docs/performance.md, "One write before a draw's reply".) Where the
        stream does not allow atomic batches, they are pipelined one by one, each
        expecting the one before."""
        seqs: list[int] = []
        # A GAMES message may hold several events, so a batch can outgrow what one atomic
        # batch may carry: split it. A failure between chunks leaves a prefix stored,
        # which the rebuild picks up and the redelivered GAMES messages then skip.
        for start in range(0, len(batch), MAX_ATOMIC):
            chunk = batch[start : start + MAX_ATOMIC]
            seqs += await self._publish_chunk(chunk, after_seq + len(seqs))
        return seqs

    async def _publish_chunk(self, batch: Sequence[Outgoing], after_seq: int) -> list[int]:
        if len(batch) > 1 and self.atomic:
            try:
                return await self._publish_atomic(batch, after_seq)
            except APIError as err:
                if "atomic" not in (err.description or "").lower():
                    raise LogError(f"batch publish to {self.stream} failed: {err}") from err
                self.atomic = False  # refused whole: nothing stored, safe to go one by one
        return await self._publish_pipelined(batch, after_seq)

    async def _publish_atomic(self, batch: Sequence[Outgoing], after_seq: int) -> list[int]:
        batch_id = uuid.uuid4().hex
        n = len(batch)
        for i, out in enumerate(batch, start=1):
            headers = {MSG_ID: out.msg_id, BATCH_ID: batch_id, BATCH_SEQ: str(i)}
            if i == 1:
                headers[EXPECTED_LAST_SEQ] = str(after_seq)
            if i < n:
                await self._nc.publish(out.subject, out.data, headers=headers)
                continue
            headers[BATCH_COMMIT] = "1"
            try:
                ack = await self._js.publish(
                    out.subject, out.data, headers=headers, timeout=self.timeout
                )
            except (TimeoutError, NatsTimeoutError):
                raise LogError(
                    f"no acknowledgement from {self.stream} in {self.timeout}s"
                ) from None
            if ack.seq != after_seq + n:
                raise LogError(f"batch of {n} ended at {ack.seq}, expected {after_seq + n}")
        return list(range(after_seq + 1, after_seq + n + 1))

    async def _publish_pipelined(self, batch: Sequence[Outgoing], after_seq: int) -> list[int]:
        futures = []
        for i, out in enumerate(batch):
            headers = {EXPECTED_LAST_SEQ: str(after_seq + i), MSG_ID: out.msg_id}
            futures.append(await self._js.publish_async(out.subject, out.data, headers=headers))
        try:
            results = await asyncio.wait_for(
                asyncio.gather(*futures, return_exceptions=True), self.timeout
            )
        except TimeoutError:
            for f in futures:
                f.cancel()
            raise LogError(f"no acknowledgement from {self.stream} in {self.timeout}s") from None
        seqs: list[int] = []
        for i, r in enumerate(results):
            if isinstance(r, BaseException):
                raise LogError(f"publish {i + 1}/{len(batch)} to {self.stream} failed: {r}")
            if r.duplicate or r.seq != after_seq + i + 1:
                raise LogError(
                    f"publish {i + 1}/{len(batch)} landed at {r.seq} (duplicate={r.duplicate}), "
                    f"expected {after_seq + i + 1}"
                )
            seqs.append(r.seq)
        return seqs

    async def replay(
        self,
        on_message: Callable[[str, bytes, int], None],
        *,
        subject: str | None = None,
        from_seq: int = 1,
        until_seq: int | None = None,
        last_on_subject: bool = False,
    ) -> None:
        """Feed stored LEDGER messages (subject, data, stream seq) in order to `on_message`,
        from `from_seq` up to `until_seq` (default: the stream's last message now).

        The whole stream (no `subject`): every message of LEDGER is on `<prefix>.>`, so its
        last one is waited for (`last_on_subject`), not a consumer's idea of what is left:
        a rebuild from a lagging replica would miss the newest entries and then refuse a
        seat's payment for want of the money they gave it. `last_on_subject`: the same for
        a `subject` whose message `until_seq` is (replay_stream)."""
        await replay_stream(
            self._js,
            self.stream,
            subject or f"{self.prefix}.>",
            on_message,
            from_seq=from_seq,
            until_seq=until_seq,
            last_on_subject=last_on_subject or subject is None,
        )


async def replay_stream(
    js: JetStreamContext,
    stream: str,
    subject: str,
    on_message: Callable[[str, bytes, int], None],
    *,
    from_seq: int = 1,
    until_seq: int | None = None,
    last_on_subject: bool = False,
) -> None:
    """Feed the messages of `stream` matching `subject` (subject, data, stream seq) in order
    to `on_message`, from `from_seq` up to `until_seq` (default: the stream's last message
    now). An ordered push consumer: the fast way to read in nats-py (PERFORMANCE.md).

    `last_on_subject`: `until_seq` is a message on `subject` as the stream's leader holds
    it, and the read waits for it (unless the leader says it is gone). Otherwise the read
    also ends where the consumer has nothing more pending; but the consumer may sit on any
    replica, and a replica may lag the leader's acknowledged appends (docs/operations.md,
    "Network faults"), so a read that must hold everything acknowledged names its last
    message from the leader."""
    if until_seq is None:
        stream_info = await js.stream_info(stream)
        until_seq = int(stream_info.state.last_seq)
    last = until_seq
    if last < from_seq:
        return
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    checks: set[asyncio.Task[None]] = set()

    async def gone() -> None:
        """Done if the leader holds no message `last` (deleted since it was named)."""
        try:
            await js.get_msg(stream, last)
        except NotFoundError:
            if not done.done():
                done.set_result(None)
        except Exception:  # the leader did not answer: keep waiting for the message
            return

    def check_gone() -> None:
        task = loop.create_task(gone())
        checks.add(task)
        task.add_done_callback(checks.discard)

    async def handle(msg: Msg) -> None:
        if done.done():
            return
        meta = msg.metadata
        seq = meta.sequence.stream
        try:
            if seq <= last:
                on_message(msg.subject, msg.data, seq)
        except Exception as exc:
            done.set_exception(exc)
            return
        if seq >= last or (meta.num_pending == 0 and not last_on_subject):
            done.set_result(None)
        elif meta.num_pending == 0:
            check_gone()

    sub = await js.subscribe(
        subject,
        stream=stream,
        cb=handle,
        ordered_consumer=True,
        config=ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=from_seq
        ),
        pending_msgs_limit=1_000_000,
        pending_bytes_limit=1024 * 1024 * 1024,
        # Two missed heartbeats and nats-py makes the consumer anew from the next sequence:
        # one left on a server whose JetStream stopped (a full disk) would else deliver
        # nothing, and this read would wait forever (docs/operations.md, "Network faults").
        idle_heartbeat=5.0,
    )
    try:
        info = await sub.consumer_info()
        delivered = info.delivered.consumer_seq if info.delivered else 0
        if info.num_pending == 0 and not delivered:
            if not last_on_subject:
                return  # nothing matches from from_seq on
            check_gone()
        await done
    finally:
        for task in checks:
            task.cancel()
        await sub.unsubscribe()
