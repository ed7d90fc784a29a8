"""WatchGame's settled bursts (issue 28), at the engine's own servicer, with the game's log
fed to the stream one event at a time (the consumer is a stand-in for `follow`, pure
asyncio): a settled stream sends nothing while the engine itself owes the next step (a
roll, the game's end) and then everything held in one message, with the view of a game
that waits for a player; a plain bursts stream, fed alike, sends every event. Both carry
the same events, in order, and the same views where both drew one."""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import pytest

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.eventlog.store import InMemoryEventStore, RecordedEvent
from boulevard.platform.auth import verify_token
from services.engine import server
from services.engine.chance import Finish, FixSeeds, Resolve, owed
from services.engine.server import EngineServicer
from services.engine.sessions import Session
from tests.support.feeds import one_at_a_time
from tests.unit.engine.test_create_game_clock import Index
from tests.unit.engine.test_engine_core import KEY, make_engine, seats, submit

MOVES = 25


class Context:
    def add_done_callback(self, callback: Any) -> None:
        pass


async def played(moves: int) -> tuple[EngineServicer, str, tuple[str, ...], list[RecordedEvent]]:
    """A two-seat Las Vegas game `moves` moves in (or over), its servicer and its log."""
    store = InMemoryEventStore()
    engine = make_engine(store)
    created = await engine.create_game("req-settled", "las_vegas", seats(2))
    rng = random.Random(3)
    for _ in range(moves):
        session = await engine.load(created.game_id)
        if session.finished is not None:
            break
        for seat, token in enumerate(created.tokens):
            legal = session.game.legal_commands(session.state, seat)
            if legal:
                command = legal[rng.randrange(len(legal))]
                await submit(
                    engine, created.game_id, verify_token(KEY, token), command, 0, uuid.uuid4().hex
                )
                break
    servicer = EngineServicer(engine, store, Index(), None)  # type: ignore[arg-type]
    return servicer, created.game_id, created.tokens, await store.read(created.game_id, 1)


async def watched(
    servicer: EngineServicer, game_id: str, token: str, settled: bool, last: int
) -> list[engine_pb2.WatchGameResponse]:
    request = engine_pb2.WatchGameRequest(
        game_id=game_id, player_token=token, bursts=True, settled=settled
    )
    out: list[engine_pb2.WatchGameResponse] = []
    stream = servicer.WatchGame(request, Context())  # type: ignore[arg-type]
    try:
        async for update in stream:
            out.append(update)
            if update.events[-1].version >= last:
                break
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    return out


def acts_next(session: Session) -> bool:
    return isinstance(owed(session, 0), Resolve | FixSeeds | Finish)


@pytest.mark.parametrize("who", ["spectator", "seat0"])
async def test_a_settled_stream_holds_what_the_engine_answers_at_once(
    who: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    servicer, game_id, tokens, log = await played(MOVES)

    monkeypatch.setattr(server, "follow", one_at_a_time(log))
    token = tokens[0] if who == "seat0" else ""
    last = log[-1].version
    # Bounded: a stream that held the last version back would wait for good.
    bursts = await asyncio.wait_for(watched(servicer, game_id, token, False, last), 30)
    settled = await asyncio.wait_for(watched(servicer, game_id, token, True, last), 30)

    def events(updates: list[engine_pb2.WatchGameResponse]) -> list[bytes]:
        return [e.SerializeToString() for u in updates for e in u.events]

    assert events(settled) == events(bursts)
    assert [e.version for u in settled for e in u.events] == list(range(1, last + 1))
    assert [len(u.events) for u in bursts] == [1] * last  # fed one at a time: one each

    # Fold the log: the versions at which the engine itself goes on are exactly those a
    # settled stream holds back; every other version ends a message, with the same view.
    session = Session.new(game_id, servicer.engine.cached(game_id).created)  # type: ignore[union-attr]
    held = set()
    for recorded in log:
        session.apply_envelope(events_pb2.EventEnvelope.FromString(recorded.data))
        if acts_next(session):
            held.add(recorded.version)
    assert held, "the game never rolled after a move"
    assert last not in held  # the engine settles every command before it answers
    ends = [u.events[-1].version for u in settled]
    assert ends == [v for v in range(1, last + 1) if v not in held]
    views = {u.events[-1].version: u for u in bursts}
    for u in settled:
        same = views[u.events[-1].version]
        assert u.view.SerializeToString() == same.view.SerializeToString()
        assert list(u.to_act) == list(same.to_act)
        assert list(u.legal_actions) == list(same.legal_actions)
    assert any(u.legal_actions for u in settled) == (who == "seat0")
