"""Whatever a client sends, a bad action is a RulesError('malformed') with a message a
developer can act on, never a crash."""

from __future__ import annotations

import pytest

from boulevard.api.v1 import engine_pb2
from boulevard.contract.mapping import action_to_command, command_to_action, proto_to_view
from boulevard.games.base import RulesError
from boulevard.games.las_vegas import GAME as LAS_VEGAS
from boulevard.games.lords_of_vegas import GAME as LORDS_OF_VEGAS
from boulevard.games.lords_of_vegas.types import (
    ActionKind,
    Colour,
    PlayAction,
    ProposeTrade,
    TradeOffer,
)


def _malformed(action: engine_pb2.Action, match: str, game: object = LORDS_OF_VEGAS) -> None:
    with pytest.raises(RulesError, match=match) as raised:
        action_to_command(game, action)  # type: ignore[arg-type]
    assert raised.value.code == "malformed"


def test_an_empty_action_names_no_game() -> None:
    _malformed(engine_pb2.Action(), "names no game")


def test_another_games_action_is_refused() -> None:
    action = engine_pb2.Action()
    action.las_vegas.place_dice.number = 3
    _malformed(action, "this is a Lords of Vegas game, not las_vegas")


def test_a_game_with_no_command_is_refused() -> None:
    action = engine_pb2.Action()
    action.lords_of_vegas.SetInParent()
    _malformed(action, "names no command")


def test_an_unspecified_enum_is_refused() -> None:
    action = engine_pb2.Action()
    action.lords_of_vegas.build_casino.lot = "A2"
    _malformed(action, r"build_casino\.colour is unspecified; expected one of: aqua")


def test_an_unknown_enum_number_is_refused() -> None:
    action = command_to_action(LORDS_OF_VEGAS, ProposeTrade(0, TradeOffer(0, 1)))
    action.lords_of_vegas.propose_trade.offer.action.kind = 99
    action.lords_of_vegas.propose_trade.offer.action.lot = "A2"
    _malformed(action, r"propose_trade\.offer\.action\.kind is an unknown value \(99\)")


def test_a_missing_required_message_is_refused() -> None:
    action = engine_pb2.Action()
    action.lords_of_vegas.propose_trade.seat = 1
    _malformed(action, r"propose_trade\.offer is required")


def test_an_optional_enum_may_be_absent_but_not_unspecified() -> None:
    offer = TradeOffer(0, 1, action=PlayAction(ActionKind.GAMBLE, "A2", amount=5))
    action = command_to_action(LORDS_OF_VEGAS, ProposeTrade(0, offer))
    assert action_to_command(LORDS_OF_VEGAS, action) == ProposeTrade(0, offer)
    action.lords_of_vegas.propose_trade.offer.action.colour = 0  # present, but UNSPECIFIED
    _malformed(action, r"offer\.action\.colour is unspecified")
    action.lords_of_vegas.propose_trade.offer.action.colour = 2
    decoded = action_to_command(LORDS_OF_VEGAS, action)
    assert decoded.offer.action.colour is Colour.BROWN


def test_a_command_of_defaults_is_still_that_command() -> None:
    action = engine_pb2.Action()
    action.las_vegas.place_dice.SetInParent()
    command = action_to_command(LAS_VEGAS, action)
    assert type(command).__name__ == "PlaceDice"
    assert (command.seat, command.number) == (0, 0)  # the rules refuse number 0, not us


def test_a_view_naming_no_game_or_another_game_is_refused() -> None:
    with pytest.raises(RulesError, match="names no game"):
        proto_to_view(LAS_VEGAS, engine_pb2.GameView(rendered="x"))
    view = engine_pb2.GameView()
    view.lords_of_vegas.SetInParent()
    with pytest.raises(RulesError, match="expected a Las Vegas view, not lords_of_vegas"):
        proto_to_view(LAS_VEGAS, view)
