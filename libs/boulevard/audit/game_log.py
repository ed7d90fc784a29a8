"""`audit game`, the pure part: does a game's log follow from its players' signed commands
and the recorded dice, under the game's own rules? (docs/auditing.md)

Input is what anyone can fetch once a game is over: the log's envelopes as stored (bytes),
and optionally the dice records, the match, the engine's key with receipts players kept,
and the ledger's postings for the game. One forward pass checks, version by version:

- the chain: versions 1, 2, … in order, each envelope naming the previous one's hash;
- the opening: `GameCreated`, then exactly what `new_game` says;
- every later event is explained: a `CommandAccepted` whose signature verifies under its
  seat's bound key, followed by exactly the events `decide` gives for that command on the
  replayed state; a `ChanceResolved` the state asked for and the dice service recorded; a
  `GameFinished` that is what `outcome` says. Anything else is a forgery;
- receipts: the log's hash at each receipt's version is the one the engine signed;
- money: each event's transfers are what the ledger posted for it, and nothing else;
- the dice anchor: GameFinished's dice head is the dice service's signed head over exactly
  the dice log served before its reveal (boulevard.audit.dice_anchor), and a game whose
  GameCreated promises one (`dice_anchored`) ends with one;
- clocks (a game with a time control): every seat's clock re-derived from the envelopes'
  times, every timeout at or after its deadline, bot moves only for absent seats
  (boulevard.audit.clocks).

The first version that does not follow raises `GameAuditFailed(version, what was expected)`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from google.protobuf.message import DecodeError

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.audit.clocks import ClockAudit, ClockAuditFailed
from boulevard.audit.dice_anchor import ServedDiceLog, anchor_problem
from boulevard.audit.evidence import Evidence, contradiction
from boulevard.audit.rules import RulesCheckFailed, codec_of, recorded_rules, stored_event
from boulevard.audit.seats import seat_problem, withheld_bot_reveal
from boulevard.audit.signing import (
    ZERO_HASH,
    Receipt,
    chain_hash,
    command_signing_bytes,
    key_id,
    parse_public_key,
    verify,
)
from boulevard.contract.dice_log import PublishedOpening
from boulevard.contract.mapping import action_to_command
from boulevard.fairness import RecordedOutcome, client_seed_commitment
from boulevard.games import REGISTRY
from boulevard.games.base import (
    ChanceKind,
    ChanceResolved,
    ClientSeedRevealed,
    ClientSeedsFixed,
    CommandAccepted,
    DiceHeadRef,
    GameCreated,
    GameDefinition,
    GameFinished,
    RulesError,
    SeatReclaimed,
    SeatTimedOut,
    transfers_of,
)
from boulevard.games.codec import Codec


class GameAuditFailed(Exception):
    """The log stops following from its commands at `version`."""

    def __init__(self, version: int, message: str) -> None:
        super().__init__(f"version {version}: {message}")
        self.version = version
        self.message = message


@dataclass(frozen=True, slots=True)
class DiceRecord:
    """One outcome as the dice service recorded it (ListOutcomes)."""

    nonce: int
    kind: str  # "roll" or "shuffle"
    values: tuple[int, ...]
    # What it was drawn for (None: not known, not compared): a roll's sides (0 for a
    # shuffle) and the game's purpose label. The operator knows the stream and could
    # otherwise draw nonce k with whichever request gives the value it wants.
    sides: int | None = None
    purpose: str | None = None


@dataclass(frozen=True, slots=True)
class DiceOpening:
    """What the dice service recorded of the opening (GetCommitment): the seats' seed
    commitments it drew the server seed against, and, once fixed, the client seeds its
    outcomes use (`None`: not fixed yet)."""

    seat_commitments: tuple[str, ...]
    client_seeds: tuple[str, ...] | None = None
    missing_seats: tuple[int, ...] = ()
    reveal_deadline_unix_ms: int | None = None  # after it a seat may be counted missing


@dataclass(frozen=True, slots=True)
class SeatBinding:
    """What the match says about a seat, to compare with GameCreated."""

    seat: int
    player_id: str
    bot: bool
    public_key: str
    seed_commitment: str = ""  # hex SHA-256 of the seat's client seed; "" for none


@dataclass
class GameAuditReport:
    game_id: str
    game: str = ""
    rules_version: str = ""  # the rules it was re-decided with: "<number>:<sha256>"
    versions: int = 0
    commands: int = 0
    chance: int = 0
    finished: bool = False
    head: bytes = ZERO_HASH  # the chain hash of the last envelope
    heads: dict[int, bytes] = field(default_factory=dict)
    receipts: int = 0
    ledger_entries: int = 0
    bot_seats: tuple[int, ...] = ()
    operator_key_seats: tuple[int, ...] = ()  # seats signed with the operator's bot key
    partial: str = ""  # why the audit stopped early (a live game's hidden shuffle)
    # For the dice audit (`audit all`), from this chain-checked log: the outcomes its
    # ChanceResolved events cite, in log order, and what it publishes of the opening.
    cited: list[RecordedOutcome] = field(default_factory=list)
    published: PublishedOpening | None = None
    ledger_seqs: list[int] = field(default_factory=list)  # the entries the ledger listed
    timeouts: int = 0  # SeatTimedOut events, each at or after its deadline
    stand_in_moves: int = 0  # moves the platform's bot played for absent seats
    dice_anchor: str = ""  # what became of GameFinished's dice head (a finished game)

    def summary(self) -> str:
        state = "finished" if self.finished else "in progress"
        text = (
            f"{self.game} game {self.game_id} ({state}): {self.versions} events follow from "
            f"{self.commands} signed commands and {self.chance} recorded outcomes; "
            f"chain head {self.head.hex()}"
        )
        if self.receipts:
            text += f"; {self.receipts} receipts agree"
        if self.ledger_entries:
            text += f"; {self.ledger_entries} ledger entries match the money moved"
        if self.bot_seats:
            text += f"; bot seats {list(self.bot_seats)}"
        if self.operator_key_seats:
            text += f"; seats signed with the operator's bot key {list(self.operator_key_seats)}"
        missing = self.published.missing_seats if self.published else ()
        if missing:
            # Allowed (the deadline passed), but a choice the operator could have steered
            # by dropping a reveal: say it, as the dice audit's note does.
            text += (
                f"; seats {list(missing)} did not reveal their client seed by the deadline "
                "and played with an empty one"
            )
        if self.timeouts:
            text += (
                f"; {self.timeouts} seat(s) timed out at their deadlines, "
                f"{self.stand_in_moves} move(s) played for them by the platform's bot"
            )
        if self.dice_anchor:
            text += f"; {self.dice_anchor}"
        if self.partial:
            text += f"; stopped early: {self.partial}"
        return text


Postings = Sequence[tuple[str, int]]  # (account name in the game's book, signed amount)


def expected_postings(transfers: Sequence[Any]) -> list[tuple[str, int]]:
    """What the ledger must post for an event's transfers (two postings per transfer)."""
    out: list[tuple[str, int]] = []
    for t in transfers:
        out.append((t.source, -int(t.amount)))
        out.append((t.target, int(t.amount)))
    return sorted(out)


