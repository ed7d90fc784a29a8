"""WatchGame's options that leave work out (issue 28): `omit_rendered` (no text board) and
`views_on_turn` (a seat's view only when it may act, or at the end), at the engine's own
servicer, every game, each seat and a spectator, with the game's log fed to the stream one
event at a time (the consumer is a stand-in for `follow`, pure asyncio).

By default every update is what the game's own functions say, mapped afresh (the same
bytes as before the options existed); with an option, each update is the default's with
exactly the promised parts left out, never anything else: a seat's view is its own seat's
(an option must not open another seat's hand), and the events are the same."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.contract.mapping import command_to_action, view_to_proto
from boulevard.eventlog.store import InMemoryEventStore, RecordedEvent
from boulevard.games import REGISTRY
from boulevard.platform.auth import verify_token
from services.engine import server
from services.engine.server import EngineServicer
from services.engine.sessions import Session
from tests.support.feeds import one_at_a_time
from tests.unit.engine.test_create_game_clock import Index
from tests.unit.engine.test_engine_core import KEY, make_engine, seats, submit

MOVES = 14
OPTIONS = {
    "omit_rendered": {"omit_rendered": True},
    "views_on_turn": {"views_on_turn": True},
    "both": {"omit_rendered": True, "views_on_turn": True},
}


class Context:
    def add_done_callback(self, callback: Any) -> None:
        pass


async def played(name: str) -> tuple[EngineServicer, str, tuple[str, ...], list[RecordedEvent]]:
    """A game of `name` MOVES random legal moves in, its servicer and its log."""
    game = REGISTRY[name]
    store = InMemoryEventStore()
    engine = make_engine(store)
    created = await engine.create_game(uuid.uuid4().hex, name, seats(min(3, game.max_players)))
    rng = random.Random(5)
    for _ in range(MOVES):
        session = await engine.load(created.game_id)
        if session.finished is not None:
            break
        seat = next(s for s in range(len(created.tokens)) if session.legal(s))
        legal = session.legal(seat)
        claims = verify_token(KEY, created.tokens[seat])
        command = legal[rng.randrange(len(legal))]
        await submit(engine, created.game_id, claims, command, session.version, uuid.uuid4().hex)
    servicer = EngineServicer(engine, store, Index(), None)  # type: ignore[arg-type]
    return servicer, created.game_id, created.tokens, await store.read(created.game_id, 1)


async def watched(
    servicer: EngineServicer, game_id: str, token: str, last: int, **options: bool
) -> list[engine_pb2.WatchGameResponse]:
    request = engine_pb2.WatchGameRequest(
        game_id=game_id, player_token=token, bursts=True, **options
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


def without_text(update: engine_pb2.WatchGameResponse) -> bytes:
    copy = engine_pb2.WatchGameResponse()
    copy.CopyFrom(update)
    copy.view.ClearField("rendered")
    return copy.SerializeToString()


@pytest.mark.parametrize("name", sorted(REGISTRY))
async def test_options_leave_out_only_what_they_say(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    servicer, game_id, tokens, log = await played(name)

    monkeypatch.setattr(server, "follow", one_at_a_time(log))
    last = log[-1].version
    game = REGISTRY[name]
    created = servicer.engine.cached(game_id).created  # type: ignore[union-attr]
    # The game at each version, folded from the log: what each update must show.
    states: dict[int, Session] = {}
    folding = Session.new(game_id, created)
    for recorded in log:
        folding.apply_envelope(events_pb2.EventEnvelope.FromString(recorded.data))
        states[recorded.version] = folding.fork()

    turns = 0
    for who, token in [(None, ""), *enumerate(tokens)]:
        default = await asyncio.wait_for(watched(servicer, game_id, token, last), 30)
        # The default: the game's own view of this seat with its text board, mapped afresh,
        # and the seat's legal actions (none for a spectator), on every update.
        for update in default:
            at = states[update.events[-1].version]
            assert update.view == view_to_proto(game, game.view(at.state, who))
            assert update.view.rendered
            legal = [] if who is None else at.legal(who)
            assert [a.SerializeToString() for a in update.legal_actions] == [
                command_to_action(game, c).SerializeToString() for c in legal
            ]
            assert list(update.to_act) == at.to_act()
        for label, options in OPTIONS.items():
            got = await asyncio.wait_for(watched(servicer, game_id, token, last, **options), 30)
            assert [u.events for u in got] == [u.events for u in default], label
            for mine, full in zip(got, default, strict=True):
                on_turn = bool(full.legal_actions) or mine.events[-1].type == "GameFinished"
                if options.get("views_on_turn") and who is not None and not on_turn:
                    assert not mine.HasField("view"), label
                    full.ClearField("view")  # the one thing left out
                    assert mine.SerializeToString() == full.SerializeToString(), label
                    continue
                turns += who is not None and "views_on_turn" in options
                if options.get("omit_rendered"):
                    assert mine.view.rendered == "", label
                    assert mine.SerializeToString() == without_text(full), label
                else:
                    assert mine.SerializeToString() == full.SerializeToString(), label
    assert turns, "no seat ever had a turn in the updates watched"


async def test_omit_rendered_does_not_render(monkeypatch: pytest.MonkeyPatch) -> None:
    """The text board is not made at all for a stream that leaves it out (the point of
    the option), and is made once per version and seat for the streams that ask."""
    servicer, game_id, tokens, log = await played("las_vegas")

    async def all_at_once(store: Any, stream_id: str) -> AsyncIterator[list[RecordedEvent]]:
        yield log
        await asyncio.Event().wait()

    monkeypatch.setattr(server, "follow", all_at_once)
    rendered: list[Any] = []
    real = server.Shown.text

    def counted(self: server.Shown, game: Any) -> str:
        rendered.append(self)
        return real(self, game)

    monkeypatch.setattr(server.Shown, "text", counted)
    last = log[-1].version
    plain = await watched(servicer, game_id, tokens[0], last, omit_rendered=True)
    assert plain and not rendered
    await watched(servicer, game_id, tokens[0], last)
    assert len(rendered) == 1  # one burst: one view, its text board rendered once


async def test_legal_actions_kept_by_value_are_a_fresh_mapping_and_bounded() -> None:
    """Actions kept across versions (`server.Actions`) are, byte for byte, what mapping the
    command afresh gives, for every seat's legal commands at every version of a game of
    each game; when full, the store forgets everything rather than growing."""
    actions = server.Actions(size=64)
    hits = 0
    for name in sorted(REGISTRY):
        servicer, game_id, tokens, log = await played(name)
        game = REGISTRY[name]
        folding = Session.new(game_id, servicer.engine.cached(game_id).created)  # type: ignore[union-attr]
        for recorded in log:
            folding.apply_envelope(events_pb2.EventEnvelope.FromString(recorded.data))
            for seat in range(len(tokens)):
                for command in folding.legal(seat):
                    before = len(actions._known)
                    kept = actions.action(game, command)
                    hits += len(actions._known) == before
                    fresh = command_to_action(game, command)
                    assert kept.SerializeToString() == fresh.SerializeToString()
                    assert len(actions._known) <= 64
    assert hits, "no command was ever legal twice"


async def test_streams_sent_the_same_update_share_one_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At the live game's version, two spectators (or two streams of one seat, with the
    same options) are sent one message, built once; a stream of another seat, or with
    other options, gets its own, with its own content."""
    servicer, game_id, tokens, log = await played("las_vegas")

    async def one_at_a_time(store: Any, stream_id: str) -> AsyncIterator[list[RecordedEvent]]:
        for recorded in log:
            yield [recorded]
            await asyncio.sleep(0)
        await asyncio.Event().wait()

    monkeypatch.setattr(server, "follow", one_at_a_time)
    last = log[-1].version

    async def final(token: str, **options: bool) -> engine_pb2.WatchGameResponse:
        return (await watched(servicer, game_id, token, last, **options))[-1]

    first, second = await final(""), await final("")
    assert first is second  # the live version: one message for both spectators
    assert (await final(tokens[0])) is (await final(tokens[0]))
    others = [
        await final(tokens[0]),
        await final(tokens[1]),
        await final(""),
        await final("", omit_rendered=True),
    ]
    assert len({id(u) for u in others}) == 4
    assert len({u.SerializeToString() for u in others}) == 4
    # Earlier versions come from each stream's own copy of the game: never shared.
    one, two = (
        await watched(servicer, game_id, "", last),
        await watched(servicer, game_id, "", last),
    )
    assert all(a is not b for a, b in zip(one[:-1], two[:-1], strict=True))
