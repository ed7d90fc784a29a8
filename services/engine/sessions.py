"""One game as the engine holds it: rebuilt from its log, folded event by event; and the
pipeline's last step, `answer`: what the caller is told of the command's envelopes, as its
seat may see them, with the engine's signed receipt.

A session knows nothing about I/O; the engine loads it (snapshot + replay) and appends
(services/engine/chain.py). `answer` reads the log only for envelopes no longer in memory.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.audit.evidence import receipt_to_pb
from boulevard.audit.signing import ZERO_HASH, Receipt, SigningKey, chain_hash
from boulevard.eventlog.store import EventStore
from boulevard.games import clock
from boulevard.games.base import (
    ClientSeedRevealed,
    ClientSeedsFixed,
    CommandAccepted,
    GameCreated,
    GameDefinition,
    GameFinished,
    SeatReclaimed,
    SeatTimedOut,
    hidden_until_end,
)
from boulevard.games.codec import Codec, from_plain, to_plain
from boulevard.games.upcasting import SCHEMA_VERSION
from boulevard.games.versions import rules_for
from boulevard.platform.auth import PlayerClaims
from boulevard.platform.errors import AlreadyExists


class StaleSnapshot(ValueError):
    """A snapshot written at another schema: not used (the log, read through the
    upcasters, is the one source that knows old shapes); the game is rebuilt from its log."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    """Where a command's events sit in the log: versions first..last (inclusive)."""

    first: int
    last: int


# Envelopes a session keeps for answering its latest commands (and retries of them) without
# reading the log: enough for any one command's events. Each costs about 1.3 KiB in memory,
# so keeping a whole game's (it was 512) made an 89-event game weigh ~140 KiB.
RECENT_ENVELOPES = 64
# A hidden shuffle's blinding (EventEnvelope.blinding): 128 bits, beyond any guessing.
BLINDING_BYTES = 16

# A game as it stood at one version, for a later `Session.resume` (`Session.mark`): state,
# version, finished, client seeds, seeds fixed, chain head, clocks.
Mark = tuple[Any, int, Any, dict[int, str], bool, bytes, Any]


