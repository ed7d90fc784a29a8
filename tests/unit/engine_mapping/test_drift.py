"""The protos and the games' dataclasses must agree field for field, so that adding a field
to one side only fails here rather than in production."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from boulevard.api.v1 import engine_pb2
from boulevard.contract.mapping import (
    ProtoMappingError,
    action_to_command,
    check_mapping,
    command_to_action,
    game_prefix,
    message_name,
    snake_case,
    view_to_proto,
)
from boulevard.games import REGISTRY
from boulevard.games.base import GameDefinition, RulesError
from boulevard.games.las_vegas import GAME as LAS_VEGAS
from boulevard.games.lords_of_vegas import GAME as LORDS_OF_VEGAS
from boulevard.games.lords_of_vegas.types import AssignReorganizedDice as _ASSIGN
from boulevard.games.lords_of_vegas.types import Colour

AnyGame = GameDefinition[Any, Any, Any, Any]
GAMES = [pytest.param(game, id=name) for name, game in sorted(REGISTRY.items())]


@pytest.mark.parametrize("game", GAMES)
def test_every_command_has_its_message_and_oneof_field(game: AnyGame) -> None:
    action = engine_pb2.Action.DESCRIPTOR.fields_by_name[game.name].message_type
    assert action.name == f"{game_prefix(game)}Action"
    messages = action.file.message_types_by_name
    commands = action.oneofs_by_name["command"]
    for cls in game.command_types:
        assert message_name(game, cls) in messages, cls
        field = action.fields_by_name[snake_case(cls.__name__)]
        assert field.containing_oneof is commands
        assert field.message_type is messages[message_name(game, cls)]
    assert len(commands.fields) == len(game.command_types)


@pytest.mark.parametrize("game", GAMES)
def test_every_game_is_in_the_engine_oneofs(game: AnyGame) -> None:
    for container in (engine_pb2.Action, engine_pb2.GameView):
        field = container.DESCRIPTOR.fields_by_name[game.name]
        assert field.containing_oneof is container.DESCRIPTOR.oneofs_by_name["game"]
    view = engine_pb2.GameView.DESCRIPTOR.fields_by_name[game.name].message_type
    assert view.name == f"{game_prefix(game)}View"


def test_no_engine_oneof_field_lacks_a_game() -> None:
    for container in (engine_pb2.Action, engine_pb2.GameView):
        names = {f.name for f in container.DESCRIPTOR.oneofs_by_name["game"].fields}
        assert names == set(REGISTRY)


@pytest.mark.parametrize("game", GAMES)
def test_protos_and_dataclasses_agree_field_for_field(game: AnyGame) -> None:
    assert check_mapping(game) == []


# --- the check itself catches drift ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlaceDice:  # LasVegasPlaceDice with one field too many
    seat: int
    number: int
    all_in: bool = False


@dataclass(frozen=True, slots=True)
class BuildCasino:  # LordsOfVegasBuildCasino with `die_from` missing and `colour` optional
    seat: int
    lot: str
    colour: Colour | None


@dataclass(frozen=True, slots=True)
class RollAgain:  # a command with no proto at all
    seat: int


def test_a_field_on_the_dataclass_only_is_reported() -> None:
    game = dataclasses.replace(LAS_VEGAS, command_types=(PlaceDice,))
    assert check_mapping(game) == ["PlaceDice.all_in has no field in LasVegasPlaceDice"]


def test_a_field_on_the_proto_only_and_a_wrong_optional_are_reported() -> None:
    commands = tuple(c for c in LORDS_OF_VEGAS.command_types if c.__name__ != "BuildCasino")
    game = dataclasses.replace(LORDS_OF_VEGAS, command_types=(*commands, BuildCasino))
    problems = check_mapping(game)
    assert "LordsOfVegasBuildCasino.die_from has no field in BuildCasino" in problems
    assert any("LordsOfVegasBuildCasino.colour must be `optional`" in p for p in problems)


def test_a_command_without_a_message_is_a_mapping_error() -> None:
    game = dataclasses.replace(LAS_VEGAS, command_types=(*LAS_VEGAS.command_types, RollAgain))
    with pytest.raises(ProtoMappingError, match="RollAgain"):
        check_mapping(game)
    with pytest.raises(ProtoMappingError, match="RollAgain"):
        command_to_action(LAS_VEGAS, RollAgain(0))


def test_a_game_without_protos_is_a_clear_error() -> None:
    game = dataclasses.replace(LAS_VEGAS, name="roulette", title="Roulette")
    with pytest.raises(ProtoMappingError, match=r"roulette.*has no proto mapping"):
        action_to_command(game, engine_pb2.Action())
    with pytest.raises(ProtoMappingError, match="has no proto mapping"):
        view_to_proto(game, object())


def test_a_view_of_the_wrong_type_is_a_mapping_error() -> None:
    with pytest.raises(ProtoMappingError, match="not the view type"):
        view_to_proto(LAS_VEGAS, PlaceDice(0, 1))


@dataclass(frozen=True)
class AssignReorganizedDice:  # placements as a mapping: the same wire shape, entries by key
    seat: int
    placements: Mapping[str, int]


def test_a_mapping_is_a_repeated_entry_message_sorted_by_key() -> None:
    commands = tuple(c for c in LORDS_OF_VEGAS.command_types if c is not _ASSIGN)
    game = dataclasses.replace(LORDS_OF_VEGAS, command_types=(*commands, AssignReorganizedDice))
    assert check_mapping(game) == []
    command = AssignReorganizedDice(1, {"C1": 4, "A2": 6})
    action = command_to_action(game, command)
    placements = action.lords_of_vegas.assign_reorganized_dice.placements
    assert [(p.lot, p.value) for p in placements] == [("A2", 6), ("C1", 4)]
    assert action_to_command(game, action) == command
    duplicate = placements.add()
    duplicate.lot, duplicate.value = "A2", 1
    with pytest.raises(RulesError, match="repeats a key"):
        action_to_command(game, action)
