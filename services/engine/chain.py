"""The pipeline's `append` step (docs/architecture.md, "One command pipeline"): a command's
events put in their envelopes, chained by hash (docs/auditing.md), appended at the expected
version, folded into the session, and snapshotted now and then, each snapshot sealed so a
forged one is never used.

The checks of a seat's signature on a command are the command's own `verify` step
(services/engine/commands.py); the receipt the engine signs is the pipeline's last step
(`answer`, services/engine/sessions.py)."""

from __future__ import annotations

import functools
import json
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from boulevard.api.v1 import events_pb2
from boulevard.audit.signing import SigningKey, chain_hash, verify
from boulevard.eventlog.store import EventStore, NewEvent
from boulevard.games import clock
from boulevard.games.base import (
    CommandAccepted,
    GameCreated,
    GameFinished,
    SeatTimedOut,
    hidden_until_end,
    transfers_of,
)
from boulevard.games.upcasting import SCHEMA_VERSION
from boulevard.platform import metrics, tracing
from boulevard.platform.errors import FailedPrecondition
from services.engine.sessions import BLINDING_BYTES, Session, codec_of


class KeyValue(Protocol):
    async def get(self, key: str) -> bytes | None: ...
    async def put(self, key: str, value: bytes) -> object: ...  # JetStream: the revision


class Recorder:
    """Appends a game's events to the log and folds them into its session. `kept` and
    `dropped` are the engine's cache: told of a session that moved on, and of a game whose
    cached copy may be behind the log (an append refused, or not confirmed). `appended`,
    if set, is told of each append the store confirmed: the game and its envelopes, as
    stored (what this replica's watchers are fed from: `Feed.offer`)."""

    def __init__(
        self,
        store: EventStore,
        snapshots: KeyValue,
        seal_key: SigningKey,
        snapshot_every: int,
        clock: Callable[[], int],
        kept: Callable[[Session], None],
        dropped: Callable[[str], None],
    ) -> None:
        self.store = store
        self.snapshots = snapshots
        self.seal_key = seal_key
        self.snapshot_every = snapshot_every
        self.clock = clock
        self.kept = kept
        self.dropped = dropped
        self.appended: Callable[[str, Sequence[events_pb2.EventEnvelope]], None] | None = None

    async def append(self, session: Session, events: Sequence[Any], causation: str) -> None:
        """Append `events` after the session's version, under `causation` (the key of the
        command that led to them), then fold them in; ConcurrencyConflict when another
        writer got there first (nothing is written), a store error when it did not confirm.
        Every `snapshot_every` versions, a sealed snapshot."""
        clocks = session.clocks
        # Never before the last envelope (another replica's clock may be behind ours): the
        # clock rules refuse time running backwards.
        now = max(self.clock(), clocks.time_ms if clocks is not None else 0)
        if clocks is not None:
            refuse_late_moves(session, events, now)
        codec = codec_of(session.game)
        correlation = session.created.match_id or session.game_id
        envelopes, new = [], []
        head = session.head_hash
        for version, event in enumerate(events, start=session.version + 1):
            envelope = events_pb2.EventEnvelope(
                # Hidden with the shuffle's values (`redacted`), so the public chain hash
                # cannot be matched against every order of a small shuffle.
                blinding=secrets.token_bytes(BLINDING_BYTES) if hidden_until_end(event) else b"",
                # 128 random bits as 32 hex digits, as uuid4().hex gave, at a fifth of its CPU.
                event_id=secrets.token_hex(16),
                type=codec.type_name(event),
                game_id=session.game_id,
                game=session.game.name,
                version=version,
                time_unix_ms=now,
                causation_id=causation,
                correlation_id=correlation,
                payload=codec.dumps(event),
                schema_version=SCHEMA_VERSION,
                transfers=[
                    events_pb2.Transfer(
                        source=t.source, target=t.target, amount=t.amount, reason=t.reason
                    )
                    for t in transfers_of(event)
                ],
                prev_hash=head,  # the chain: each envelope names the stored bytes before it
            )
            data = envelope.SerializeToString()
            head = chain_hash(data)
            envelopes.append(envelope)
            new.append(NewEvent(envelope.event_id, envelope.type, data))
        started = time.perf_counter()
        try:
            with tracing.span("games.append", game_id=session.game_id, events=len(new)):
                await self.store.append(session.game_id, new, session.version)
        except Exception:
            # Refused, or unconfirmed (it may be stored): the cached copy may be behind the
            # log, so the next load reads the log again.
            self.dropped(session.game_id)
            raise
        _count_appended(session.game.name, events, time.perf_counter() - started)
        before = session.version
        for envelope, event in zip(envelopes, events, strict=True):
            session.apply(event, envelope)
        session.head_hash = head
        self.kept(session)
        if self.appended is not None:
            self.appended(session.game_id, envelopes)
        if session.version // self.snapshot_every > before // self.snapshot_every:
            await self.snapshot(session)

    async def snapshot(self, session: Session) -> None:
        await self.snapshots.put(session.game_id, seal_snapshot(self.seal_key, session.snapshot()))


