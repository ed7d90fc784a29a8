"""The command pipeline's paths other than the plain one (docs/architecture.md, "One command
pipeline"): a lost race with another replica, and an append the store did not confirm."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

import pytest

from boulevard.api.v1 import events_pb2
from boulevard.contract.mapping import command_to_action
from boulevard.eventlog.errors import ConcurrencyConflict
from boulevard.eventlog.store import InMemoryEventStore, NewEvent
from boulevard.platform.auth import verify_token
from boulevard.platform.errors import Aborted, InvalidArgument, PermissionDenied
from services.engine.chance import LocalChance, Opened
from services.engine.engine import Engine, MemoryKeyValue, OutcomeUnknown
from tests.unit.engine.test_engine_core import KEY, SEAT_KEYS, first_legal, seats, submit


class SlowChance(LocalChance):
    """Opening a game waits a turn of the event loop, as the dice service's answer does:
    enough for two replicas to both find no game and both open it."""

    async def open_game(
        self, game_id: str, seed_commitments: Sequence[str], reveal_deadline_unix_ms: int
    ) -> Opened:
        await asyncio.sleep(0)
        return await super().open_game(game_id, seed_commitments, reveal_deadline_unix_ms)


class UnconfirmedStore(InMemoryEventStore):
    """Fails the next append with a timeout, before storing it or after (then the append
    is in the log although the writer was not told so)."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_next = ""  # "before" or "after"

    async def append(
        self, stream_id: str, events: Sequence[NewEvent], expected_version: int
    ) -> int:
        fail, self.fail_next = self.fail_next, ""
        if fail == "before":
            raise TimeoutError("no answer")
        version = await super().append(stream_id, events, expected_version)
        if fail == "after":
            raise TimeoutError("no answer")
        return version


def engine_on(store: InMemoryEventStore, chance: LocalChance | None = None) -> Engine:
    return Engine(store, chance or LocalChance(random.Random(7)), MemoryKeyValue(), KEY)


async def commands_in(store: InMemoryEventStore, game_id: str) -> list[str]:
    """The causation ids of the game's CommandAccepted envelopes, in log order."""
    envelopes = [events_pb2.EventEnvelope.FromString(r.data) for r in await store.read(game_id)]
    return [e.causation_id for e in envelopes if e.type == "CommandAccepted"]


async def test_two_replicas_creating_one_match_make_one_game() -> None:
    store = InMemoryEventStore()
    chance = SlowChance(random.Random(7))
    one, two = engine_on(store, chance), engine_on(store, chance)
    a, b = await asyncio.gather(
        one.create_game("m", "las_vegas", seats(2), match_id="m"),
        two.create_game("m", "las_vegas", seats(2), match_id="m"),
    )
    assert a.game_id == b.game_id == "m"
    assert a.seed_commitment == b.seed_commitment
    recorded = await store.read("m")
    assert [r.type for r in recorded].count("GameCreated") == 1
    # Both answers hold tokens for the seats of the one game.
    assert [verify_token(KEY, t).seat for t in b.tokens] == [0, 1]
    assert (await one.load("m")).snapshot() == (await two.load("m")).snapshot()


async def test_a_pinned_command_that_loses_a_race_is_aborted_unless_it_was_itself() -> None:
    store = InMemoryEventStore()
    one, two = engine_on(store), engine_on(store)
    created = await one.create_game("m", "las_vegas", seats(2), match_id="m")
    session = await one.load("m")
    await two.load("m")  # the second replica holds the game at this version too
    seat, command = first_legal(session)
    claims = verify_token(KEY, created.tokens[seat])
    version = session.version
    first = await submit(one, "m", claims, command, version, "k1")
    # The same command through the replica that has not seen it: its append conflicts,
    # and the log then shows this very command applied: the first result.
    assert await submit(two, "m", claims, command, version, "k1") == first
    # Another command pinned at a version the game has left, on a replica that is behind:
    # ABORTED (the conflict), and nothing of it in the log.
    stale = engine_on(store)
    await stale.load("m")
    seat2, command2 = first_legal(await one.load("m"))
    claims2 = verify_token(KEY, created.tokens[seat2])
    await submit(one, "m", claims2, command2, first.version, "k2")
    with pytest.raises(ConcurrencyConflict):
        await submit(stale, "m", claims2, command2, first.version, "k3")
    assert await commands_in(store, "m") == ["cmd:k1", "cmd:k2"]


