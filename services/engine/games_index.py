"""The games index in memory: every game's summary, kept sorted by game id, fed by a watch of
the games-index KV bucket, so ListGames costs a bisect and a page, not a listing of the
bucket and a read per game.

Three rules keep it right:

- Complete before it serves. A replay is complete when the watch has delivered the stream's
  last sequence as read (STREAM.INFO) *before* subscribing — not when nats-py says its
  initial replay ended (that signal can come early under concurrent writes: nats.py #842,
  #995). Until then `ready` is false and ListGames answers UNAVAILABLE. The message at that
  sequence is always delivered: an overwrite, delete or purge of its key leaves a newer
  message of the same key, and nobody may delete a message (docs/security.md).
- Newest revision wins. Every value is kept with its KV revision (its stream sequence); a
  delivery older than what is held — a late watch message after this replica's own put — is
  ignored. Deletes and purges remove the key and leave a tombstone with their revision.
- A broken watch is not served. When the connection drops (or reconnects, or the watch
  skips a message), `ready` turns false at once; the index resubscribes from the last
  revision it applied and is ready again once it has caught up with the stream's last
  sequence read after reconnecting.

Writes go through `put`: the replica that writes a summary holds it at once (read your
writes); other replicas hold it when their watch delivers it (docs/architecture.md)."""

from __future__ import annotations

import asyncio
import json
import sys
from bisect import bisect_right, insort
from collections.abc import Iterator
from dataclasses import dataclass

import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import ConsumerConfig, DeliverPolicy

from boulevard.messaging.poison import poisoned
from services.engine.kv import JetStreamKeyValue

log = structlog.get_logger(__name__)

REMOVING_OPERATIONS = frozenset({"DEL", "PURGE"})  # the KV-Operation header of a removal
CHECK_SECONDS = 0.25  # how often the watch checks its connection for a reconnect
HEARTBEAT_SECONDS = 5.0  # the watch's idle heartbeat (nats-py resets a silent consumer)


@dataclass(frozen=True, slots=True)
class Summary:
    """One game as ListGames shows it (the JSON the engine writes, decoded once)."""

    revision: int
    game: str
    status: str  # "active", "finished" or "halted"
    version: int
    players: tuple[str, ...]
    updated_unix_ms: int
    seeds_pending_until: int | None
    clocked: bool = False  # the game has a clock (the clock sweeper resumes it)

    @classmethod
    def decode(cls, revision: int, raw: bytes) -> Summary:
        info = json.loads(raw)
        pending = info.get("seeds_pending_until")
        return cls(
            revision=revision,
            # Interned: thousands of games share a handful of names and two statuses.
            game=sys.intern(str(info["game"])),
            status=sys.intern(str(info["status"])),
            version=int(info["version"]),
            players=tuple(str(p) for p in info["players"]),
            updated_unix_ms=int(info.get("updated_unix_ms", 0)),
            seeds_pending_until=None if pending is None else int(pending),
            clocked=bool(info.get("clocked", False)),
        )


class IndexUnavailable(Exception):
    """The index is replaying (after a start or a NATS interruption): no list is served."""


