"""Long Shot end to end: bots play a 3- and an 8-player game through the public gRPC API,
every service its own process on a real nats-server; afterwards the dice verify (the deck
shuffle, every horse, move and steal roll) and the ledger reconciles (purses, stakes in
escrow, winnings), both by the services and by the auditor's own CLI."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.conftest import Platform
from tests.e2e.test_games import play_and_check

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("players", [3, 8])
def test_long_shot_by_bots(platform: Platform, players: int) -> None:
    asyncio.run(play_and_check(platform, "long_shot", players))
