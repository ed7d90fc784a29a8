"""The printed numbers of Long Shot, read once from the package's data file `long_shot.json`.

Horses, track, move die faces and the 104-card deck are data; the rules read them only
through `DATA` (looked up on this module each time), so replacing a stand-in is an edit of
the JSON file and nothing else. Cards get stable ids 0..103 in file order; the rules move
ids, and a card's effect is its `CardSpec`, one of a closed set of kinds (`CardKind`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from typing import Any


class CardKind(StrEnum):
    """The closed set of card effects; every card of the deck is one of these."""

    MONEY = "money"  # take `amount` from the bank
    MOVE = "move"  # move any running horse `steps` (negative: back)
    HORSE = "horse"  # move horse `horse` `steps`
    STEAL = "steal"  # from another player: a random card (`amount` 0) or `amount` dollars
    LUCKY_NUMBA = "lucky_numba"  # when the horse die shows `number` this turn: take `amount`
    BET = "bet"  # bet `amount` (paid by the bank when `free`), inside No Bets when `anywhere`
    WINNERS_CIRCLE = "winners_circle"  # about the lead; void once any horse has finished


class FeatureKind(StrEnum):
    """The closed set of horse features, used at the start of the owner's turn."""

    MONEY = "money"  # take `amount` from the bank
    LEAD_MONEY = "lead_money"  # take `amount` while the horse is in the lead


@dataclass(frozen=True, slots=True)
class CardSpec:
    key: str
    kind: CardKind
    title: str
    amount: int = 0
    steps: int = 0
    horse: int = 0  # HORSE cards: the horse that moves
    number: int = 0  # LUCKY_NUMBA cards: the horse die value that enables the card
    free: bool = False
    anywhere: bool = False


@dataclass(frozen=True, slots=True)
class Feature:
    kind: FeatureKind
    amount: int


@dataclass(frozen=True, slots=True)
class HorseSpec:
    number: int
    name: str
    price: int
    move_bar: tuple[int, ...]
    win: int
    place: int
    show: int
    feature: Feature | None

    def odds(self, place: int) -> int:
        """The payout multiple of a bet on this horse finishing `place` (1, 2 or 3)."""
        return (self.win, self.place, self.show)[place - 1]


@dataclass(frozen=True, slots=True)
class LongShotData:
    min_players: int
    max_players: int
    start_money: int
    start_cards: int
    start_rerolls: int
    horse_die_sides: int
    move_faces: tuple[int, ...]  # the move die: face shown for a roll of 1..len
    purses: tuple[int, ...]  # 1st, 2nd, 3rd; the race ends when len(purses) horses finished
    bet_amount: int
    discard_cards: int
    discard_reward: int
    track_length: int  # a horse reaching this space has finished
    no_bets_from: int  # spaces no_bets_from..track_length-1 are the No Bets area
    horses: tuple[HorseSpec, ...]  # horse n is horses[n - 1]
    card_types: tuple[CardSpec, ...]
    cards: tuple[int, ...]  # card id -> index into card_types

    def horse(self, number: int) -> HorseSpec:
        return self.horses[number - 1]

    def card(self, card_id: int) -> CardSpec:
        return self.card_types[self.cards[card_id]]


def _int(raw: Mapping[str, Any], key: str, default: int = 0) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"long_shot.json: {key} must be an integer, not {value!r}")
    return value


def _horse(raw: Mapping[str, Any]) -> HorseSpec:
    feature = raw.get("feature")
    odds = raw["odds"]
    return HorseSpec(
        number=_int(raw, "number"),
        name=str(raw["name"]),
        price=_int(raw, "price"),
        move_bar=tuple(int(n) for n in raw["move_bar"]),
        win=_int(odds, "win"),
        place=_int(odds, "place"),
        show=_int(odds, "show"),
        feature=(
            None
            if feature is None
            else Feature(FeatureKind(feature["kind"]), _int(feature, "amount"))
        ),
    )


def _card(raw: Mapping[str, Any]) -> CardSpec:
    return CardSpec(
        key=str(raw["id"]),
        kind=CardKind(raw["kind"]),
        title=str(raw["title"]),
        amount=_int(raw, "amount"),
        steps=_int(raw, "steps"),
        horse=_int(raw, "horse"),
        number=_int(raw, "number"),
        free=bool(raw.get("free", False)),
        anywhere=bool(raw.get("anywhere", False)),
    )


def parse(raw: Mapping[str, Any]) -> LongShotData:
    """Build the data record from the JSON document, checking what the rules rely on."""
    horses = tuple(_horse(h) for h in raw["horses"])
    if [h.number for h in horses] != list(range(1, len(horses) + 1)):
        raise ValueError("long_shot.json: horses must be numbered 1..n in order")
    sides = _int(raw, "horse_die_sides")
    if sides != len(horses):
        raise ValueError("long_shot.json: the horse die needs one face per horse")
    types = tuple(_card(c) for c in raw["cards"])
    cards: list[int] = []
    for index, card in enumerate(raw["cards"]):
        cards.extend([index] * _int(card, "count"))
    if len(cards) != _int(raw, "cards_total"):
        raise ValueError("long_shot.json: card counts disagree with cards_total")
    for spec in types:
        if spec.kind is CardKind.HORSE and not 1 <= spec.horse <= len(horses):
            raise ValueError(f"long_shot.json: card {spec.key} names no horse")
        if spec.kind is CardKind.LUCKY_NUMBA and not 1 <= spec.number <= sides:
            raise ValueError(f"long_shot.json: card {spec.key} names no horse die value")
    track = raw["track"]
    data = LongShotData(
        min_players=_int(raw, "min_players"),
        max_players=_int(raw, "max_players"),
        start_money=_int(raw, "start_money"),
        start_cards=_int(raw, "start_cards"),
        start_rerolls=_int(raw, "start_reroll_tokens"),
        horse_die_sides=sides,
        move_faces=tuple(int(f) for f in raw["move_die"]["faces"]),
        purses=tuple(int(p) for p in raw["purses"]),
        bet_amount=_int(raw, "bet_amount"),
        discard_cards=_int(raw["discard"], "cards"),
        discard_reward=_int(raw["discard"], "reward"),
        track_length=_int(track, "length"),
        no_bets_from=_int(track, "no_bets_from"),
        horses=horses,
        card_types=types,
        cards=tuple(cards),
    )
    if not 0 < data.no_bets_from <= data.track_length or len(data.purses) >= len(horses):
        raise ValueError("long_shot.json: bad track or purses")
    return data


def load_raw() -> dict[str, Any]:
    """The package's data file as a JSON document (tests edit a copy of it)."""
    text = (
        resources.files(__name__.rpartition(".")[0])
        .joinpath("long_shot.json")
        .read_text(encoding="utf-8")
    )
    raw: dict[str, Any] = json.loads(text)
    return raw


DATA = parse(load_raw())
