"""Chance in the engine: the pipeline's `settle` step (`Settler.settled`: what a game owes,
done at the dice service and recorded), what a game owes (`owed`, pure: seeds to fix, a
chance to resolve, its end), and where randomness comes from (the dice service, or in pure
tests a local rng)."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import structlog

from boulevard.contract.dice_log import head_ref_of
from boulevard.eventlog.errors import ConcurrencyConflict
from boulevard.games.base import (
    ChanceRequest,
    ChanceResolved,
    ClientSeedsFixed,
    DiceHeadRef,
    GameFinished,
    RandomSource,
)
from boulevard.games.playout import resolve_locally
from services.engine.chain import Recorder
from services.engine.dice_client import DiceClient
from services.engine.sessions import Session

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class AwaitSeeds:
    """The game waits for its seats' seed reveals until `deadline_unix_ms` (0: none)."""

    deadline_unix_ms: int


@dataclass(frozen=True, slots=True)
class FixSeeds:
    """Every seat has revealed, or the deadline has passed: the seeds are fixed now."""

    fixed: ClientSeedsFixed


@dataclass(frozen=True, slots=True)
class Resolve:
    """The game asks for chance. The request id names the version it answers, so a retry
    after a crash gets the same outcome from the dice service, never a fresh one."""

    request_id: str
    request: ChanceRequest


@dataclass(frozen=True, slots=True)
class Finish:
    """The game is over: its GameFinished is owed (the settle step adds the dice log's
    signed head to it: a fact of the dice service, not of the rules)."""

    finished: GameFinished


def owed(session: Session, now_unix_ms: int) -> AwaitSeeds | FixSeeds | Resolve | Finish | None:
    """What a game needs next before a player can act: its seeds fixed (or a wait for
    them), a chance resolved, or its end recorded; None when it owes nothing (a finished
    game owes nothing but its dice seed's reveal, which the engine does once)."""
    if session.finished is not None:
        return None
    if not session.seeds_fixed:
        missing = session.unrevealed()
        deadline = session.created.reveal_deadline_unix_ms
        if missing and (not deadline or now_unix_ms < deadline):
            return AwaitSeeds(deadline)
        # A seat that did not reveal plays with "".
        seeds = tuple(session.client_seeds.get(s.seat, "") for s in session.created.seats)
        return FixSeeds(ClientSeedsFixed(seeds, tuple(missing)))

    # What the rules owe depends on the version alone: asked once a version, however many
    # times the pipeline and every watcher's stream ask (issue 28).
    def rules_owe() -> Resolve | Finish | None:
        request = session.game.chance(session.state)
        if request is not None:
            return Resolve(f"{session.game_id}:{session.version}", request)
        outcome = session.outcome()
        if not outcome.finished:
            return None
        return Finish(
            GameFinished(
                ranking=outcome.ranking,
                scores=outcome.scores,
                player_ids=tuple(s.player_id for s in session.created.seats),
                reason=outcome.reason,
            )
        )

    owes: Resolve | Finish | None = session.memo("owed", None, rules_owe)
    return owes


class Settler:
    """Does what a game owes (`owed`) at the dice service and records it (`Recorder`):
    before a command, what a crash left owed ("Chance after a crash"); after it, what the
    command led to. `awaiting_seeds` (game -> reveal deadline) is what the engine's reveal
    sweeper wakes; `on_finished` is told of each game closed here."""

    def __init__(
        self,
        chance: ChanceSource,
        recorder: Recorder,
        clock: Callable[[], int],
        awaiting_seeds: dict[str, int],
        on_finished: Callable[[Session], Awaitable[None]] | None,
    ) -> None:
        self.chance = chance
        self.recorder = recorder
        self.clock = clock
        self.awaiting_seeds = awaiting_seeds
        self.on_finished = on_finished

    async def settled(self, session: Session, causation: str = "") -> bool:
        """The pipeline's `settle` step: what the game owes, done until it owes nothing or
        waits for its seeds (its seeds fixed at the dice service, each chance resolved
        there, a game that is over closed and its dice seed revealed), the events appended
        under `causation` (the command that led to them; "": the last one). False when
        another replica settled first: then read the log again."""
        causation = causation or session.last_causation
        append = self.recorder.append
        try:
            while session.finished is None:
                match owed(session, self.clock()):
                    case None:
                        return True
                    case AwaitSeeds(deadline):
                        self.awaiting_seeds[session.game_id] = deadline
                        return True  # no chance before the seeds are fixed
                    case FixSeeds(fixed):
                        # The dice service checks them against the commitments it recorded.
                        await self.chance.fix_seeds(
                            session.game_id, fixed.client_seeds, fixed.missing_seats
                        )
                        await append(session, [fixed], causation or "seeds")
                        self.awaiting_seeds.pop(session.game_id, None)
                        if fixed.missing_seats:
                            log.warning(
                                "seats did not reveal their seeds",
                                game_id=session.game_id,
                                seats=list(fixed.missing_seats),
                            )
                    case Resolve(request_id, request):
                        resolved = await self.chance.resolve(session.game_id, request_id, request)
                        await append(session, [resolved], causation)
                    case Finish(finished):
                        # The dice log's head over every leaf so far (the reveal comes
                        # after this event): the game's chain commits to its dice.
                        head = await self.chance.head(session.game_id)
                        finished = replace(finished, dice_head=head)
                        await append(session, [finished], causation)
                        await self.recorder.snapshot(session)
                        log.info("game finished", game_id=session.game_id, ranking=finished.ranking)
                        if self.on_finished is not None:
                            await self.on_finished(session)
        except ConcurrencyConflict:
            return False
        if not session.revealed:
            # Idempotent at the dice service; done by whoever first sees the game finished,
            # so a crash between GameFinished and the reveal still reveals.
            await self.chance.reveal(session.game_id)
            session.revealed = True
        return True