def audit_game_log(
    game_id: str,
    log: Sequence[bytes],
    *,
    dice: Mapping[int, DiceRecord] | None = None,
    commitment: str | None = None,
    match_id: str | None = None,
    match_seats: Sequence[SeatBinding] | None = None,
    engine_key: bytes | None = None,
    receipts: Sequence[Receipt] = (),
    ledger: Mapping[int, Postings] | None = None,
    anchors: Sequence[tuple[int, bytes]] = (),
    bot_key: str = "",
    redacted: frozenset[int] = frozenset(),
    finished: bool = False,
    dice_opening: DiceOpening | None = None,
    evidence: Sequence[Evidence] = (),
    bot_keys: Collection[str] = (),
    engine_keys: Collection[bytes] = (),
    dice_log: ServedDiceLog | None = None,
) -> GameAuditReport:
    """Check `log` (envelope bytes as stored, version 1 first); raise GameAuditFailed at the
    first version that does not follow. Optional inputs are checked when given; versions
    in `redacted` (a live game's hidden shuffles) end the audit there. `finished`: the
    caller was told the game is over (GetGameLog, ListGames), so the log must end with
    GameFinished and nothing may be redacted. `evidence`: what seats kept (their receipts
    are checked with `receipts`, and what each was given for must be in the log).
    `bot_keys`: the platform's bot keys from a pinned key history (with `bot_key`).
    `engine_keys`: the engine's earlier keys from its key history: a receipt verifies under
    the key among these and `engine_key` that its key_id names (a receipt signed before a
    rotation). `dice_log`: the game's dice log as served, to check the head GameFinished
    anchors (None: the head is only noted)."""
    kept = [r for e in evidence for r in e.receipts]
    audit = _Audit(
        game_id, dice, engine_key, [*receipts, *kept], ledger, anchors, bot_key, dice_opening
    )
    audit.bot_keys = frozenset(bot_keys)
    audit.receipt_keys.update((key_id(k), k) for k in engine_keys)
    audit.dice_log = dice_log
    report = audit.run(log, commitment, match_id, match_seats, redacted, finished)
    for e in evidence:
        found = contradiction(e, log)
        if found is not None:
            raise GameAuditFailed(*found)
    return report


