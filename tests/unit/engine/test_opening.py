"""The game's opening (docs/fairness.md, "The opening"): seats commit to client seeds, the
server seed is committed, then each seat reveals; no chance before every seat has revealed
or the deadline has passed, and then a missing seat plays with an empty seed."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from boulevard.audit.signing import SigningKey
from boulevard.eventlog.store import InMemoryEventStore
from boulevard.fairness import client_seed_commitment
from boulevard.games.base import ClientSeedRevealed, ClientSeedsFixed
from boulevard.platform.auth import verify_token
from boulevard.platform.errors import FailedPrecondition, InvalidArgument, PermissionDenied
from services.engine.chance import LocalChance
from services.engine.engine import Engine, MemoryKeyValue, SeatRequest

KEY = b"test-key" * 4
SEEDS = ["ann's seed", "bob 🎲"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def make_engine(clock: Clock) -> Engine:
    return Engine(
        InMemoryEventStore(),
        LocalChance(random.Random(7)),
        MemoryKeyValue(),
        KEY,
        clock=clock,
        reveal_seconds=30,
    )


KEYS = [SigningKey(bytes([i + 1]) * 32) for i in range(len(SEEDS))]


def committed_seats() -> list[SeatRequest]:
    return [
        SeatRequest(i, f"p{i}", client_seed_commitment(seed), public_key=KEYS[i].public_hex)
        for i, seed in enumerate(SEEDS)
    ]


def events_of(engine: Engine, game_id: str) -> list[str]:
    session = engine.cached(game_id)
    assert session is not None
    return [e.type for _, e in sorted(session.recent.items())]


async def test_no_chance_before_every_seat_has_revealed() -> None:
    clock = Clock()
    engine = make_engine(clock)
    created = await engine.create_game("m1", "las_vegas", committed_seats(), match_id="m1")
    session = await engine.load("m1")
    assert [s.seed_commitment for s in session.created.seats] == [
        client_seed_commitment(s) for s in SEEDS
    ]
    assert session.created.reveal_deadline_unix_ms == clock.now + 30_000
    assert events_of(engine, "m1")[-1] != "ChanceResolved"
    assert not session.seeds_fixed and "m1" in engine.awaiting_seeds

    first = await engine.reveal_seed("m1", verify_token(KEY, created.tokens[0]), SEEDS[0])
    assert not first.all_revealed
    assert "ChanceResolved" not in events_of(engine, "m1")
    # Revealing again (a retry) changes nothing.
    again = await engine.reveal_seed("m1", verify_token(KEY, created.tokens[0]), SEEDS[0])
    assert again.version == first.version

    last = await engine.reveal_seed("m1", verify_token(KEY, created.tokens[1]), SEEDS[1])
    assert last.all_revealed
    types = events_of(engine, "m1")
    fixed = types.index("ClientSeedsFixed")
    assert types.count("ClientSeedRevealed") == 2
    assert "ChanceResolved" in types[fixed:] and "ChanceResolved" not in types[:fixed]
    session = await engine.load("m1")
    assert session.seeds_fixed and "m1" not in engine.awaiting_seeds
    assert isinstance(engine.chance, LocalChance)
    assert engine.chance.client_seeds["m1"] == tuple(SEEDS)


async def test_a_wrong_or_foreign_reveal_is_refused() -> None:
    engine = make_engine(Clock())
    created = await engine.create_game("m2", "las_vegas", committed_seats(), match_id="m2")
    seat0 = verify_token(KEY, created.tokens[0])
    with pytest.raises(InvalidArgument, match="commitment"):
        await engine.reveal_seed("m2", seat0, SEEDS[1])  # the other seat's seed
    with pytest.raises(InvalidArgument):
        await engine.reveal_seed("m2", seat0, "x" * 257)
    other = await engine.create_game("m3", "las_vegas", committed_seats(), match_id="m3")
    with pytest.raises(PermissionDenied):
        await engine.reveal_seed("m2", verify_token(KEY, other.tokens[0]), SEEDS[0])
    await engine.reveal_seed("m2", seat0, SEEDS[0])
    with pytest.raises(InvalidArgument):
        await engine.reveal_seed("m2", seat0, SEEDS[1])  # a second, different seed
    session = await engine.load("m2")
    assert session.client_seeds == {0: SEEDS[0]} and not session.seeds_fixed


async def test_after_the_deadline_a_missing_seat_plays_with_an_empty_seed() -> None:
    clock = Clock()
    engine = make_engine(clock)
    created = await engine.create_game("m4", "las_vegas", committed_seats(), match_id="m4")
    await engine.reveal_seed("m4", verify_token(KEY, created.tokens[0]), SEEDS[0])
    assert await engine.sweep_reveals() == 0  # not due yet
    assert not (await engine.load("m4")).seeds_fixed

    clock.now += 30_000
    with pytest.raises(FailedPrecondition, match="deadline"):
        await engine.reveal_seed("m4", verify_token(KEY, created.tokens[1]), SEEDS[1])
    # Nobody calls again: the sweeper wakes the game.
    assert await engine.sweep_reveals() == 1
    session = await engine.load("m4")
    assert session.seeds_fixed and "m4" not in engine.awaiting_seeds
    fixed = [e for e in map(session.codec.loads, [v.payload for v in session.recent.values()])]
    marker = next(e for e in fixed if isinstance(e, ClientSeedsFixed))
    assert marker == ClientSeedsFixed((SEEDS[0], ""), (1,))
    assert [e for e in fixed if isinstance(e, ClientSeedRevealed)] == [
        ClientSeedRevealed(0, SEEDS[0])
    ]
    assert "ChanceResolved" in events_of(engine, "m4")
    with pytest.raises(FailedPrecondition):
        await engine.reveal_seed("m4", verify_token(KEY, created.tokens[1]), SEEDS[1])


async def test_create_game_refuses_a_malformed_commitment() -> None:
    engine = make_engine(Clock())
    keys = [k.public_hex for k in KEYS]
    bad = [
        SeatRequest(0, "a", "not-a-hash", public_key=keys[0]),
        SeatRequest(1, "b", public_key=keys[1]),
    ]
    with pytest.raises(InvalidArgument, match="commitment"):
        await engine.create_game("m5", "las_vegas", bad, match_id="m5")
    upper = [
        SeatRequest(0, "a", client_seed_commitment("s").upper(), public_key=keys[0]),
        SeatRequest(1, "b", public_key=keys[1]),
    ]
    with pytest.raises(InvalidArgument):
        await engine.create_game("m6", "las_vegas", upper, match_id="m6")


async def test_the_opening_survives_a_rebuild_from_the_log() -> None:
    clock = Clock()
    engine = make_engine(clock)
    created = await engine.create_game("m7", "las_vegas", committed_seats(), match_id="m7")
    await engine.reveal_seed("m7", verify_token(KEY, created.tokens[0]), SEEDS[0])
    fresh = Engine(engine.store, engine.chance, MemoryKeyValue(), KEY, clock=clock)
    session = await fresh.load("m7")
    assert session.client_seeds == {0: SEEDS[0]} and not session.seeds_fixed
    await fresh.reveal_seed("m7", verify_token(KEY, created.tokens[1]), SEEDS[1])
    assert (await fresh.load("m7")).seeds_fixed


class StrictChance(LocalChance):
    """Refuses to fix a game's client seeds a second time, differently, as the dice service
    does."""

    async def fix_seeds(
        self, game_id: str, client_seeds: Sequence[str], missing_seats: Sequence[int]
    ) -> None:
        fixed = self.client_seeds.get(game_id)
        if fixed is not None and fixed != tuple(client_seeds):
            raise FailedPrecondition(f"game {game_id}'s client seeds are already fixed")
        await super().fix_seeds(game_id, client_seeds, missing_seats)


async def test_a_replica_holding_a_stale_copy_sweeps_the_game_from_the_log() -> None:
    # The game was made on one replica and its seats revealed through its owner, another
    # (docs/operations.md, "Scaling the engine"): at the deadline the maker's sweep must see
    # the seeds fixed in the log, not fix them again from its copy of the opening.
    clock = Clock()
    store, chance = InMemoryEventStore(), StrictChance(random.Random(7))
    maker, owner = (
        Engine(store, chance, MemoryKeyValue(), KEY, clock=clock, reveal_seconds=30)
        for _ in range(2)
    )
    created = await maker.create_game("m9", "las_vegas", committed_seats(), match_id="m9")
    assert "m9" in maker.awaiting_seeds and maker.cached("m9") is not None
    for seat, seed in enumerate(SEEDS):
        await owner.reveal_seed("m9", verify_token(KEY, created.tokens[seat]), seed)
    clock.now += 30_000
    assert await maker.sweep_reveals() == 1
    assert "m9" not in maker.awaiting_seeds
    types = [r.type for r in await store.read("m9")]
    assert types.count("ClientSeedsFixed") == 1
    assert (await maker.load("m9")).client_seeds == dict(enumerate(SEEDS))