@dataclass(frozen=True, slots=True)
class Opened:
    """The dice service's answer to opening a game: its server seed commitment, and the
    reveal deadline as it recorded it (a retried open keeps the first one)."""

    commitment: str
    reveal_deadline_unix_ms: int


class ChanceSource(Protocol):
    """Where randomness comes from: the dice service (or, in pure tests, a local rng).
    `anchored`: its outcomes are in a signed log whose head `head` gives (GameFinished
    records it, and GameCreated promises it with `dice_anchored`)."""

    anchored: bool

    async def open_game(
        self, game_id: str, seed_commitments: Sequence[str], reveal_deadline_unix_ms: int
    ) -> Opened: ...
    async def fix_seeds(
        self, game_id: str, client_seeds: Sequence[str], missing_seats: Sequence[int]
    ) -> None: ...
    async def resolve(
        self, game_id: str, request_id: str, chance: ChanceRequest
    ) -> ChanceResolved: ...
    async def head(self, game_id: str) -> DiceHeadRef | None: ...
    async def reveal(self, game_id: str) -> None: ...


class DiceServiceChance:
    """The real thing: every outcome is drawn and recorded by the dice service."""

    anchored = True

    def __init__(self, client: DiceClient) -> None:
        self.client = client

    async def open_game(
        self, game_id: str, seed_commitments: Sequence[str], reveal_deadline_unix_ms: int
    ) -> Opened:
        opened = await self.client.open_game(game_id, seed_commitments, reveal_deadline_unix_ms)
        return Opened(opened.commitment, opened.reveal_deadline_unix_ms)

    async def fix_seeds(
        self, game_id: str, client_seeds: Sequence[str], missing_seats: Sequence[int]
    ) -> None:
        await self.client.fix_seeds(game_id, client_seeds, missing_seats)

    async def resolve(self, game_id: str, request_id: str, chance: ChanceRequest) -> ChanceResolved:
        return await self.client.resolve(game_id, request_id, chance)

    async def head(self, game_id: str) -> DiceHeadRef:
        return head_ref_of(await self.client.head(game_id))

    async def reveal(self, game_id: str) -> None:
        await self.client.reveal(game_id)


class LocalChance:
    """In-process randomness for unit tests of the engine core; not auditable. The same
    request id gets the same answer, as with the dice service. It keeps no signed log, so
    it has no head to anchor (`anchored` False: its games promise none)."""

    anchored = False

    def __init__(self, rng: RandomSource) -> None:
        self.rng = rng
        self.answers: dict[str, ChanceResolved] = {}
        self.revealed: set[str] = set()
        self.client_seeds: dict[str, tuple[str, ...]] = {}

    async def open_game(
        self, game_id: str, seed_commitments: Sequence[str], reveal_deadline_unix_ms: int
    ) -> Opened:
        return Opened(
            hashlib.sha256(f"local:{game_id}".encode()).hexdigest(), reveal_deadline_unix_ms
        )

    async def fix_seeds(
        self, game_id: str, client_seeds: Sequence[str], missing_seats: Sequence[int]
    ) -> None:
        self.client_seeds[game_id] = tuple(client_seeds)

    async def resolve(self, game_id: str, request_id: str, chance: ChanceRequest) -> ChanceResolved:
        if request_id not in self.answers:
            self.answers[request_id] = resolve_locally(chance, self.rng)
        return self.answers[request_id]

    async def head(self, game_id: str) -> None:
        return None

    async def reveal(self, game_id: str) -> None:
        self.revealed.add(game_id)
