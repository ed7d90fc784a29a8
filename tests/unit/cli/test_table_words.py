"""The spectator table says every event in words, also for a game with no `describe`."""

from __future__ import annotations

import json

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.client.table import Table


def update(payload: dict[str, object]) -> engine_pb2.WatchGameResponse:
    return engine_pb2.WatchGameResponse(
        event=events_pb2.EventEnvelope(
            type=str(payload["type"]), version=7, payload=json.dumps(payload).encode()
        )
    )


def test_an_event_without_a_describer_is_named_in_words_with_seats_by_name() -> None:
    table = Table("a_game_nobody_registered")
    table.names = ["alice (seat 0)", "bob (seat 1)"]
    said = table.words(
        update({"type": "HorseMoved", "seat": 1, "horse": 5, "spaces": 3, "path": [1, 2]})
    )
    assert said == "horse moved: seat bob (seat 1), horse 5, spaces 3"


def test_unset_fields_are_left_out_and_the_next_seat_is_named() -> None:
    """Long Shot has no describer: its CardPlayed read "card 103, horse None, seat …, target
    None" and TurnEnded "next 0" in `boulevard play`'s moves."""
    table = Table("a_game_nobody_registered")
    table.names = ["alice (seat 0)", "bob (seat 1)"]
    played = table.words(
        update({"type": "CardPlayed", "card": 103, "horse": None, "seat": 1, "target": None})
    )
    assert played == "card played: card 103, seat bob (seat 1)"
    ended = table.words(update({"type": "TurnEnded", "next": 0, "seat": 1}))
    assert ended == "turn ended: next alice (seat 0), seat bob (seat 1)"


def test_a_described_game_speaks_its_own_words() -> None:
    table = Table("las_vegas")
    table.names = ["alice (seat 0)", "bob (seat 1)"]
    said = table.words(update({"type": "DicePlaced", "seat": 0, "casino": 4, "own": 2, "white": 0}))
    assert said == "alice (seat 0) places 2 dice on casino 4"


def test_vegas_showdown_s_seat_fields_are_named() -> None:
    table = Table("a_game_nobody_registered")
    table.names = ["alice (seat 0)", "bob (seat 1)"]
    bid = table.words(
        update({"type": "BidPlaced", "amount": 7, "outbid": 0, "seat": 1, "track": "slots"})
    )
    assert bid == "bid placed: amount 7, outbid alice (seat 0), seat bob (seat 1), track slots"
    ended = table.words(update({"type": "TurnEnded", "button": 1, "turn": 1}))
    assert ended == "turn ended: button bob (seat 1), turn 1"


def test_long_shot_and_vegas_showdown_speak_their_own_words() -> None:
    """Their describers live in describe.py alone (outside the rules hash): the table finds
    them there, as it finds a definition's `describe`."""
    shot = Table("long_shot")
    shot.names = ["alice (seat 0)", "bob (seat 1)"]
    played = shot.words(
        update({"type": "CardPlayed", "card": 103, "horse": 4, "seat": 1, "target": 0})
    )
    assert played == "bob (seat 1) plays card 103 on horse 4 against alice (seat 0)"
    show = Table("vegas_showdown")
    show.names = ["alice (seat 0)", "bob (seat 1)"]
    bid = show.words(
        update({"type": "BidPlaced", "amount": 7, "outbid": 0, "seat": 1, "track": "premier_2"})
    )
    assert bid == "bob (seat 1) bids $7 on premier 2, outbidding alice (seat 0)"