class GamesIndex:
    def __init__(
        self, kv: JetStreamKeyValue, nc: NATS, heartbeat_seconds: float = HEARTBEAT_SECONDS
    ) -> None:
        self.kv = kv
        self.nc = nc
        self.heartbeat_seconds = heartbeat_seconds
        self._summaries: dict[str, Summary] = {}
        self._keys: list[str] = []  # sorted; rebuilt from the dict when `_unsorted`
        self._unsorted = False
        self._removed: dict[str, int] = {}  # key -> revision of its delete or purge
        self._applied = 0  # the last stream sequence the watch delivered, in order
        self._consumer_seq = 0  # the watch consumer's last delivery (a gap breaks the watch)
        self._generation = 0  # which subscription a delivery came from
        self._caught_up = False
        self._synced_reconnects = -1  # the connection's reconnect count when it caught up
        self._progress = asyncio.Event()  # set on each delivery and when the watch breaks
        self._ready_changed = asyncio.Event()  # set when the watch catches up or breaks
        self._broken = False
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None
        self.resyncs = 0  # times the watch was resubscribed after a break (for tests, logs)

    @property
    def prefix(self) -> str:
        return f"$KV.{self.kv.bucket}."

    @property
    def stream(self) -> str:
        return f"KV_{self.kv.bucket}"

    @property
    def ready(self) -> bool:
        """Whether the index holds every game the bucket held when its watch last caught
        up, on a connection that has not dropped since."""
        return (
            self._caught_up
            and self.nc.is_connected
            and self.nc.stats["reconnects"] == self._synced_reconnects
        )

    async def start(self, timeout: float = 60.0) -> None:
        """Start the watch and wait until its first replay is complete."""
        self._task = asyncio.create_task(self._run(), name=f"games-index-{self.kv.bucket}")
        try:
            await self.wait_ready(timeout)
        except BaseException:
            await self.stop()  # a start that fails leaves no watch running
            raise

    async def wait_ready(self, timeout: float) -> None:
        """Return once the index is ready; IndexUnavailable after `timeout` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.ready:
            if self._task is None or self._task.done():
                raise IndexUnavailable("the games index watch is not running")
            left = deadline - loop.time()
            if left <= 0:
                raise IndexUnavailable(
                    "the games index is replaying the games bucket (after a start or a NATS "
                    "interruption) and lists nothing until it is complete; retry shortly"
                )
            # Woken when the watch catches up or breaks; rechecked at least this often, as
            # a dropped connection turns `ready` false without waking anyone.
            await _wait(self._ready_changed, min(left, CHECK_SECONDS))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._unsubscribe()

    # Reading ---------------------------------------------------------------------------

    def after(self, token: str) -> Iterator[tuple[str, Summary]]:
        """The games whose id sorts after `token`, in order. Consume it without awaiting in
        between (the index may change at any await)."""
        if self._unsorted:
            self._keys = sorted(self._summaries)
            self._unsorted = False
        keys = self._keys
        for i in range(bisect_right(keys, token), len(keys)):
            key = keys[i]
            yield key, self._summaries[key]

    def items(self) -> list[tuple[str, Summary]]:
        return list(self._summaries.items())

    def get(self, key: str) -> Summary | None:
        return self._summaries.get(key)

    def __len__(self) -> int:
        return len(self._summaries)

    # Writing ---------------------------------------------------------------------------

    async def put(self, key: str, value: bytes) -> int:
        """Write a summary to the bucket and hold it here at once, with its revision."""
        revision = await self.kv.put(key, value)
        self.apply(key, revision, value)
        return revision

    def apply(self, key: str, revision: int, value: bytes | None) -> None:
        """Hold `value` (None: the key was deleted or purged) at `revision`, unless something
        newer is held already: a late delivery never overwrites a newer summary."""
        held = self._summaries.get(key)
        if held is not None and held.revision >= revision:
            return
        if self._removed.get(key, 0) >= revision:
            return
        if value is None:
            self._removed[key] = revision
            if held is not None:
                del self._summaries[key]
                if not self._unsorted:
                    self._keys.pop(bisect_right(self._keys, key) - 1)
            return
        try:
            summary = Summary.decode(revision, value)
        except (ValueError, KeyError, TypeError) as exc:
            # Only the engine writes this bucket; a value it cannot read is reported and
            # left out of listings instead of failing every ListGames.
            poisoned("engine.games_index", "undecodable", subject=key, seq=revision, error=exc)
            return
        self._removed.pop(key, None)
        self._summaries[key] = summary
        if held is None and not self._unsorted:
            if self._caught_up:
                insort(self._keys, key)
            else:  # during a replay, sort once at the end rather than insert n times
                self._unsorted = True

    # The watch -------------------------------------------------------------------------

    async def _run(self) -> None:
        quiet = False  # one warning per break, not one per retry while NATS is away
        while True:
            try:
                await self._follow()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self._caught_up or not quiet:
                    log.warning("games index watch broke; resuming", error=repr(exc))
                quiet = True
            self._caught_up = False
            self._ready_changed.set()
            self._ready_changed = asyncio.Event()
            await self._unsubscribe()
            self.resyncs += 1
            await asyncio.sleep(CHECK_SECONDS)

    async def _follow(self) -> None:
        """Subscribe from the last revision applied, wait until the watch has delivered the
        stream's last sequence as read before subscribing, then serve until it breaks."""
        if not self.nc.is_connected:
            raise ConnectionError("waiting for NATS")
        reconnects = self.nc.stats["reconnects"]
        info = await self.nc.jetstream().stream_info(self.stream)
        target = info.state.last_seq if info.state.messages else 0
        if not info.state.messages and self._summaries:
            # Nobody purges this stream (docs/security.md); if it was, nothing is left.
            self._summaries.clear()
            self._keys.clear()
        self._generation += 1
        self._consumer_seq = 0
        self._broken = False
        generation = self._generation

        async def on_message(msg: Msg) -> None:
            if generation == self._generation:
                self._deliver(msg)

        js = self.nc.jetstream()
        if self._applied == 0:
            policy, start = DeliverPolicy.LAST_PER_SUBJECT, None
        else:
            policy, start = DeliverPolicy.BY_START_SEQUENCE, self._applied + 1
        self._sub = await js.subscribe(
            f"{self.prefix}>",
            stream=self.stream,
            cb=on_message,
            ordered_consumer=True,
            config=ConsumerConfig(deliver_policy=policy, opt_start_seq=start),
            idle_heartbeat=self.heartbeat_seconds,
            # Unbounded: nats-py drops a message that overflows a subscription's queue, and
            # a dropped summary would be a game missing from ListGames.
            pending_msgs_limit=0,
            pending_bytes_limit=0,
        )
        while self._applied < target:
            self._check(reconnects)
            await self._tick()
        self._check(reconnects)
        if self._unsorted:
            self._keys = sorted(self._summaries)
            self._unsorted = False
        self._synced_reconnects = reconnects
        self._caught_up = True
        self._ready_changed.set()
        self._ready_changed = asyncio.Event()
        log.info("games index ready", games=len(self._summaries), revision=self._applied)
        while True:
            self._check(reconnects)
            await self._tick()

    async def _tick(self) -> None:
        """Until the next delivery or CHECK_SECONDS, whichever comes first."""
        self._progress.clear()
        await _wait(self._progress, CHECK_SECONDS)

    def _check(self, reconnects: int) -> None:
        if self._broken:
            raise ConnectionError("the games index watch skipped a message")
        if not self.nc.is_connected or self.nc.stats["reconnects"] != reconnects:
            raise ConnectionError("the NATS connection dropped")

    def _deliver(self, msg: Msg) -> None:
        meta = msg.metadata
        consumer_seq, seq = meta.sequence.consumer, meta.sequence.stream
        # nats-py's ordered consumer restarts at consumer sequence 1 from the sequence after
        # the last one it passed on; anything else out of order means a lost message.
        if consumer_seq not in (1, self._consumer_seq + 1) or self._broken:
            self._broken = True
            self._progress.set()
            return
        self._consumer_seq = consumer_seq
        if seq <= self._applied:
            return
        operation = (msg.headers or {}).get("KV-Operation")
        key = msg.subject[len(self.prefix) :]
        self.apply(key, seq, None if operation in REMOVING_OPERATIONS else msg.data)
        self._applied = seq
        self._progress.set()

    async def _unsubscribe(self) -> None:
        sub, self._sub = self._sub, None
        self._generation += 1  # whatever the old subscription still delivers is ignored
        if sub is not None:
            try:
                await sub.unsubscribe()
            except Exception as exc:  # a closed or reconnecting connection: nothing to undo
                log.info("games index unsubscribe failed", error=repr(exc))


async def _wait(event: asyncio.Event, seconds: float) -> None:
    """Until `event` is set or `seconds` pass. Not asyncio.wait_for: on Python 3.11 it can
    swallow a cancellation that arrives as the event is set, and stop() would hang."""
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait((waiter,), timeout=seconds)
    finally:
        waiter.cancel()