@dataclass
class Session:
    game_id: str
    game: GameDefinition[Any, Any, Any, Any]
    created: GameCreated
    state: Any
    version: int = 0
    finished: GameFinished | None = None
    # idempotency key -> the versions its command (and the chance it caused) wrote. Rebuilt
    # from the log itself (each envelope's causation_id), so it is as durable as the log.
    commands: dict[str, CommandResult] = field(default_factory=dict)
    last_causation: str = ""
    revealed: bool = False  # this process has seen the dice seed revealed
    # The opening: client seeds revealed so far (by seat), and whether they are fixed (the
    # game's dice may run only from then on).
    client_seeds: dict[int, str] = field(default_factory=dict)
    seeds_fixed: bool = False
    # The chain hash of the envelope at `version` (docs/auditing.md): what the next
    # envelope names as its prev_hash, and what a receipt signs.
    head_hash: bytes = ZERO_HASH
    # (version, why) of an event in the log this engine cannot read: the game stands as it
    # was before it and takes no more commands (the engine's `halt` step). Not snapshotted:
    # a reload finds the event again.
    halted: tuple[int, str] | None = None
    # The latest envelopes this process appended or read, by version: a command's result
    # comes from here instead of re-reading the log (bounded; older results are read).
    recent: dict[int, events_pb2.EventEnvelope] = field(default_factory=dict)
    # When the newest event this process saw was appended (ms): kept through trim(), for
    # the per-game stall signal (services/engine/stalls.py).
    last_event_ms: int = 0
    # What readers ask of one version again and again (every watcher, every poll): the
    # legal commands per seat and the typed view per seat, dropped when the version moves.
    _memo: dict[tuple[str, int | None], Any] = field(default_factory=dict)
    _memo_version: int = -1
    # Every seat's clock as of the last envelope (boulevard.games.clock), folded from the
    # envelopes' times exactly as the audit folds them; None for a game without a clock.
    clocks: clock.Clocks | None = None

    def memo(self, kind: str, seat: int | None, compute: Callable[[], Any]) -> Any:
        if self._memo_version != self.version:
            self._memo.clear()
            self._memo_version = self.version
        key = (kind, seat)
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def trim(self) -> None:
        """Forget what is only a cache (views, legal commands, recent envelopes): what an
        idle game costs is then its fold alone. Nothing is lost: each is computed again, or
        read from the log, when next asked for."""
        self._memo.clear()
        self._memo_version = -1
        self.recent.clear()

    def legal(self, seat: int) -> Sequence[Any]:
        if self.finished is not None:
            return ()
        return self.memo(  # type: ignore[no-any-return]
            "legal", seat, lambda: self.game.legal_commands(self.state, seat)
        )

    def to_act(self) -> list[int]:
        """The seats that may act now (what a table of clients needs to know whom to wake)."""
        return [s.seat for s in self.created.seats if self.legal(s.seat)]

    def asked(self) -> frozenset[int]:
        """The seats the game asks to act: whose clocks run (unless absent)."""
        return self.memo("asked", None, self._asked)  # type: ignore[no-any-return]

    def outcome(self) -> Any:
        """The game's outcome as its rules read the state now (asked once a version: what
        the game owes and whom it asks both read it)."""
        return self.memo("outcome", None, lambda: self.game.outcome(self.state))

    def _asked(self) -> frozenset[int]:
        if self.outcome().finished:
            return frozenset()
        return frozenset(self.to_act())

    def clock_times(self, now_ms: int) -> tuple[clock.SeatTime, ...]:
        """Every seat's clock at `now_ms` (none without a time control)."""
        if self.clocks is None:
            return ()
        return clock.seat_times(self.clocks, self.asked(), now_ms)

    def overdue(self, now_ms: int) -> list[tuple[int, int]]:
        """The running seats whose deadline is at or before `now_ms`, with the deadline."""
        if self.clocks is None or self.finished is not None:
            return []
        return clock.overdue(self.clocks, self.asked(), now_ms)

    def absent_to_act(self) -> list[int]:
        """Seats that timed out and that the game now asks to act: the bot's to play."""
        if self.clocks is None or self.finished is not None:
            return []
        return sorted(s for s in self.asked() if self.clocks.seats[s].absent)

    def next_clock_due(self) -> int | None:
        """When this game next needs the engine without anyone calling: the earliest
        deadline, or the last envelope's time when an absent seat is to act now."""
        if self.clocks is None or self.finished is not None:
            return None
        if self.absent_to_act():
            return self.clocks.time_ms
        return clock.next_deadline(self.clocks, self.asked())

    def time_ms(self) -> int:
        """The last envelope's time, in a game with a clock (0 otherwise): an append is
        never recorded earlier (the clock rules refuse time running backwards)."""
        return self.clocks.time_ms if self.clocks is not None else 0

    def unrevealed(self) -> list[int]:
        """The seats that committed to a client seed and have not revealed it yet."""
        return [
            s.seat
            for s in self.created.seats
            if s.seed_commitment and s.seat not in self.client_seeds
        ]

    def fork(self) -> Session:
        """A copy of the game as it stands (for a reader that goes on folding events on its
        own): states are immutable, so the state is shared, not copied."""
        return self.resume(self.mark())

    def mark(self) -> Mark:
        """What `fork` copies, without making a session: for a reader that may never need
        its own copy (a watcher's stream, most of whose bursts find the live game at their
        version; making a session per stream and burst was 1-1.5% of the engine's CPU)."""
        return (
            self.state,
            self.version,
            self.finished,
            dict(self.client_seeds),
            self.seeds_fixed,
            self.head_hash,
            self.clocks,
        )

    def resume(self, mark: Mark) -> Session:
        """A session of this game as it stood at `mark` (its own copy, as `fork` makes)."""
        state, version, finished, client_seeds, seeds_fixed, head_hash, clocks = mark
        return Session(
            self.game_id,
            self.game,
            self.created,
            state,
            version,
            finished,
            client_seeds=dict(client_seeds),
            seeds_fixed=seeds_fixed,
            head_hash=head_hash,
            clocks=clocks,
        )

    @property
    def codec(self) -> Codec:
        return codec_of(self.game)

    def apply(self, event: Any, envelope: events_pb2.EventEnvelope) -> None:
        """The pipeline's `evolve` step: fold one recorded event (platform or game) into the
        session; `envelope` is where the log holds it (its version, causation and time),
        kept among the recent ones so the command's answer needs no read."""
        version, causation_id = int(envelope.version), envelope.causation_id
        time_ms = int(envelope.time_unix_ms)
        clocks = self.clocks
        if clocks is not None and time_ms > clocks.time_ms:
            # Charged to the seats asked after the envelope before this one (the audit's
            # rule, docs/auditing.md "Clocks").
            clocks = clock.elapse(clocks, time_ms, self.asked())
        match event:
            case GameCreated():
                self.created = event
                if event.time_control is not None:
                    clocks = clock.start(event.time_control, len(event.seats), time_ms)
            case SeatTimedOut():
                if clocks is not None:
                    clocks = clock.timed_out(clocks, event.seat)
            case SeatReclaimed():
                if clocks is not None:
                    clocks = clock.reclaimed(clocks, event.seat)
            case GameFinished():
                self.finished = event
            case ClientSeedRevealed():
                self.client_seeds[event.seat] = event.client_seed
            case ClientSeedsFixed():
                self.seeds_fixed = True
            case CommandAccepted():
                # Who asked: recorded for auditors, no change to the game; a move for the
                # seat's clock.
                if clocks is not None:
                    clocks = clock.moved(clocks, event.seat)
            case _:
                self.state = self.game.evolve(self.state, event)
        self.clocks = clocks  # only once the event is in: an event evolve refuses moves nothing
        self.version = version
        if causation_id:
            known = self.commands.get(causation_id)
            first = known.first if known else version
            self.commands[causation_id] = CommandResult(first, version)
            self.last_causation = causation_id
        self.recent[version] = envelope
        self.last_event_ms = max(self.last_event_ms, time_ms)
        while len(self.recent) > RECENT_ENVELOPES:  # in order of version: the first is oldest
            del self.recent[next(iter(self.recent))]

    def apply_envelope(self, envelope: events_pb2.EventEnvelope, stored: bytes = b"") -> None:
        """Fold one envelope read from the log; `stored` (its bytes as stored) moves the
        chain head along. Raises RulesError (and leaves the session as it was) when the
        payload does not decode; evolve may raise on an event the rules cannot apply."""
        event = self.codec.load_stored(envelope.payload, envelope.schema_version)
        self.apply(event, envelope)
        if stored:
            self.head_hash = chain_hash(stored)

    # Snapshots: the session's fold as canonical JSON, with the version it stands at.
    def snapshot(self) -> bytes:
        data = {
            "schema_version": SCHEMA_VERSION,
            "version": self.version,
            "game": self.game.name,
            "created": to_plain(self.created),
            "finished": to_plain(self.finished) if self.finished else None,
            "state": to_plain(self.state),
            "commands": {k: [v.first, v.last] for k, v in self.commands.items()},
            "last_causation": self.last_causation,
            "client_seeds": {str(k): v for k, v in self.client_seeds.items()},
            "seeds_fixed": self.seeds_fixed,
            "chain_hash": self.head_hash.hex(),
        }
        if self.clocks is not None:  # absent from the snapshots of games without a clock
            data["clocks"] = to_plain(self.clocks)
        return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_snapshot(cls, game_id: str, raw: bytes) -> Session:
        data = json.loads(raw)
        if data.get("schema_version", 0) != SCHEMA_VERSION:
            raise StaleSnapshot(f"snapshot schema {data.get('schema_version', 0)}")
        created = from_plain(GameCreated, data["created"])
        # The sealed snapshot carries the game's rules version (in `created`): the state
        # is folded on by those rules or by none (UnknownRulesVersion).
        game = rules_for(created.game, created.rules_version).definition
        state_type = type(game.initial_state())
        return cls(
            game_id=game_id,
            game=game,
            created=created,
            state=from_plain(state_type, data["state"]),
            version=data["version"],
            finished=from_plain(GameFinished, data["finished"]) if data["finished"] else None,
            commands={k: CommandResult(a, b) for k, (a, b) in data["commands"].items()},
            last_causation=data["last_causation"],
            client_seeds={int(k): v for k, v in data.get("client_seeds", {}).items()},
            seeds_fixed=data.get("seeds_fixed", True),
            head_hash=bytes.fromhex(data.get("chain_hash", "")),
            clocks=from_plain(clock.Clocks, data["clocks"]) if data.get("clocks") else None,
        )

    @classmethod
    def new(cls, game_id: str, created: GameCreated) -> Session:
        """A game about to fold its log: decided by the rules version its GameCreated
        names, or by none (UnknownRulesVersion: never replayed with other rules)."""
        game = rules_for(created.game, created.rules_version).definition
        return cls(game_id, game, created, game.initial_state())