def refuse_late_moves(session: Session, events: Sequence[Any], now: int) -> None:
    """FAILED_PRECONDITION for a seat's own move whose time has run out by `now` (the time
    its envelope would carry): the audit fails such a move, so it is never recorded."""
    clocks = session.clocks
    if clocks is None:
        return
    for event in events:
        if isinstance(event, CommandAccepted) and not event.stand_in:
            seat = clock.elapse(clocks, now, session.asked()).seats[event.seat]
            if seat.absent:
                raise FailedPrecondition(
                    f"seat {event.seat} timed out and the platform's bot plays it now"
                )
            if seat.remaining_ms <= 0:
                raise FailedPrecondition(
                    f"seat {event.seat}'s time ran out at {seat.ran_out_ms} (unix ms): the "
                    "platform's bot plays it from now on"
                )


@functools.cache  # by game name: bounded by the registry
def _append_metrics(game: str) -> tuple[Any, Any]:
    """A game's append histogram and event counter, their labelled children looked up once
    (a lookup per append was 1-1.5% of the engine's CPU at 100 tables, issue 28)."""
    return metrics.APPEND_SECONDS.labels(game), metrics.EVENTS_APPENDED.labels(game)


def _count_appended(game: str, events: Sequence[Any], seconds: float) -> None:
    append_seconds, events_appended = _append_metrics(game)
    append_seconds.observe(seconds)
    events_appended.inc(len(events))
    metrics.LAST_APPEND.set_to_current_time()
    for event in events:
        if isinstance(event, GameCreated):
            metrics.GAMES_STARTED.labels(game).inc()
        elif isinstance(event, GameFinished):
            metrics.GAMES_FINISHED.labels(game).inc()
        elif isinstance(event, SeatTimedOut):
            metrics.SEATS_TIMED_OUT.labels(game).inc()
        elif isinstance(event, CommandAccepted) and event.stand_in:
            metrics.STAND_IN_MOVES.labels(game).inc()


# Snapshots ---------------------------------------------------------------------------------
# A snapshot is what a session's fold looked like at some version, and the chain hash of the
# envelope at that version; it is stored with the engine's signature over both. The engine
# uses a snapshot only when the signature verifies *and* the log's envelope at that version
# has that chain hash; anything else is a forged (or stale, corrupt) snapshot: reported and
# ignored, the game rebuilt from its log.

SNAPSHOT_DOMAIN = b"boulevard.engine.snapshot.v1\x00"


def seal_snapshot(key: SigningKey, body: bytes) -> bytes:
    signature = key.sign(SNAPSHOT_DOMAIN + body)
    return json.dumps({"body": body.decode(), "signature": signature.hex()}).encode()


def open_snapshot(key: SigningKey, raw: bytes) -> tuple[bytes, int, bytes] | None:
    """(body, version, chain hash) of a sealed snapshot, or None when it is not one the
    engine signed."""
    try:
        sealed = json.loads(raw)
        body = str(sealed["body"]).encode()
        signature = bytes.fromhex(str(sealed["signature"]))
        data: dict[str, Any] = json.loads(body)
        version = int(data["version"])
        head = bytes.fromhex(str(data["chain_hash"]))
    except (ValueError, KeyError, TypeError):
        return None
    if not verify(key.public_key, signature, SNAPSHOT_DOMAIN + body):
        return None
    return body, version, head