async def test_a_replica_behind_the_caller_reads_the_log_again_and_serves_the_move() -> None:
    # A game's calls went to another replica (its owner, docs/operations.md "Scaling the
    # engine"); this one still holds the copy it cached earlier. A move pinned at the
    # version the caller saw, past that copy, is served from the log read again, not
    # ABORTED (which no retry would cure while the stale copy stayed cached).
    store = InMemoryEventStore()
    owner, behind = engine_on(store), engine_on(store)
    created = await owner.create_game("m", "las_vegas", seats(2), match_id="m")
    await behind.load("m")  # cached at this version
    session = await owner.load("m")
    seat, command = first_legal(session)
    first = await submit(owner, "m", verify_token(KEY, created.tokens[seat]), command,
                         session.version, "k1")  # fmt: skip
    seat2, command2 = first_legal(await owner.load("m"))
    claims2 = verify_token(KEY, created.tokens[seat2])
    moved = await submit(behind, "m", claims2, command2, first.version, "k2")
    assert moved.envelopes[0].type == "CommandAccepted"
    assert await commands_in(store, "m") == ["cmd:k1", "cmd:k2"]
    # A version the log has not reached is still ABORTED, after one read of the log.
    seat3, command3 = first_legal(await owner.load("m"))
    claims3 = verify_token(KEY, created.tokens[seat3])
    with pytest.raises(Aborted, match="reload and decide again"):
        await submit(behind, "m", claims3, command3, moved.version + 5, "k3")
    assert await commands_in(store, "m") == ["cmd:k1", "cmd:k2"]


@pytest.mark.parametrize("when", ["before", "after"])
async def test_an_unconfirmed_append_is_outcome_unknown_and_its_retry_applies_it_once(
    when: str,
) -> None:
    store = UnconfirmedStore()
    engine = engine_on(store)
    created = await engine.create_game("m", "las_vegas", seats(2), match_id="m")
    session = await engine.load("m")
    seat, command = first_legal(session)
    claims = verify_token(KEY, created.tokens[seat])
    store.fail_next = when
    with pytest.raises(OutcomeUnknown, match="retry with the same idempotency_key"):
        await submit(engine, "m", claims, command, 0, "k")
    result = await submit(engine, "m", claims, command, 0, "k")
    assert result.envelopes[0].type == "CommandAccepted"
    assert await commands_in(store, "m") == ["cmd:k"]
    assert await submit(engine, "m", claims, command, 0, "k") == result


async def test_an_action_is_mapped_to_the_games_command_inside_the_pipeline() -> None:
    engine = engine_on(InMemoryEventStore())
    created = await engine.create_game("m", "las_vegas", seats(2), match_id="m")
    session = await engine.load("m")
    seat, command = first_legal(session)
    claims = verify_token(KEY, created.tokens[seat])
    action = command_to_action(session.game, command)
    signed = action.SerializeToString(deterministic=True)
    signature = SEAT_KEYS[seat].sign_command("m", seat, session.version, "k", signed)
    with pytest.raises(InvalidArgument, match="action is required"):
        await engine.submit_action("m", claims, None, session.version, "k", signature)
    # Mapped for the other seat's token: that seat cannot act for this one.
    other = verify_token(KEY, created.tokens[1 - seat])
    with pytest.raises(PermissionDenied, match="cannot act for seat"):
        await engine.submit_action("m", other, action, session.version, "k", signature)
    result = await engine.submit_action("m", claims, action, session.version, "k", signature)
    assert result.envelopes[0].type == "CommandAccepted"
    assert result.receipt is not None and result.receipt.version == result.version
