"""Views mapped once per version and shared between readers whose views are equal (issue 17),
never between seats that see different things."""

from __future__ import annotations

import dataclasses
from typing import Any

from boulevard.contract import mapping
from boulevard.games import get_game
from boulevard.games.base import GameConfig, GameCreated, PlayerSeat
from services.engine.server import EngineServicer
from services.engine.sessions import Session


def session_of(game: Any) -> Session:
    created = GameCreated(
        game="lords_of_vegas",
        config=GameConfig(3, ()),
        seats=tuple(PlayerSeat(i, f"p{i}") for i in range(3)),
        seed_commitment="0" * 64,
    )
    session = Session.new("g-shared-views", created)
    session.game = game
    for event in game.new_game(GameConfig(3, ())):
        session.state = game.evolve(session.state, event)
    session.version = 5
    return session


def test_equal_views_share_one_message_and_match_a_fresh_mapping() -> None:
    game = get_game("lords_of_vegas")
    session = session_of(game)
    views = {seat: EngineServicer._view(session, seat) for seat in (None, 0, 1, 2)}
    for seat, view in views.items():
        assert view == mapping.view_to_proto(game, game.view(session.state, seat))
    # Lords of Vegas hides only the deck, from everyone alike: one message for all (and
    # one text board, rendered once).
    shown = {seat: EngineServicer._shown(session, seat) for seat in views}
    assert len({id(s.message) for s in shown.values()}) == 1
    assert len({id(s) for s in shown.values()}) == 1


def test_seats_that_see_different_things_never_share() -> None:
    base = get_game("lords_of_vegas")

    def secret_view(state: Any, seat: int | None) -> Any:
        # A game whose seats each see something of their own (here: a private cash figure).
        view = base.view(state, seat)
        return dataclasses.replace(view, cash=(1000 + (seat if seat is not None else -1),) * 3)

    game = dataclasses.replace(base, view=secret_view)
    session = session_of(game)
    got = {seat: EngineServicer._view(session, seat) for seat in (None, 0, 1, 2)}
    for seat, view in got.items():
        assert view == mapping.view_to_proto(game, secret_view(session.state, seat))
        assert list(view.lords_of_vegas.cash) == [1000 + (seat if seat is not None else -1)] * 3
    assert len({v.SerializeToString() for v in got.values()}) == 4
    # A new version: nothing of the old one is served.
    before = got[0]
    session.version += 1
    session.state = dataclasses.replace(session.state, current=(session.state.current + 1) % 3)
    after = EngineServicer._view(session, 0)
    assert after == mapping.view_to_proto(game, secret_view(session.state, 0))
    assert after.lords_of_vegas.current != before.lords_of_vegas.current
