"""docs/clients.md's issue-27 facts recomputed with the platform's own code: the canonical
bytes of Actions with optional, oneof and packed repeated fields, the format of
GameCreated.config.options, and that unknown or mistyped fields are ignored."""

from __future__ import annotations

from pathlib import Path

from boulevard.api.v1 import engine_pb2
from boulevard.api.v1 import long_shot_pb2 as ls
from boulevard.games.base import GameConfig, GameCreated, PlayerSeat
from boulevard.games.codec import Codec

DOC = (Path(__file__).resolve().parents[3] / "docs" / "clients.md").read_text()


def spaced(data: bytes) -> str:
    return " ".join(f"{b:02x}" for b in data)


def canonical(action: engine_pb2.Action) -> str:
    return spaced(action.SerializeToString(deterministic=True))


def test_optional_oneof_and_packed_examples_are_the_canonical_bytes() -> None:
    on_horse_0 = ls.LongShotPlayCard(card=7, horse=0)
    examples = {
        "6a 06 1a 04 10 07 18 00": engine_pb2.Action(
            long_shot=ls.LongShotAction(play_card=on_horse_0)
        ),
        "6a 04 1a 02 10 07": engine_pb2.Action(
            long_shot=ls.LongShotAction(play_card=ls.LongShotPlayCard(card=7))
        ),
        "6a 02 3a 00": engine_pb2.Action(
            long_shot=ls.LongShotAction(pass_turn=ls.LongShotPassTurn())
        ),
        "6a 08 12 06 08 01 12 02 03 05": engine_pb2.Action(
            long_shot=ls.LongShotAction(move_horses=ls.LongShotMoveHorses(seat=1, horses=[3, 5]))
        ),
    }
    for text, action in examples.items():
        assert f"`{text}`" in DOC, text
        assert canonical(action) == text


def test_game_created_options_are_sorted_name_value_pairs() -> None:
    created = GameCreated(
        game="las_vegas",
        config=GameConfig(2, (("white_dice", "false"),)),
        seats=(PlayerSeat(0, "alice", False),),
        seed_commitment="00",
    )
    assert '"options":[["white_dice","false"]]' in Codec([]).dumps(created).decode()
    assert '`[["white_dice","false"]]`' in DOC


def test_unknown_and_mistyped_fields_read_as_absent() -> None:
    unknown = bytes([0xF8, 0x3E, 0x01])  # field 999, varint 1
    sent = unknown + engine_pb2.GetGameRequest(game_id="g").SerializeToString()
    assert engine_pb2.GetGameRequest.FromString(sent).game_id == "g"
    mistyped = bytes([0x08, 0x05])  # field 1 (game_id, a string) sent as a varint
    read = engine_pb2.GetGameRequest.FromString(mistyped)
    assert read.game_id == ""
    # ...and kept as unknown: re-encoded, it is still there (why a signed Action must not
    # carry any).
    assert read.SerializeToString(deterministic=True) == mistyped
