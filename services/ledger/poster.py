"""Posts what GAMES says moved money, exactly once, to LEDGER.

A durable pull consumer on GAMES feeds batches of envelopes (services/ledger/feed.py: a
pull request kept open; a batch is whatever arrived while the last one was posted). For
each batch, under the book's lock: every envelope with transfers that is not already posted
(durable key: game id + event version, known from the ledger rebuilt from LEDGER, so it
holds across restarts, redeliveries and replays from the start) becomes the next journal
entry; the entries go to LEDGER as one atomic batch whose first message expects the last
stream sequence we know; only once the batch is acknowledged (fsynced, with
`sync_interval: always`) may its GAMES messages be acked. The ack (AckPolicy.ALL: the last
message's acks all before it) waits until half the consumer's window is posted or
`ack_delay` has passed, so a trickle of small batches costs one ack, not one each. A crash
anywhere in between leaves GAMES messages unacked: they come back, are found already
posted, and are acked. If a publish fails, the in-memory view is thrown away and rebuilt
from LEDGER.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import structlog
from google.protobuf.message import DecodeError
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from boulevard.accounting import JournalEntry, LedgerError, TreeHeadSigner
from boulevard.accounting.journal import postings_from_transfers
from boulevard.api.v1 import events_pb2
from boulevard.audit.signing import chain_hash
from boulevard.eventlog.jetstream import JetStreamEventStore
from boulevard.messaging.poison import poisoned
from boulevard.platform import metrics
from services.ledger.book import LedgerBook, Rejection, entry_source
from services.ledger.checkpoint import CheckpointRejected, LedgerCheckpoints
from services.ledger.feed import PullFeed, consumer_sequence
from services.ledger.journal_log import LedgerLog, Outgoing
from services.ledger.mapping import head_to_pb

log = structlog.get_logger(__name__)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Poster:
    def __init__(
        self,
        nc: NATS,
        book: LedgerBook,
        journal: LedgerLog,
        signer: TreeHeadSigner,
        *,
        games_stream: str,
        games_prefix: str,
        durable: str,
        fetch_batch: int = 256,
        sign_every: int = 1000,
        sign_interval: float = 1.0,
        ack_wait: float = 30.0,
        ack_delay: float = 0.05,
        heartbeat: float = 1.0,
        clock: Callable[[], int] = now_ms,
        checkpoints: LedgerCheckpoints | None = None,
        checkpoint_read_attempts: int = 3,
        checkpoint_retry_seconds: float = 0.5,
    ) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self.book = book
        self.journal = journal
        self.signer = signer
        self.games_stream = games_stream
        self.games_prefix = games_prefix
        self.durable = durable
        self.fetch_batch = fetch_batch
        self.sign_every = sign_every
        self.sign_interval = sign_interval
        self.ack_wait = ack_wait
        # Well inside ack_wait: a deferred ack must never let the consumer redeliver.
        self.ack_delay = min(ack_delay, ack_wait / 4)
        self.ack_every = max(1, fetch_batch // 2)
        self.heartbeat = heartbeat
        self.clock = clock
        self.checkpoints = checkpoints
        self.checkpoint_read_attempts = max(1, checkpoint_read_attempts)
        self.checkpoint_retry_seconds = checkpoint_retry_seconds
        # Where the last rebuild started ("checkpoint" or "log") and the entries it took
        # from the checkpoint: for operators' logs and the tests.
        self.last_rebuild: tuple[str, int] = ("log", 0)
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        # Entries read back from LEDGER (not posted by this process) that no signed head
        # covers yet, by seq; and, once one is found that no game event explains, that
        # entry and why: the ledger then signs no more heads (a LEDGER ALARM).
        self.unvouched: dict[int, JournalEntry] = {}
        self.refusing: tuple[int, str] | None = None
        self._games = JetStreamEventStore(nc, games_stream, games_prefix)
        # The delivery sequence the consumer's next message must carry (None: not known).
        self._next_delivery: int | None = None
        self._feed = PullFeed(nc, games_stream, durable, heartbeat=heartbeat)
        # The last GAMES message posted but not yet acked, how many are, and since when.
        self._unacked: Msg | None = None
        self._unacked_count = 0
        self._unacked_since = 0.0

    async def rebuild(self) -> None:
        """Throw the in-memory view away and read it back: from the latest checkpoint and
        the LEDGER messages after it, or, without a checkpoint that matches LEDGER, from
        all of LEDGER."""
        started = time.perf_counter()
        self.book.reset()
        book, journal = self.book, self.journal
        source = "log"
        if self.checkpoints is not None and await self._load_checkpoint():
            source = "checkpoint"
        checkpointed, loaded_in = book.size, time.perf_counter() - started
        # The entries read back that no signed head covers: this process did not post
        # them, so before it signs a head over them each must be a game event's (`_vouch`).
        self.unvouched = {}
        self.refusing = None

        def load(subject: str, data: bytes, seq: int) -> None:
            kind = journal.kind_of(subject)
            entry = book.load(kind, data, seq, subject)
            if entry is not None:
                self.unvouched[entry.seq] = entry
            elif kind == "head":
                signed = book.signed_size
                self.unvouched = {s: e for s, e in self.unvouched.items() if s > signed}

        await journal.replay(load, from_seq=book.last_stream_seq + 1)
        seconds = time.perf_counter() - started
        self.last_rebuild = (source, checkpointed)
        metrics.LEDGER_TREE_SIZE.set(book.size)
        metrics.LEDGER_REBUILD_SECONDS.labels(source).set(seconds)
        log.info(
            "ledger rebuilt",
            source=source,
            entries=book.size,
            from_checkpoint=checkpointed,
            checkpoint_seconds=round(loaded_in, 3),
            heads=len(book.heads),
            rejections=len(book.rejections),
            seconds=round(seconds, 3),
        )

    async def _load_checkpoint(self) -> bool:
        """Whether the book now holds the stored checkpoint's state.

        Two failures, told apart because only one is an alarm:
        - unreadable (the bucket did not answer: a timeout or a lost connection, as in a
          cluster failover): counted `unreadable` and read again, up to
          `checkpoint_read_attempts` times, then the caller reads all of LEDGER. Nothing
          is wrong with the checkpoint; the start is only slower.
        - rejected (it was read and does not match LEDGER: someone wrote the bucket who
          should not have, or the stream was replaced under it): a LEDGER ALARM, counted
          `rejected` (BoulevardLedgerCheckpointRejected), and the caller reads all of
          LEDGER."""
        assert self.checkpoints is not None
        for attempt in range(1, self.checkpoint_read_attempts + 1):
            try:
                loaded = await self.checkpoints.load(self.book)
            except asyncio.CancelledError:
                raise
            except CheckpointRejected as exc:
                self.book.reset()
                metrics.LEDGER_CHECKPOINTS.labels("rejected", exc.reason).inc()
                log.error(
                    "LEDGER ALARM: the checkpoint does not match LEDGER; rebuilding from the "
                    "whole log",
                    reason=exc.reason,
                    error=exc.message,
                )
                return False
            except Exception as exc:  # the bucket did not answer: not the checkpoint's fault
                self.book.reset()
                metrics.LEDGER_CHECKPOINTS.labels("unreadable", type(exc).__name__).inc()
                last = attempt == self.checkpoint_read_attempts
                log.warning(
                    "the ledger checkpoint could not be read; "
                    + ("rebuilding from the whole log" if last else "will retry"),
                    attempt=attempt,
                    error=repr(exc),
                )
                if not last:
                    await asyncio.sleep(self.checkpoint_retry_seconds * attempt)
            else:
                metrics.LEDGER_CHECKPOINTS.labels("loaded" if loaded else "none", "").inc()
                return loaded
        return False

    async def start(self) -> None:
        async with self.book.lock:
            await self.rebuild()
            await self._position_consumer()
        self._tasks = [
            asyncio.create_task(self._consume(), name="ledger-consume"),
            asyncio.create_task(self._sign_periodically(), name="ledger-sign"),
        ]

    async def _position_consumer(self, *, at_ack_floor: bool = False) -> None:
        """Bind to the durable GAMES consumer, first moving it back to its ack floor if a
        batch was left unacknowledged (a crash, or a failed publish).

        Posting must follow each game's order (a seat can only pay money it has received),
        so the poster reads the consumer's deliveries strictly in order (one feed, a window
        of max_ack_pending = batch) and acks with AckPolicy.ALL. After a failure, waiting
        for ack_wait to redeliver would let newer messages overtake the unacked ones;
        restarting from the ack floor instead redelivers them at once, in order, and what
        is already posted is skipped."""
        js, stream, durable = self._js, self.games_stream, self.durable
        start = 1
        try:
            info = await js.consumer_info(stream, durable)
        except NotFoundError:
            info = None
        if info is not None:
            cfg = info.config
            if (
                not at_ack_floor
                and not info.num_ack_pending
                and cfg.ack_policy == AckPolicy.ALL
                and cfg.max_ack_pending == self.fetch_batch
                and cfg.filter_subject == f"{self.games_prefix}.>"
            ):
                self._next_delivery = (info.delivered.consumer_seq if info.delivered else 0) + 1
                await self._feed.open()
                return
            start = (info.ack_floor.stream_seq if info.ack_floor else 0) + 1
            log.info("repositioning the GAMES consumer at its ack floor", from_seq=start)
            await js.delete_consumer(stream, durable)
        await js.add_consumer(
            stream,
            ConsumerConfig(
                durable_name=durable,
                filter_subject=f"{self.games_prefix}.>",
                ack_policy=AckPolicy.ALL,
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE if start > 1 else DeliverPolicy.ALL,
                opt_start_seq=start if start > 1 else None,
                ack_wait=self.ack_wait,
                max_ack_pending=self.fetch_batch,
                max_waiting=16,
            ),
        )
        self._next_delivery = 1  # a new consumer counts its deliveries from 1
        await self._feed.open()

    async def stop(self) -> None:
        self._stopping = True
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks = []
        with contextlib.suppress(Exception):
            await self._ack(at_once=True)
        await self._feed.close()
        with contextlib.suppress(Exception):
            async with self.book.lock:
                await self._sign_locked()
                if self.checkpoints is not None:
                    await self._checkpoint_locked()

    async def _consume(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopping:
            # Wake for the feed's upkeep once a heartbeat, and in time for a deferred ack.
            timeout = self.heartbeat
            if self._unacked is not None:
                due = self._unacked_since + self.ack_delay - loop.time()
                timeout = max(0.0, min(timeout, due))
            try:
                if not self._feed.is_open:
                    # Being made anew (under the lock, `_recover` or `_reposition`).
                    async with self.book.lock:
                        pass
                    if not self._feed.is_open:
                        await asyncio.sleep(0.2)
                    continue
                msgs = await self._feed.take(timeout)
                if msgs:
                    await self.process(msgs)
                await self._ack()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the connection is reconnecting: try again shortly
                log.warning("reading GAMES failed", error=str(exc))
                await asyncio.sleep(0.2)

    def _delivery_gap(self, msgs: list[Msg]) -> tuple[int, int] | None:
        """(expected, got) when the batch's delivery sequences do not follow on from the
        last batch's, one by one: deliveries lost in transit (a pull answered while the
        connection was down, or by a consumer leader that then failed over). Posting on
        past them would post a seat's payment before the money it was paid (refused as an
        overdraft), and AckPolicy.ALL would then acknowledge the lost ones unread."""
        expected = self._next_delivery
        for m in msgs:
            got = consumer_sequence(m)
            if expected is not None and got != expected:
                return expected, got
            expected = got + 1
        return None

    async def process(self, msgs: list[Msg]) -> None:
        """Post one batch of GAMES messages; once their entries are durable they may be
        acked (`_ack`). A batch that does not follow on from the last one is not posted:
        the consumer starts again at its ack floor, so every message comes again in
        order."""
        gap = self._delivery_gap(msgs)
        if gap is not None:
            log.warning("GAMES deliveries lost in transit; reading again from the ack floor",
                        expected=gap[0], got=gap[1])  # fmt: skip
            async with self.book.lock:
                await self._reposition()
            return
        if msgs:
            self._next_delivery = consumer_sequence(msgs[-1]) + 1
        async with self.book.lock:
            try:
                await self._post_locked(msgs)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # LogError, or the connection failing under us
                log.error("ledger publish failed; rebuilding from LEDGER", error=str(exc))
                await self._recover()
                return
            if self.book.size - self.book.signed_size >= self.sign_every:
                await self._sign_locked()
        if msgs:
            if self._unacked is None:
                self._unacked_since = asyncio.get_running_loop().time()
            self._unacked = msgs[-1]
            self._unacked_count += len(msgs)

    async def _ack(self, *, at_once: bool = False) -> None:
        """Ack what is posted (it is durable in LEDGER) once half the consumer's window is
        posted unacked, or the oldest has waited `ack_delay` (or `at_once`). AckPolicy.ALL:
        acking the last message acks every one before it, and the consumer's state is
        written once, not once per message. Nothing here can ack a message not yet posted:
        `_unacked` is only set after its batch is durable."""
        last = self._unacked
        if last is None:
            return
        due = self._unacked_since + self.ack_delay <= asyncio.get_running_loop().time()
        if at_once or due or self._unacked_count >= self.ack_every:
            self._unacked, self._unacked_count = None, 0
            await last.ack()

    async def _forget_feed(self) -> None:
        """Before the consumer is made anew: ack what is posted (so less comes again),
        and close the feed, dropping what it holds (none of it acked)."""
        with contextlib.suppress(Exception):
            await self._ack(at_once=True)
        self._unacked, self._unacked_count = None, 0
        await self._feed.close()

    async def _reposition(self) -> None:
        """Under the lock: the GAMES consumer made anew at its ack floor, retrying until
        NATS answers."""
        while True:
            try:
                await self._forget_feed()
                await self._position_consumer(at_ack_floor=True)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.error("repositioning the GAMES consumer failed; retrying", error=str(exc))
                await asyncio.sleep(0.5)

    async def _recover(self) -> None:
        """Under the lock: rebuild from LEDGER and restart GAMES at its ack floor, retrying
        until NATS answers."""
        while True:
            try:
                await self.rebuild()
                await self._forget_feed()
                await self._position_consumer()
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.error("recovering the ledger failed; retrying", error=str(exc))
                await asyncio.sleep(0.5)

    async def _post_locked(self, msgs: list[Msg]) -> None:
        book, journal = self.book, self.journal
        outgoing: list[Outgoing] = []
        admitted: list[JournalEntry | None] = []
        for m, env, stored in envelopes_with_bytes(msgs):
            result: JournalEntry | Rejection | None
            moves = env.transfers or env.type == "GameFinished"
            if moves and m.subject != f"{self.games_prefix}.{env.game_id}":
                result = Rejection(
                    env.game_id, env.version, env.event_id, "wrong_subject",
                    f"envelope for game {env.game_id!r} on subject {m.subject!r}",
                )  # fmt: skip
                book.rejections[(env.game_id, env.version)] = result
            else:
                try:
                    if env.type == "GameFinished" and not env.transfers:
                        # The game's log ends here: anchor its chain head in the signed tree.
                        result = book.admit_anchor(env, chain_hash(stored))
                    else:
                        result = book.admit(env)
                except Exception as exc:
                    # Not a LedgerError (those are refusals, below) but something no rule
                    # foresaw: skipping it beats refusing every later event behind it.
                    poisoned("ledger.games", "unpostable", subject=m.subject, error=exc)
                    continue
            if result is None:
                continue
            if isinstance(result, Rejection):
                metrics.LEDGER_REJECTIONS.labels(result.code).inc()
                # An alarm, not a log line: stored for operators and Reconcile to find.
                log.error(
                    "LEDGER ALARM: refused to post a game event",
                    game_id=result.game_id,
                    version=result.version,
                    code=result.code,
                    reason=result.message,
                )
                outgoing.append(
                    Outgoing(
                        journal.rejected_subject(env.game_id if _token(env.game_id) else "_"),
                        result.to_bytes(),
                        f"ledger-rejected:{env.game_id}:{env.version}",
                    )
                )
                admitted.append(None)
                continue
            outgoing.append(
                Outgoing(
                    journal.entry_subject(env.game_id),
                    result.canonical,
                    f"ledger:{env.game_id}:{env.version}",
                )
            )
            admitted.append(result)
        if not outgoing:
            return
        seqs = await journal.publish(outgoing, book.last_stream_seq)
        for entry, seq in zip(admitted, seqs, strict=True):
            if entry is not None:
                book.stored(entry, seq)
                metrics.LEDGER_ENTRIES.inc()
        metrics.LEDGER_TREE_SIZE.set(book.size)
        book.last_stream_seq = seqs[-1]

    async def _sign_periodically(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self.sign_interval)
            checkpoint = self.checkpoints is not None and self.checkpoints.due(self.book.size)
            if self.book.size > self.book.signed_size or checkpoint:
                async with self.book.lock:
                    try:
                        await self._sign_locked()
                        if checkpoint:
                            await self._checkpoint_locked()
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:
                        log.error("publishing a tree head failed; rebuilding", error=str(exc))
                        await self._recover()

    async def _checkpoint_locked(self) -> None:
        """Store the book's state (after a head signed at its size). A failure costs only
        a longer next start: logged and counted, never a reason to stop posting."""
        assert self.checkpoints is not None
        started = time.perf_counter()
        try:
            written = await self.checkpoints.write(self.book)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            metrics.LEDGER_CHECKPOINTS.labels("write_failed", type(exc).__name__).inc()
            log.warning("writing the ledger checkpoint failed", error=repr(exc))
            return
        if written:
            metrics.LEDGER_CHECKPOINTS.labels("written", "").inc()
            log.info(
                "ledger checkpoint written",
                entries=self.book.size,
                stream_seq=self.book.last_stream_seq,
                seconds=round(time.perf_counter() - started, 3),
            )

    async def _sign_locked(self) -> None:
        book = self.book
        size = book.size
        if size <= book.signed_size:
            return
        if self.unvouched and self.refusing is None:
            await self._vouch()
        if self.refusing is not None:
            return  # never a head over an entry no game event explains
        sth = self.signer.sign(size, book.ledger.tree.root(size), self.clock())
        (seq,) = await self.journal.publish(
            [
                Outgoing(
                    self.journal.head_subject,
                    head_to_pb(sth).SerializeToString(),
                    f"ledger-head:{size}:{sth.head.root_hash.hex()}",
                )
            ],
            book.last_stream_seq,
        )
        book.add_head(sth, seq)
        book.last_stream_seq = seq
        log.info("tree head signed", tree_size=size, root=sth.head.root_hash.hex())

    async def _vouch(self) -> None:
        """Check each entry read back from LEDGER that no head covers against the game
        event it names on GAMES: the same event (id, type, time), the postings its
        transfers make, or for an anchor the chain hash of its GameFinished. The first that
        does not match is a LEDGER ALARM: the ledger stops signing (`refusing`), since a
        head over it would vouch for money no game moved (someone wrote LEDGER with the
        ledger's identity and key)."""
        logs: dict[str, dict[int, tuple[events_pb2.EventEnvelope, bytes]]] = {}
        for seq in sorted(self.unvouched):
            entry = self.unvouched[seq]
            game_id = entry.source.game_id
            if game_id not in logs:
                logs[game_id] = {}
                for recorded in await self._games.read(game_id):
                    try:
                        env = events_pb2.EventEnvelope.FromString(recorded.data)
                    except DecodeError:
                        continue
                    logs[game_id][recorded.version] = (env, recorded.data)
            why = unexplained(entry, logs[game_id].get(entry.source.version))
            if why is not None:
                self.refusing = (seq, why)
                metrics.LEDGER_UNEXPLAINED.inc()
                log.error(
                    "LEDGER ALARM: an entry no game event explains; signing no more heads",
                    seq=seq,
                    game_id=game_id,
                    version=entry.source.version,
                    why=why,
                )
                return
            del self.unvouched[seq]


def unexplained(
    entry: JournalEntry, event: tuple[events_pb2.EventEnvelope, bytes] | None
) -> str | None:
    """Why the game event (envelope, stored bytes) does not explain `entry`; None if it
    does: the entry is what posting that event makes."""
    if event is None:
        return f"GAMES holds no version {entry.source.version} of game {entry.source.game_id}"
    env, stored = event
    try:
        source = entry_source(env)
    except LedgerError as err:
        return err.message
    if source != entry.source:
        return f"the entry records {entry.source}, the game event is {source}"
    if entry.anchor is not None:
        if env.type != "GameFinished" or chain_hash(stored) != entry.anchor:
            return "the anchor is not the chain hash of the game's GameFinished"
        return None
    try:
        postings = postings_from_transfers(env.game_id, env.transfers)
    except LedgerError as err:
        return err.message
    if sorted(map(str, postings)) != sorted(map(str, entry.postings)):
        return "the entry's postings are not the ones the game event's transfers make"
    return None


def envelopes_with_bytes(
    msgs: list[Msg],
) -> list[tuple[Msg, events_pb2.EventEnvelope, bytes]]:
    """Every event envelope of the GAMES messages, in order (each message is an
    EventCommit: the events one append wrote, see docs/architecture.md), with its bytes as
    stored (what its chain hash covers, docs/auditing.md)."""
    out: list[tuple[Msg, events_pb2.EventEnvelope, bytes]] = []
    envelope = events_pb2.EventEnvelope.FromString
    for m in msgs:
        try:
            # The commit's events as protobuf, not as `decode_commit`'s records: half the
            # cost an envelope (docs/performance-ledger.md, "What the poster decodes").
            events = events_pb2.EventCommit.FromString(m.data).events
            decoded = [(m, envelope(e.data), e.data) for e in events]
        except (DecodeError, ValueError) as exc:
            poisoned("ledger.games", "undecodable", subject=m.subject, error=exc)
            continue
        out.extend(decoded)
    return out


def _token(game_id: str) -> bool:
    return bool(game_id) and all(c.isalnum() or c in "_-" for c in game_id)