_CODECS: dict[str, Codec] = {}


def codec_of(game: GameDefinition[Any, Any, Any, Any]) -> Codec:
    codec = _CODECS.get(game.name)
    if codec is None:
        codec = _CODECS[game.name] = Codec((*game.event_types, *game.command_types))
    return codec


def redacted(
    game: GameDefinition[Any, Any, Any, Any], envelope: events_pb2.EventEnvelope, finished: bool
) -> events_pb2.EventEnvelope:
    """The envelope as players and watchers may see it: a shuffle's order stays hidden
    until the game ends (its values are the deck order)."""
    if finished or envelope.type != "ChanceResolved":
        return envelope
    event = codec_of(game).loads(envelope.payload)
    if not hidden_until_end(event):
        return envelope
    hidden = dataclasses.replace(event, values=())
    out = events_pb2.EventEnvelope()
    out.CopyFrom(envelope)
    out.payload = codec_of(game).dumps(hidden)
    out.ClearField("blinding")  # with the values: else every order could be tried
    return out


@dataclass(frozen=True, slots=True)
class Answer:
    """What the pipeline hands back for a command: the game's version after it, the
    command's envelopes as its seat may see them, and the engine's signed receipt over the
    chain head there (no envelopes or receipt for the commands that need none)."""

    version: int
    envelopes: tuple[events_pb2.EventEnvelope, ...]
    finished: bool
    head: bytes = b""  # the chain hash at `version` (what the receipt signs)
    # The engine's signature over (game, version, head, time): what the seat keeps as proof.
    # Not compared: two replicas (two keys) answering one retry give the same result.
    receipt: engine_pb2.Receipt | None = field(default=None, compare=False)
    first: int = field(default=0, compare=False)  # the version of the command's first event
    session: Session | None = field(default=None, compare=False, repr=False)


