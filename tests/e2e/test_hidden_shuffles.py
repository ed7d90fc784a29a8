"""A spectator cannot read a live game's hidden shuffle back from its hash.

During a game a shuffle's values are redacted (WatchGame, GetGameLog, SubmitAction), but
the log's hash chain is public: GetGameLog serves each envelope's chain hash, and the next
envelope names it as its prev_hash. Everything else in the shuffle's envelope is shown, so
when the permutation is small the hidden order could be found by hashing every candidate:
Vegas Showdown shuffles its premier stacks in parts of 3, 7, 9 and 10 tiles (6 to 3.6
million orders). The engine now stores a random blinding with each shuffle, hidden with
its values, so the hash tells a guesser nothing until the game is over."""

from __future__ import annotations

import asyncio
import itertools
import math

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.audit.signing import chain_hash
from boulevard.games import get_game
from boulevard.games.base import ChanceKind, ChanceResolved
from boulevard.games.vegas_showdown.data import SIZES
from boulevard.games.vegas_showdown.rules import stack_part
from boulevard.games.vegas_showdown.types import SHUFFLE_STACK_PREFIX
from services.engine.sessions import codec_of
from tests.e2e.conftest import Platform
from tests.e2e.test_games import create

pytestmark = pytest.mark.e2e

GAME = get_game("vegas_showdown")
MAX_GUESSES = math.factorial(7)  # the large premier stack's A part; 3! for its B part
# Each premier stack part's shuffle purpose -> how many tiles it orders.
STACK_PARTS = {
    f"{SHUFFLE_STACK_PREFIX}{size}_{back}": len(stack_part(size, back))
    for size in SIZES
    for back in ("A", "B")
}


def with_values(shown: events_pb2.EventEnvelope, values: tuple[int, ...]) -> bytes:
    """The stored bytes the envelope would have if the event's values were `values`: what
    a guesser builds from the redacted envelope (everything but the values is shown)."""
    codec = codec_of(GAME)
    event = codec.loads(shown.payload)
    assert isinstance(event, ChanceResolved)
    guess = events_pb2.EventEnvelope()
    guess.CopyFrom(shown)
    guess.payload = codec.dumps(
        ChanceResolved(event.purpose, event.kind, values, event.nonce, event.sides)
    )
    return guess.SerializeToString()


async def live_log(
    stub: engine_pb2_grpc.EngineServiceStub, game_id: str
) -> list[engine_pb2.LoggedEnvelope]:
    """The game's log as a stranger reads it, once its opening shuffles are recorded."""
    for _ in range(100):
        log = await stub.GetGameLog(engine_pb2.GetGameLogRequest(game_id=game_id), timeout=10)
        assert not log.finished
        if sum(e.redacted for e in log.envelopes) >= 4:
            return list(log.envelopes)
        await asyncio.sleep(0.1)
    raise AssertionError("the game's opening shuffles were never recorded")


async def test_a_spectator_cannot_brute_force_a_small_shuffle_from_the_chain(
    platform: Platform,
) -> None:
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        created = await create(stub, "vegas_showdown", 3)
        logged = await live_log(stub, created.game_id)
    codec = codec_of(GAME)
    shown = {e.version: events_pb2.EventEnvelope.FromString(e.envelope) for e in logged}
    # The guesser's method is exact: a shown chance event rebuilt from its own values hashes
    # to the chain hash the engine serves (so a miss below is the blinding, not the method).
    rolls = [
        e
        for e in logged
        if not e.redacted and shown[e.version].type == "ChanceResolved"
        and codec.loads(shown[e.version].payload).kind is ChanceKind.ROLL
    ]  # fmt: skip
    assert rolls, "the opening rolls for the first player"
    for e in rolls:
        values = codec.loads(shown[e.version].payload).values
        assert chain_hash(with_values(shown[e.version], values)) == e.chain_hash
    # Every redacted shuffle small enough to try: none gives its order away.
    tried = 0
    for e in logged:
        if not e.redacted:
            continue
        event = codec.loads(shown[e.version].payload)
        assert event.kind is ChanceKind.SHUFFLE and event.values == ()
        count = STACK_PARTS.get(event.purpose, 33)  # else the event deck's 33 cards
        if math.factorial(count) > MAX_GUESSES:
            continue
        tried += 1
        for order in itertools.permutations(range(count)):
            guess = with_values(shown[e.version], order)
            assert chain_hash(guess) != e.chain_hash, (
                f"{event.purpose}'s hidden order {order} read back from its chain hash"
            )
    assert tried >= 2, "the large premier stack's two parts"
