"""Forgeries an operator could try against `audit game` that the first tests do not cover:
each builds the forged log (or dice records, or ledger postings) in memory from an honest
game and checks that the audit fails at the version where the forgery shows."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from boulevard.audit.game_log import DiceRecord, audit_game_log
from tests.unit.audit.test_game_log import (
    CODEC,
    envelopes,
    fails_at,
    game_id_of,
    honest_game,
    rechain,
)


def numbered(log: list[bytes]) -> tuple[list[bytes], dict[int, DiceRecord]]:
    """The honest log as the dice service would have numbered it (nonces 0, 1, 2, … in log
    order; the engine core's in-process dice say -1) and the dice records that go with it."""
    envs = envelopes(log)
    dice: dict[int, DiceRecord] = {}
    for e in envs:
        if e.type == "ChanceResolved":
            event = CODEC.loads(e.payload)
            nonce = len(dice)
            e.payload = CODEC.dumps(dataclasses.replace(event, nonce=nonce))
            dice[nonce] = DiceRecord(nonce, event.kind.value, event.values)
    return rechain(envs), dice


@pytest.fixture(scope="module")
def lv_numbered() -> tuple[list[bytes], dict[int, DiceRecord]]:
    log, _, _ = asyncio.run(honest_game("las_vegas", 3, seed=11))
    return numbered(log)


def chance_versions(log: list[bytes]) -> list[int]:
    return [e.version for e in envelopes(log) if e.type == "ChanceResolved"]


def test_the_numbered_honest_game_passes_with_its_dice(lv_numbered: Any) -> None:
    log, dice = lv_numbered
    report = audit_game_log(game_id_of(log), log, dice=dice)
    assert report.finished and report.chance == len(dice) > 3


def test_a_burned_outcome_fails_where_the_game_skips_it(lv_numbered: Any) -> None:
    """The operator drew nonce k, did not like it, drew again (nonce k + 1) and used that:
    every nonce the log cites is recorded, used once and increasing — but nonce k was
    drawn and never used. The dice audit calls it outcome_unused; the game audit, which
    `audit all` relies on, must too."""
    log, dice = lv_numbered
    k = 2
    at = chance_versions(log)[k]
    envs = envelopes(log)
    for e in envs:
        if e.type == "ChanceResolved":
            event = CODEC.loads(e.payload)
            if event.nonce >= k:
                e.payload = CODEC.dumps(dataclasses.replace(event, nonce=event.nonce + 1))
    burned = DiceRecord(k, dice[k].kind, dice[k].values[::-1])
    forged = {n if n < k else n + 1: dataclasses.replace(r, nonce=n if n < k else n + 1)
              for n, r in dice.items()}  # fmt: skip
    forged[k] = burned
    fails_at(rechain(envs), at, f"nonce {k} was drawn", dice=forged)


def test_an_outcome_drawn_after_the_last_one_used_fails_at_the_end(lv_numbered: Any) -> None:
    """A re-roll of the game's last chance: the log is honest, the dice service holds one
    more outcome than the game used."""
    log, dice = lv_numbered
    n = len(dice)
    last = dice[n - 1]
    extra = {**dice, n: DiceRecord(n, last.kind, last.values)}
    fails_at(log, len(log), f"nonce {n} was drawn", dice=extra)
