"""The engine core over the in-memory event store (the same contract as JetStream's) and
in-process chance: whole games, idempotency, snapshots, permissions, bad input."""

from __future__ import annotations

import random
from typing import Any

import pytest

from boulevard.eventlog.store import InMemoryEventStore
from boulevard.games import REGISTRY
from boulevard.games.base import RulesError
from boulevard.games.las_vegas.types import PlaceDice
from boulevard.platform.auth import verify_token
from boulevard.platform.errors import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
)
from services.engine.chance import LocalChance
from services.engine.engine import Engine, MemoryKeyValue, SeatRequest
from services.engine.sessions import Session

KEY = b"test-key" * 4


def make_engine(store: InMemoryEventStore | None = None, snapshot_every: int = 50) -> Engine:
    return Engine(
        store or InMemoryEventStore(),
        LocalChance(random.Random(7)),
        MemoryKeyValue(),
        KEY,
        snapshot_every=snapshot_every,
    )


def seats(n: int) -> list[SeatRequest]:
    # No seed commitments: the game's dice need no reveal (tests/unit/engine/test_opening.py
    # covers the commit–commit–reveal opening).
    return [SeatRequest(i, f"player-{i}") for i in range(n)]


async def play_to_end(engine: Engine, game_id: str, tokens: tuple[str, ...], seed: int) -> Session:
    rng = random.Random(seed)
    session = await engine.load(game_id)
    for _ in range(20_000):
        if session.finished is not None:
            return session
        for seat, token in enumerate(tokens):
            legal = session.game.legal_commands(session.state, seat)
            if legal:
                bot = session.game.bots["random"]
                command = bot(session.game.view(session.state, seat), legal, seat, rng)
                await engine.submit(game_id, verify_token(KEY, token), command, 0, "")
                break
        session = await engine.load(game_id)
    raise AssertionError("game did not finish")


@pytest.mark.parametrize("game_name", sorted(REGISTRY))
@pytest.mark.parametrize("players", [2, 4])
async def test_a_whole_game_and_its_rebuild(game_name: str, players: int) -> None:
    game = REGISTRY[game_name]
    players = min(max(players, game.min_players), game.max_players)  # e.g. 3-8 for Long Shot
    store = InMemoryEventStore()
    engine = make_engine(store, snapshot_every=25)
    created = await engine.create_game(f"req-{game_name}-{players}", game_name, seats(players))
    session = await play_to_end(engine, created.game_id, created.tokens, seed=players)
    assert session.finished is not None
    assert session.game.name == game_name
    assert session.finished.player_ids == tuple(f"player-{i}" for i in range(players))
    # A fresh engine rebuilds the same game from the log, with and without snapshots.
    for fresh in (make_engine(store, snapshot_every=10**9), engine):
        fresh._sessions.clear()
        rebuilt = await fresh.load(created.game_id)
        assert rebuilt.snapshot() == session.snapshot()


async def test_create_is_idempotent_and_validates() -> None:
    engine = make_engine()
    one = await engine.create_game("match-1", "las_vegas", seats(3))
    two = await engine.create_game("match-1", "las_vegas", seats(3))
    assert one == two
    assert one.game_id == "match-1"
    with pytest.raises(InvalidArgument):
        await engine.create_game("x", "chess", seats(2))
    with pytest.raises(InvalidArgument):
        await engine.create_game("y", "las_vegas", seats(9))
    with pytest.raises(InvalidArgument):
        await engine.create_game("z", "las_vegas", [SeatRequest(0, "a"), SeatRequest(0, "b")])
    with pytest.raises(InvalidArgument):
        await engine.create_game("", "las_vegas", seats(2))


def first_legal(session: Session) -> tuple[int, Any]:
    for seat in range(len(session.created.seats)):
        legal = session.game.legal_commands(session.state, seat)
        if legal:
            return seat, legal[0]
    raise AssertionError("nobody can act")


async def test_a_retried_command_returns_the_first_result() -> None:
    engine = make_engine()
    created = await engine.create_game("m", "las_vegas", seats(2))
    session = await engine.load("m")
    seat, command = first_legal(session)
    claims = verify_token(KEY, created.tokens[seat])
    first = await engine.submit("m", claims, command, session.version, "click-1")
    again = await engine.submit("m", claims, command, session.version - 5, "click-1")
    assert again == first
    # Also for a fresh engine on the same log (after a restart).
    engine2 = Engine(engine.store, engine.chance, MemoryKeyValue(), KEY)
    assert await engine2.submit("m", claims, command, 1, "click-1") == first


async def test_acting_for_another_seat_or_game_is_denied() -> None:
    engine = make_engine()
    created = await engine.create_game("m", "las_vegas", seats(2))
    session = await engine.load("m")
    seat, command = first_legal(session)
    other = verify_token(KEY, created.tokens[1 - seat])
    with pytest.raises(PermissionDenied):
        await engine.submit("m", other, command, 0, "k")
    other_game = await engine.create_game("n", "las_vegas", seats(2))
    with pytest.raises(PermissionDenied):
        await engine.submit("m", verify_token(KEY, other_game.tokens[seat]), command, 0, "k")
    assert (await engine.load("m")).version == session.version


async def test_wrong_version_illegal_and_unknown_game() -> None:
    engine = make_engine()
    created = await engine.create_game("m", "las_vegas", seats(2))
    session = await engine.load("m")
    seat, command = first_legal(session)
    claims = verify_token(KEY, created.tokens[seat])
    with pytest.raises(Aborted):
        await engine.submit("m", claims, command, session.version + 3, "k1")
    with pytest.raises(NotFound):
        await engine.load("nope")
    with pytest.raises(RulesError):
        await engine.submit("m", claims, PlaceDice(seat=seat, number=7), 0, "k2")
    assert (await engine.load("m")).version == session.version


async def test_a_finished_game_refuses_actions_and_reveals() -> None:
    engine = make_engine()
    created = await engine.create_game("fin", "las_vegas", seats(2))
    session = await play_to_end(engine, "fin", created.tokens, seed=3)
    assert "fin" in engine.chance.revealed  # type: ignore[attr-defined]
    with pytest.raises(FailedPrecondition):
        await engine.submit("fin", verify_token(KEY, created.tokens[0]), object(), 0, "late")
    assert session.finished is not None
