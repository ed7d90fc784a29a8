"""The printed numbers of Las Vegas, read once from the package's data file.

Banknotes get stable ids 0..53 in ascending value order; the rules move ids, never values,
so "every note is somewhere" is a checkable fact rather than a sum that happens to match.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True, slots=True)
class LasVegasData:
    note_values: tuple[int, ...]  # dollars, indexed by note id
    casinos: int
    refill_minimum: int
    rounds: int
    dice_per_player: int
    dice_sides: int
    min_players: int
    max_players: int
    white_dice_total: int
    white_dice_per_player: Mapping[int, int]  # players -> white dice each; absent = no variant


def parse(raw: Mapping[str, Any]) -> LasVegasData:
    """Build the data record from the JSON document, checking its own stated totals."""
    notes = raw["banknotes"]
    values: list[int] = []
    for value, count in sorted(notes["counts_by_value"].items(), key=lambda kv: int(kv[0])):
        values.extend([int(value)] * int(count))
    if len(values) != notes["total_count"] or sum(values) != notes["total_value"]:
        raise ValueError("las_vegas.json: banknote counts disagree with the stated totals")
    white = raw["white_dice"]
    return LasVegasData(
        note_values=tuple(values),
        casinos=int(raw["casinos"]),
        refill_minimum=int(raw["casino_refill_minimum"]),
        rounds=int(raw["rounds"]),
        dice_per_player=int(raw["dice_per_player"]),
        dice_sides=int(raw["dice_sides"]),
        min_players=int(raw["min_players"]),
        max_players=int(raw["max_players"]),
        white_dice_total=int(white["total"]),
        white_dice_per_player=MappingProxyType(
            {int(k): int(v) for k, v in white["per_player"].items()}
        ),
    )


def load() -> LasVegasData:
    text = (
        resources.files(__name__.rpartition(".")[0])
        .joinpath("las_vegas.json")
        .read_text(encoding="utf-8")
    )
    return parse(json.loads(text))


DATA = load()
NOTE_VALUES = DATA.note_values
