"""The engine core over the in-memory event store (the same contract as JetStream's) and
in-process chance: whole games, idempotency, snapshots, permissions, bad input."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import pytest

from boulevard.audit.signing import SigningKey
from boulevard.contract.mapping import command_to_action
from boulevard.eventlog.store import InMemoryEventStore
from boulevard.games import REGISTRY
from boulevard.games.base import RulesError
from boulevard.games.las_vegas.types import PlaceDice
from boulevard.platform.auth import PlayerClaims, verify_token
from boulevard.platform.errors import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from services.engine.chance import LocalChance
from services.engine.engine import Engine, MemoryKeyValue, SeatRequest, Submitted
from services.engine.sessions import Session

KEY = b"test-key" * 4
# One signing key per seat number, as a client app would hold for its seat.
SEAT_KEYS = [SigningKey(bytes([i + 1]) * 32) for i in range(12)]


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
    return [SeatRequest(i, f"player-{i}", public_key=SEAT_KEYS[i].public_hex) for i in range(n)]


async def submit(
    engine: Engine,
    game_id: str,
    claims: PlayerClaims,
    command: Any,
    expected_version: int,
    key: str,
    signer: SigningKey | None = None,
) -> Submitted:
    """Submit `command` signed as the client would: over the Action's exact bytes."""
    session = await engine.load(game_id)
    try:
        action = command_to_action(session.game, command).SerializeToString(deterministic=True)
    except Exception:
        action = b"not-an-action"
    signer = signer or SEAT_KEYS[claims.seat]
    signature = signer.sign_command(game_id, claims.seat, expected_version, key, action)
    return await engine.submit(game_id, claims, command, expected_version, key, action, signature)


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
                claims = verify_token(KEY, token)
                await submit(engine, game_id, claims, command, 0, uuid.uuid4().hex)
                break
        session = await engine.load(game_id)
    raise AssertionError("game did not finish")


# Each game at its smallest table and at 4 players (or its largest, if smaller).
TABLES = [
    (name, players)
    for name, game in sorted(REGISTRY.items())
    for players in sorted({game.min_players, min(4, game.max_players)})
]


@pytest.mark.parametrize(("game_name", "players"), TABLES)
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
    one = await engine.create_game("match-1", "las_vegas", seats(3), match_id="match-1")
    two = await engine.create_game("match-1", "las_vegas", seats(3), match_id="match-1")
    assert (one.game_id, one.seed_commitment) == (two.game_id, two.seed_commitment)
    assert one.game_id == "match-1"
    with pytest.raises(InvalidArgument):
        await engine.create_game("x", "chess", seats(2))
    with pytest.raises(InvalidArgument):
        await engine.create_game("y", "las_vegas", seats(9))
    with pytest.raises(InvalidArgument):
        await engine.create_game("z", "las_vegas", [SeatRequest(0, "a"), SeatRequest(0, "b")])
    with pytest.raises(InvalidArgument):
        await engine.create_game("", "las_vegas", seats(2))
    with pytest.raises(InvalidArgument, match="one seat"):
        await engine.create_game("w", "las_vegas", [SeatRequest(0, "a"), SeatRequest(1, "a")])


async def test_an_operators_request_id_names_its_own_game_only() -> None:
    engine = make_engine()
    victim = await engine.create_game("m1", "las_vegas", seats(2), match_id="m1")
    # A request id equal to an existing game's id makes a new game, never that one.
    mine = await engine.create_game("m1", "las_vegas", seats(2), creator="olga")
    assert mine.game_id != victim.game_id
    assert not set(mine.tokens) & set(victim.tokens)
    # Scoped by the caller: the same request id from another operator is another game.
    again = await engine.create_game("m1", "las_vegas", seats(2), creator="olga")
    other = await engine.create_game("m1", "las_vegas", seats(2), creator="oscar")
    assert again.game_id == mine.game_id and other.game_id != mine.game_id
    # A retry must ask for the same game.
    with pytest.raises(InvalidArgument, match="different game"):
        await engine.create_game("m1", "las_vegas", seats(3), creator="olga")


async def test_a_seat_owner_renews_their_token_and_no_one_else() -> None:
    engine = make_engine()
    await engine.create_game("m", "las_vegas", seats(2), match_id="m")
    seat, token = await engine.renew_token("m", "player-1")
    claims = verify_token(KEY, token)
    assert (seat, claims.seat, claims.player_id, claims.game_id) == (1, 1, "player-1", "m")
    with pytest.raises(PermissionDenied):
        await engine.renew_token("m", "mallory")


async def test_an_expired_token_cannot_act() -> None:
    engine = Engine(
        InMemoryEventStore(), LocalChance(random.Random(7)), MemoryKeyValue(), KEY,
        token_ttl_seconds=-1,
    )  # fmt: skip
    created = await engine.create_game("m", "las_vegas", seats(2), match_id="m")
    with pytest.raises(Unauthenticated, match="expired"):
        verify_token(KEY, created.tokens[0])


def first_legal(session: Session) -> tuple[int, Any]:
    for seat in range(len(session.created.seats)):
        legal = session.game.legal_commands(session.state, seat)
        if legal:
            return seat, legal[0]
    raise AssertionError("nobody can act")