async def answer(
    session: Session,
    first: int,
    last: int,
    store: EventStore,
    key: SigningKey,
    signed: bool = True,
    retried_by: PlayerClaims | None = None,
) -> Answer:
    """The pipeline's `receipt` step: the envelopes at versions first..last (from memory
    when the session holds them, else from the log), a shuffle's order hidden until the end
    (`redacted`), and `key`'s receipt over the game's version now, its chain head and the
    time of the envelope there (when the engine accepted what the receipt is for).

    `retried_by`: the caller of a command the log held already. A key names one seat's
    command (the CommandAccepted it starts with), so another seat gets ALREADY_EXISTS, never
    the news that its move was applied (docs/clients.md: a retry, or a second action under
    a used key, gets the first result)."""
    finished = session.finished is not None
    if not signed:
        return Answer(session.version, (), finished, session.head_hash, None, first, session)
    wanted = range(min(first, session.version), session.version + 1)  # ..and the receipt's
    if all(v in session.recent for v in wanted):
        read = [session.recent[v] for v in wanted]
    else:
        stored = await store.read(session.game_id, wanted.start)
        read = [events_pb2.EventEnvelope.FromString(r.data) for r in stored]
        read = [e for e in read if e.version <= session.version]
    envelopes = tuple(e for e in read if first <= e.version <= last)
    if retried_by is not None:
        recorded = codec_of(session.game).loads(envelopes[0].payload) if envelopes else None
        if isinstance(recorded, CommandAccepted) and recorded.seat != retried_by.seat:
            used = envelopes[0].causation_id.removeprefix("cmd:") if envelopes else ""
            raise AlreadyExists(
                f"idempotency_key {used!r} was used by another seat's command in this game; "
                "send each new command with a fresh key"
            )
    at = read[-1]
    signed_receipt = Receipt.sign(
        key, session.game_id, session.version, session.head_hash, int(at.time_unix_ms)
    )
    return Answer(
        session.version,
        tuple(redacted(session.game, e, finished) for e in envelopes),
        finished,
        session.head_hash,
        receipt_to_pb(signed_receipt),
        first,
        session,
    )