class _Audit:
    def __init__(
        self,
        game_id: str,
        dice: Mapping[int, DiceRecord] | None,
        engine_key: bytes | None,
        receipts: Sequence[Receipt],
        ledger: Mapping[int, Postings] | None,
        anchors: Sequence[tuple[int, bytes]],
        bot_key: str,
        dice_opening: DiceOpening | None = None,
    ) -> None:
        self.game_id = game_id
        self.dice = dice
        self.receipts: dict[int, list[Receipt]] = {}
        for r in receipts:
            self.receipts.setdefault(r.version, []).append(r)
        self.ledger = ledger
        self.anchors = anchors
        self.bot_key = bot_key
        self.bot_keys: frozenset[str] = frozenset()
        # key_id -> public key: the engine's keys a receipt may be signed with.
        self.receipt_keys: dict[str, bytes] = {key_id(engine_key): engine_key} if engine_key else {}
        self.report = GameAuditReport(game_id)
        self.game: GameDefinition[Any, Any, Any, Any] | None = None
        self.codec = Codec(())
        self.today = b""  # the last decoded payload's bytes at today's schema
        self.created: GameCreated | None = None
        self.state: Any = None
        self.expected: deque[Any] = deque()  # events still owed by the last command/opening
        self.cause = ""
        self.keys_used: set[str] = set()
        self.nonces_used: set[int] = set()
        self.last_nonce = -1
        # The opening's seed reveals (docs/fairness.md, "The opening"): by seat, and
        # whether the seeds are fixed (no chance before that).
        self.revealed_seeds: dict[int, str] = {}
        self.seeds_fixed = False
        self.dice_opening = dice_opening
        self.dice_log: ServedDiceLog | None = None
        self.clocks: ClockAudit | None = None  # set by the opening

    def run(
        self,
        log: Sequence[bytes],
        commitment: str | None,
        match_id: str | None,
        match_seats: Sequence[SeatBinding] | None,
        redacted: frozenset[int],
        finished: bool,
    ) -> GameAuditReport:
        report = self.report
        prev = ZERO_HASH
        for i, data in enumerate(log):
            version = i + 1
            if version in redacted:
                # The flag is the server's word: only a running game hides anything, and
                # only the shuffle its rules ask for at this point.
                self._may_be_redacted(version, log[i + 1 :], finished)
                self._hidden_shuffle(version, self._envelope(version, data, prev))
                self._readable_after(version, log)
                report.partial = f"version {version} is hidden until the game ends"
                unchecked = sum(len(r) for v, r in self.receipts.items() if v >= version)
                if unchecked:
                    report.partial += f"; {unchecked} receipt(s) after it not checked"
                break
            env = self._envelope(version, data, prev)
            prev = chain_hash(data)
            report.heads[version] = prev
            report.head = prev
            report.versions = version
            if version == 1:
                self._opening(env, commitment, match_id, match_seats)
            else:
                try:
                    self._event(version, env)
                except ClockAuditFailed as err:
                    raise GameAuditFailed(err.version, err.message) from None
            self._check_receipts(version, prev)
            self._check_money(version, env)
        end = report.versions + 1
        if self.expected and not report.partial:
            raise GameAuditFailed(
                end,
                f"the log ends before the {len(self.expected)} event(s) owed by "
                f"{self.cause or 'the opening'} (next: {type(self.expected[0]).__name__})",
            )
        if not log:
            raise GameAuditFailed(1, "the log is empty: expected GameCreated")
        if finished and not report.finished:
            raise GameAuditFailed(
                end,
                f"the game is over, but its log does not end with GameFinished (it ends at "
                f"version {report.versions}): a truncated log",
            )
        if self.dice is not None and report.finished:
            unused = sorted(n for n in self.dice if n not in self.nonces_used)
            if unused:
                raise GameAuditFailed(
                    report.versions,
                    f"outcome nonce {unused[0]} was drawn but the game never used it (a "
                    "burned or re-rolled outcome)",
                )
        for version in sorted(self.receipts):
            if version > report.versions and not report.partial:
                raise GameAuditFailed(
                    version,
                    f"a receipt signs version {version}, but the log ends at "
                    f"{report.versions}: history was deleted",
                )
        if self.ledger is not None and not report.partial:
            for version in sorted(self.ledger):
                if version > report.versions:
                    raise GameAuditFailed(
                        version, f"the ledger posted money for version {version}, not in the log"
                    )
        if self.ledger is not None and report.finished and not report.partial:
            # The anchor binds the whole finished history into the ledger's signed tree:
            # one at the end is required, and the ledger anchors nothing else.
            end_version = report.versions
            for version, _ in self.anchors:
                if version != end_version:
                    raise GameAuditFailed(
                        version,
                        f"the ledger anchors version {version}, not the game's end ({end_version})",
                    )
            if not self.anchors:
                raise GameAuditFailed(
                    end_version,
                    f"the ledger anchors no chain head for the game's end (version "
                    f"{end_version}): nothing in its signed tree binds this history",
                )
        for version, head in self.anchors:
            if report.heads.get(version) != head:
                raise GameAuditFailed(
                    version,
                    f"the ledger anchors chain head {head.hex()} at version {version}; the "
                    f"log's is {report.heads.get(version, b'').hex() or 'missing'}",
                )
        return report

    # -- the chain --------------------------------------------------------------------------

    def _hidden_shuffle(self, version: int, env: events_pb2.EventEnvelope) -> None:
        """A redacted envelope is the shuffle the game asks for here, its values hidden."""
        game = self.game
        request = game.chance(self.state) if game is not None else None
        event: Any = None
        if env.type == "ChanceResolved":
            try:
                event = self.codec.loads(env.payload)
            except RulesError:
                event = None
        if (
            not isinstance(event, ChanceResolved)
            or request is None
            or request.kind is not ChanceKind.SHUFFLE
            or (event.kind, event.purpose, event.values) != (request.kind, request.purpose, ())
            or self.expected
            or not self.seeds_fixed
        ):
            raise GameAuditFailed(
                version,
                f"served redacted as a {env.type}, but only a running game's shuffle is "
                "hidden, where its rules ask for one",
            )

    def _readable_after(self, version: int, log: Sequence[bytes]) -> None:
        """Past a hidden shuffle the audit cannot follow the rules, but every envelope must
        still be an event of this game: an unreadable one (which halts the game) fails the
        audit at its version, hidden shuffle or not."""
        for later, data in enumerate(log[version:], start=version + 1):
            try:
                env = events_pb2.EventEnvelope.FromString(data)
                self.codec.loads(env.payload)
            except (DecodeError, RulesError) as err:
                raise GameAuditFailed(
                    later, f"not an event of this game, which halts it: {err}"
                ) from None

    @staticmethod
    def _may_be_redacted(version: int, rest: Sequence[bytes], finished: bool) -> None:
        """Refuse a redaction in a game that is over: told so by the caller, or shown so by
        a GameFinished served after it."""
        if finished:
            raise GameAuditFailed(
                version, "served redacted, but the game is over: a finished game hides nothing"
            )
        for data in rest:
            try:
                later = events_pb2.EventEnvelope.FromString(data)
            except DecodeError:
                continue
            if later.type == "GameFinished":
                raise GameAuditFailed(
                    version,
                    f"served redacted, yet the log goes on to GameFinished at version "
                    f"{later.version}: a finished game hides nothing",
                )

    def _envelope(self, version: int, data: bytes, prev: bytes) -> events_pb2.EventEnvelope:
        try:
            env = events_pb2.EventEnvelope.FromString(data)
        except DecodeError:
            raise GameAuditFailed(version, "not an EventEnvelope") from None
        if env.version != version:
            raise GameAuditFailed(
                version,
                f"expected the envelope of version {version}, found version {env.version} "
                "(a commit deleted or reordered)",
            )
        if env.game_id != self.game_id:
            raise GameAuditFailed(version, f"envelope of game {env.game_id!r}, not this one")
        if bytes(env.prev_hash) != prev:
            raise GameAuditFailed(
                version,
                f"prev_hash {bytes(env.prev_hash).hex() or '(none)'} is not the chain hash of "
                f"version {version - 1} ({prev.hex()}): the history before it was changed",
            )
        return env

    def _check_receipts(self, version: int, head: bytes) -> None:
        for r in self.receipts.get(version, ()):
            if r.game_id != self.game_id:
                raise GameAuditFailed(version, f"a receipt for game {r.game_id!r}")
            key = self.receipt_keys.get(r.key_id)
            if key is None and self.receipt_keys:
                raise GameAuditFailed(
                    version,
                    f"a receipt signed by key {r.key_id}, which is neither the engine's key "
                    "nor one of its key history",
                )
            if key is None or not r.verify(key):
                raise GameAuditFailed(version, "a receipt whose engine signature does not verify")
            if r.chain_head != head:
                raise GameAuditFailed(
                    version,
                    f"the engine signed chain head {r.chain_head.hex()} at version {version}; "
                    f"the log has {head.hex()}: history was rewritten",
                )
            self.report.receipts += 1

    def _check_money(self, version: int, env: events_pb2.EventEnvelope) -> None:
        if self.ledger is None:
            return
        want = expected_postings(env.transfers)
        got = sorted(self.ledger.get(version, ()))
        if want != got:
            raise GameAuditFailed(
                version,
                f"the event moves {want or 'no money'} but the ledger posted {got or 'nothing'}",
            )
        if got:
            self.report.ledger_entries += 1

    # -- the rules --------------------------------------------------------------------------

    def _decode(self, version: int, env: events_pb2.EventEnvelope) -> Any:
        """The event of an envelope, read at its schema and upcast (audit/rules.py); its
        bytes at today's schema are kept in `self.today` to compare with the rules'."""
        try:
            event, self.today = stored_event(self.codec, env.payload, env.schema_version)
        except RulesCheckFailed as err:
            raise GameAuditFailed(version, str(err)) from None
        if env.type != type(event).__name__:
            raise GameAuditFailed(
                version, f"envelope type {env.type!r} but payload {type(event).__name__}"
            )
        lifted = expected_postings(env.transfers)
        if lifted != expected_postings(transfers_of(event)):
            raise GameAuditFailed(
                version, "the envelope's transfers are not the ones its payload moves"
            )
        return event

    def _opening(
        self,
        env: events_pb2.EventEnvelope,
        commitment: str | None,
        match_id: str | None,
        match_seats: Sequence[SeatBinding] | None,
    ) -> None:
        created = self._decode(1, env)
        if not isinstance(created, GameCreated):
            raise GameAuditFailed(1, f"expected GameCreated first, found {env.type}")
        if created.game not in REGISTRY or env.game != created.game:
            raise GameAuditFailed(1, f"unknown game {created.game!r}")
        try:
            rules = recorded_rules(created)  # never other rules than the game names
        except RulesCheckFailed as err:
            raise GameAuditFailed(1, str(err)) from None
        game = rules.definition
        self.game, self.created = game, created
        self.clocks = ClockAudit.open(self.game_id, game, created, env.time_unix_ms)
        self.report.game = game.name
        self.report.rules_version = rules.pin
        self.codec = codec_of(game)
        if [s.seat for s in created.seats] != list(range(len(created.seats))):
            raise GameAuditFailed(1, "seats are not numbered 0..n-1 in order")
        for s in created.seats:
            try:
                parse_public_key(s.public_key)
            except ValueError as err:
                raise GameAuditFailed(1, f"seat {s.seat} has no valid key: {err}") from None
        self.report.bot_seats = tuple(s.seat for s in created.seats if s.bot)
        problem = seat_problem(created, {self.bot_key, *self.bot_keys} - {""})
        if problem:
            raise GameAuditFailed(1, problem)
        if self.bot_key:
            self.report.operator_key_seats = tuple(
                s.seat for s in created.seats if s.public_key == self.bot_key
            )
        if commitment is not None and created.seed_commitment != commitment:
            raise GameAuditFailed(
                1,
                f"GameCreated publishes dice commitment {created.seed_commitment}, the dice "
                f"service recorded {commitment}",
            )
        opening = self.dice_opening
        seat_commitments = tuple(s.seed_commitment for s in created.seats)
        self.report.published = PublishedOpening(
            created.seed_commitment,
            seat_commitments,
            reveal_deadline_unix_ms=created.reveal_deadline_unix_ms,
        )
        if opening is not None and opening.seat_commitments != seat_commitments:
            # The server seed must have been drawn against the commitments the players
            # made: with others (or none), the seeds they reveal change nothing.
            raise GameAuditFailed(
                1,
                f"GameCreated binds the seats' seed commitments {list(seat_commitments)}, "
                f"the dice service opened the game with {list(opening.seat_commitments)}",
            )
        deadline = None if opening is None else opening.reveal_deadline_unix_ms
        if deadline is not None and deadline != created.reveal_deadline_unix_ms:
            # The dice service counts a seat missing only after its own deadline.
            raise GameAuditFailed(
                1,
                f"GameCreated gives the seats until {created.reveal_deadline_unix_ms} to "
                f"reveal; the dice service opened the game with the deadline {deadline}",
            )
        if match_id is not None and created.match_id != match_id:
            raise GameAuditFailed(1, f"GameCreated names match {created.match_id!r}")
        if match_seats is not None:
            seated = [
                SeatBinding(s.seat, s.player_id, s.bot, s.public_key, s.seed_commitment)
                for s in created.seats
            ]
            matched = sorted(match_seats, key=lambda s: s.seat)
            if seated != matched:
                differ = next(
                    (
                        f"seat {a.seat}: {a} where the match has {b}"
                        for a, b in zip(seated, matched, strict=False)
                        if a != b
                    ),
                    f"{len(seated)} seats where the match has {len(matched)}",
                )
                raise GameAuditFailed(1, f"the seats are not the match's: {differ}")
        self.state = game.initial_state()
        try:
            self.expected = deque(game.new_game(created.config))
        except RulesError as err:
            raise GameAuditFailed(1, f"new_game refuses the options: {err.message}") from None
        self.cause = "new_game"

    def _event(self, version: int, env: events_pb2.EventEnvelope) -> None:
        game, created = self.game, self.created
        assert game is not None and created is not None
        event = self._decode(version, env)
        if self.report.finished:
            raise GameAuditFailed(version, f"{env.type} after GameFinished")
        clocks = self.clocks
        assert clocks is not None
        clocks.elapse(version, env.time_unix_ms, lambda: self.state)
        if self.expected:
            want = self.expected.popleft()
            if self.codec.dumps(want) != self.today:
                raise GameAuditFailed(
                    version,
                    f"{self.cause} gives {self.codec.dumps(want).decode()}, the log records "
                    f"{self.today.decode(errors='replace')}",
                )
            self.state = game.evolve(self.state, event)
            return
        match event:
            case CommandAccepted():
                self._command(version, env, event)
            case ChanceResolved():
                self._chance(version, event)
            case GameFinished():
                self._finished(version, event)
            case GameCreated():
                raise GameAuditFailed(version, "a second GameCreated")
            case ClientSeedRevealed():
                self._seed_revealed(version, event)
            case ClientSeedsFixed():
                self._seeds_fixed(version, event)
            case SeatTimedOut():
                clocks.timed_out(version, event, self.state)
                self.report.timeouts = clocks.timeouts
            case SeatReclaimed():
                clocks.reclaimed(version, event)
            case _:
                raise GameAuditFailed(
                    version,
                    f"{env.type} follows from no command, recorded outcome or game end: "
                    f"expected a CommandAccepted, ChanceResolved or GameFinished",
                )

    def _command(
        self, version: int, env: events_pb2.EventEnvelope, accepted: CommandAccepted
    ) -> None:
        game, created = self.game, self.created
        assert game is not None and created is not None
        pending = game.chance(self.state)
        if pending is not None:
            raise GameAuditFailed(
                version, f"a command while the game waits for chance ({pending.purpose})"
            )
        if game.outcome(self.state).finished:
            raise GameAuditFailed(version, "a command after the game's end")
        seats = {s.seat: s for s in created.seats}
        seat = seats.get(accepted.seat)
        if seat is None:
            raise GameAuditFailed(version, f"a command for seat {accepted.seat}, not in the game")
        if accepted.player_id != seat.player_id:
            raise GameAuditFailed(
                version, f"seat {seat.seat} is {seat.player_id!r}, not {accepted.player_id!r}"
            )
        if accepted.expected_version not in (0, version - 1):
            raise GameAuditFailed(
                version,
                f"the command was signed for version {accepted.expected_version}, "
                f"but follows version {version - 1}",
            )
        if not accepted.idempotency_key or accepted.idempotency_key in self.keys_used:
            raise GameAuditFailed(
                version, f"idempotency key {accepted.idempotency_key!r} used twice (a replay)"
            )
        self.keys_used.add(accepted.idempotency_key)
        try:
            action_bytes = bytes.fromhex(accepted.action)
            signature = bytes.fromhex(accepted.signature)
        except ValueError:
            raise GameAuditFailed(version, "action or signature is not hex") from None
        if (accepted.action, accepted.signature) != (action_bytes.hex(), signature.hex()):
            # bytes.fromhex also reads spaces and capitals; other decoders do not.
            raise GameAuditFailed(version, "action and signature must be lowercase hex only")
        message = command_signing_bytes(
            self.game_id,
            accepted.seat,
            accepted.expected_version,
            accepted.idempotency_key,
            action_bytes,
        )
        assert self.clocks is not None
        # A seat's own key, or the stand-in key of the timeout when the bot plays it.
        signer = self.clocks.signing_key(version, accepted, seat.public_key)
        if not verify(bytes.fromhex(signer), signature, message):
            whose = "the stand-in key" if accepted.stand_in else f"seat {seat.seat}'s key"
            raise GameAuditFailed(version, f"the signature does not verify under {whose}")
        try:
            action = engine_pb2.Action.FromString(action_bytes)
            command = action_to_command(game, action)
        except (DecodeError, TypeError, ValueError, RulesError) as err:
            raise GameAuditFailed(version, f"the signed action is not a command: {err}") from None
        if getattr(command, "seat", seat.seat) != seat.seat:
            raise GameAuditFailed(version, f"seat {seat.seat} signed a move for another seat")
        try:
            events = game.decide(command, self.state)
        except RulesError as err:
            raise GameAuditFailed(
                version, f"the rules refuse this command ({err.code}: {err.message})"
            ) from None
        if not events:
            raise GameAuditFailed(version, "the command changes nothing")
        self.expected = deque(events)
        self.cause = f"the command at version {version} ({type(command).__name__})"
        self.report.commands += 1
        self.clocks.moved(accepted)
        self.report.stand_in_moves = self.clocks.stand_in_moves

    def _seed_revealed(self, version: int, event: ClientSeedRevealed) -> None:
        """A seat's client seed: before the seeds are fixed, once, and the one its
        GameCreated commitment names (SHA-256 of the UTF-8 seed)."""
        created = self.created
        assert created is not None
        seats = {s.seat: s for s in created.seats}
        seat = seats.get(event.seat)
        if seat is None or self.seeds_fixed or event.seat in self.revealed_seeds:
            raise GameAuditFailed(version, f"an unexpected seed reveal for seat {event.seat}")
        if client_seed_commitment(event.client_seed) != seat.seed_commitment:
            raise GameAuditFailed(
                version, f"seat {event.seat}'s revealed seed is not its commitment"
            )
        self.revealed_seeds[event.seat] = event.client_seed

    def _seeds_fixed(self, version: int, event: ClientSeedsFixed) -> None:
        """The seeds the dice use: each seat's revealed seed, "" for a seat listed missing
        (or one that committed to none); once."""
        created = self.created
        assert created is not None
        expected = tuple(self.revealed_seeds.get(s.seat, "") for s in created.seats)
        missing = tuple(
            s.seat for s in created.seats if s.seed_commitment and s.seat not in self.revealed_seeds
        )
        if self.seeds_fixed or event.client_seeds != expected or event.missing_seats != missing:
            raise GameAuditFailed(version, "the fixed client seeds are not the revealed ones")
        withheld = withheld_bot_reveal(created, event.missing_seats)
        if withheld:
            raise GameAuditFailed(version, withheld)
        opening = self.dice_opening
        if opening is not None and (
            opening.client_seeds != event.client_seeds
            or tuple(opening.missing_seats) != event.missing_seats
        ):
            raise GameAuditFailed(
                version,
                f"the log fixes the client seeds {list(event.client_seeds)} (missing "
                f"{list(event.missing_seats)}); the dice service's outcomes use "
                f"{list(opening.client_seeds or ())} (missing {list(opening.missing_seats)})",
            )
        self.seeds_fixed = True
        assert self.report.published is not None
        self.report.published = replace(
            self.report.published,
            client_seeds=event.client_seeds,
            missing_seats=event.missing_seats,
        )

    def _chance(self, version: int, resolved: ChanceResolved) -> None:
        game = self.game
        assert game is not None
        request = game.chance(self.state)
        if request is None:
            raise GameAuditFailed(version, "a ChanceResolved the game did not ask for")
        if not self.seeds_fixed:
            raise GameAuditFailed(version, "a ChanceResolved before the client seeds were fixed")
        # A shuffle has no sides (the dice record and the engine's event say 0; logs resolved
        # in-process say the request's default): `audit dice` checks it against the record.
        roll = request.kind is ChanceKind.ROLL
        asked = (request.purpose, request.kind, request.sides if roll else None)
        got = (resolved.purpose, resolved.kind, resolved.sides if roll else None)
        if asked != got or len(resolved.values) != request.count:
            raise GameAuditFailed(
                version,
                f"the game asked for {request.count} x {asked}, the log answers "
                f"{len(resolved.values)} x {got}",
            )
        if self.dice is not None:
            record = self.dice.get(resolved.nonce)
            if record is None:
                raise GameAuditFailed(
                    version, f"outcome nonce {resolved.nonce} is not in the dice records"
                )
            # Every outcome drawn is used, in the order drawn (docs/fairness.md, step 7): the
            # engine asks again only with the same request id, which gets the same nonce, so
            # a nonce the log steps over was drawn and thrown away — a re-roll.
            following = self.last_nonce + 1
            if resolved.nonce > following and following in self.dice:
                raise GameAuditFailed(
                    version,
                    f"outcome nonce {following} was drawn but the game never used it (a burned "
                    f"or re-rolled outcome): the log goes on with nonce {resolved.nonce}",
                )
            if resolved.nonce != following:
                raise GameAuditFailed(
                    version,
                    f"outcome nonce {resolved.nonce} used twice or out of order "
                    f"(nonce {following} was next)",
                )
            if record.values != resolved.values or record.kind != resolved.kind.value:
                raise GameAuditFailed(
                    version,
                    f"the dice service recorded {record.kind} {list(record.values)} for nonce "
                    f"{resolved.nonce}; the log uses {resolved.kind.value} "
                    f"{list(resolved.values)}",
                )
            used = (resolved.sides if roll else 0, resolved.purpose)
            drawn = (
                used[0] if record.sides is None else record.sides,
                used[1] if record.purpose is None else record.purpose,
            )
            if drawn != used:
                raise GameAuditFailed(
                    version,
                    f"outcome nonce {resolved.nonce} was drawn for (sides, purpose) {drawn}; "
                    f"the game used it for {used}",
                )
            self.nonces_used.add(resolved.nonce)
            self.last_nonce = resolved.nonce
        self.state = game.evolve(self.state, resolved)
        self.report.chance += 1
        self.report.cited.append(
            RecordedOutcome(
                resolved.nonce,
                resolved.kind.value,
                len(resolved.values),
                resolved.sides,
                resolved.values,
                resolved.purpose,
            )
        )

    def _finished(self, version: int, finished: GameFinished) -> None:
        game, created = self.game, self.created
        assert game is not None and created is not None
        if game.chance(self.state) is not None:
            raise GameAuditFailed(version, "GameFinished while the game waits for chance")
        outcome = game.outcome(self.state)
        want = GameFinished(
            ranking=outcome.ranking,
            scores=outcome.scores,
            player_ids=tuple(s.player_id for s in created.seats),
            reason=outcome.reason,
        )
        # The dice head is the dice service's fact, not the rules': checked on its own.
        if not outcome.finished or want != replace(finished, dice_head=None):
            said = self.codec.dumps(want).decode() if outcome.finished else "the game goes on"
            raise GameAuditFailed(
                version,
                f"the rules say {said}; the log records {self.codec.dumps(finished).decode()}",
            )
        self._dice_anchor(version, finished.dice_head)
        self.report.finished = True

    def _dice_anchor(self, version: int, head: DiceHeadRef | None) -> None:
        """GameFinished's dice head against the served dice log (docs/auditing.md, "The
        dice anchor"): required when GameCreated promised it, checked whenever present."""
        created = self.created
        assert created is not None
        if head is None:
            if created.dice_anchored:
                raise GameAuditFailed(
                    version,
                    "GameCreated promises that the game's end carries the dice log's signed "
                    "head (dice_anchored), but GameFinished carries none: nothing in this "
                    "history binds its dice",
                )
            self.report.dice_anchor = "the game predates dice anchors (no dice head to check)"
            return
        served = self.dice_log
        if served is None:
            self.report.dice_anchor = (
                f"dice head of size {head.tree_size} recorded, not checked (no dice log given)"
            )
            return
        if served.leaves is None:
            raise GameAuditFailed(
                version,
                f"GameFinished anchors the dice log at {head.tree_size} records, but the dice "
                "service does not serve that log (its seed is not revealed)",
            )
        problem = anchor_problem(self.game_id, head, served.leaves, served.keys)
        if problem is not None:
            raise GameAuditFailed(version, problem)
        self.report.dice_anchor = (
            f"GameFinished's dice head anchors the dice log's {head.tree_size} records"
        )