async def test_a_retried_command_returns_the_first_result() -> None:
    engine = make_engine()
    created = await engine.create_game("m", "las_vegas", seats(2), match_id="m")
    session = await engine.load("m")
    seat, command = first_legal(session)
    claims = verify_token(KEY, created.tokens[seat])
    first = await submit(engine, "m", claims, command, session.version, "click-1")
    again = await submit(engine, "m", claims, command, session.version - 5, "click-1")
    assert again == first
    # Also for a fresh engine on the same log (after a restart).
    engine2 = Engine(engine.store, engine.chance, MemoryKeyValue(), KEY)
    assert await submit(engine2, "m", claims, command, 1, "click-1") == first


async def test_acting_for_another_seat_or_game_is_denied() -> None:
    engine = make_engine()
    created = await engine.create_game("m", "las_vegas", seats(2), match_id="m")
    session = await engine.load("m")
    seat, command = first_legal(session)
    other = verify_token(KEY, created.tokens[1 - seat])
    with pytest.raises(PermissionDenied):
        await submit(engine, "m", other, command, 0, "k")
    other_game = await engine.create_game("n", "las_vegas", seats(2), match_id="n")
    with pytest.raises(PermissionDenied):
        await submit(engine, "m", verify_token(KEY, other_game.tokens[seat]), command, 0, "k")
    assert (await engine.load("m")).version == session.version


async def test_wrong_version_illegal_and_unknown_game() -> None:
    engine = make_engine()
    created = await engine.create_game("m", "las_vegas", seats(2), match_id="m")
    session = await engine.load("m")
    seat, command = first_legal(session)
    claims = verify_token(KEY, created.tokens[seat])
    with pytest.raises(Aborted):
        await submit(engine, "m", claims, command, session.version + 3, "k1")
    with pytest.raises(NotFound):
        await engine.load("nope")
    with pytest.raises(RulesError):
        await submit(engine, "m", claims, PlaceDice(seat=seat, number=7), 0, "k2")
    assert (await engine.load("m")).version == session.version


async def test_a_finished_game_refuses_actions_and_reveals() -> None:
    engine = make_engine()
    created = await engine.create_game("fin", "las_vegas", seats(2), match_id="fin")
    session = await play_to_end(engine, "fin", created.tokens, seed=3)
    assert "fin" in engine.chance.revealed  # type: ignore[attr-defined]
    with pytest.raises(FailedPrecondition):
        await submit(engine, "fin", verify_token(KEY, created.tokens[0]), object(), 0, "late")
    assert session.finished is not None


async def test_a_seat_without_a_key_is_refused_at_creation() -> None:
    engine = make_engine()
    keyless = [SeatRequest(0, "a"), SeatRequest(1, "b", public_key="ab" * 32)]
    with pytest.raises(InvalidArgument, match="public_key"):
        await engine.create_game("nokey", "las_vegas", keyless)
    bad = [SeatRequest(i, f"p{i}", public_key="zz" * 32) for i in range(2)]
    with pytest.raises(InvalidArgument):
        await engine.create_game("badkey", "las_vegas", bad)


async def test_unsigned_or_badly_signed_commands_are_refused() -> None:
    engine = make_engine()
    created = await engine.create_game("m", "las_vegas", seats(2), match_id="m")
    session = await engine.load("m")
    seat, command = first_legal(session)
    claims = verify_token(KEY, created.tokens[seat])
    action = command_to_action(session.game, command).SerializeToString(deterministic=True)
    v = session.version
    with pytest.raises(Unauthenticated):
        await engine.submit("m", claims, command, v, "k", action, b"")
    # Signed by the other seat's key, or by the right key over other bytes: not this move.
    with pytest.raises(PermissionDenied):
        await submit(engine, "m", claims, command, v, "k", signer=SEAT_KEYS[1 - seat])
    good = SEAT_KEYS[seat].sign_command("m", seat, v, "k", action)
    with pytest.raises(PermissionDenied):
        await engine.submit("m", claims, command, v, "k2", action, good)  # another key
    with pytest.raises(PermissionDenied):
        await engine.submit("m", claims, command, 0, "k", action, good)  # another version
    with pytest.raises(InvalidArgument):
        await engine.submit("m", claims, command, v, "", action, good)
    assert (await engine.load("m")).version == v
    result = await engine.submit("m", claims, command, v, "k", action, good)
    # The command is recorded first, in the same append as its events.
    assert result.envelopes[0].type == "CommandAccepted"
    assert result.envelopes[0].causation_id == result.envelopes[1].causation_id == "cmd:k"


async def test_a_forged_snapshot_is_not_used() -> None:
    store = InMemoryEventStore()
    engine = make_engine(store, snapshot_every=5)
    created = await engine.create_game("snap", "las_vegas", seats(2), match_id="snap")
    honest = await play_to_end(engine, "snap", created.tokens, seed=5)
    sealed = await engine.snapshots.get("snap")
    assert sealed is not None
    # Rewrite the snapshot: the state says otherwise, the body is re-signed with another
    # key (a NATS-level attacker does not have the engine's), or the hash is wrong.
    from services.engine.chain import seal_snapshot

    body = json.loads(json.loads(sealed)["body"])
    body["finished"] = None
    forged_other_key = seal_snapshot(SigningKey.generate(), json.dumps(body).encode())
    wrong_hash = dict(body, chain_hash="00" * 32)
    forged_wrong_hash = seal_snapshot(engine.receipt_key, json.dumps(wrong_hash).encode())
    for forged in (forged_other_key, forged_wrong_hash, b"junk"):
        fresh = make_engine(store)
        fresh.receipt_key = engine.receipt_key
        await fresh.snapshots.put("snap", forged)
        rebuilt = await fresh.load("snap")
        assert rebuilt.finished is not None
        assert rebuilt.snapshot() == honest.snapshot()
        assert fresh.forged_snapshots == 1
