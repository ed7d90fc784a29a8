"""Matchmaking's bots play each game through the engine replica that owns its game id
(`BOULEVARD_ENGINE_TARGET` listing the replicas, boulevard.contract.routing), as the
gateway and the CLI do, and through the next replica when the owner is down.

The real matchmaking service on a real nats-server; two small gRPC servers on loopback
stand in for engine replicas: they record which game each GetGame asked for and answer that
it is finished, so the bots' work for a match is that one call, and the test sees where it
went."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import events_pb2
from boulevard.contract.routing import ranked
from tests.integration.matchmaking.support import GAME, eventually, mm_settings, running_mm
from tests.support.engine_replica import Replica, running

pytestmark = pytest.mark.integration


@pytest.fixture
async def replicas() -> AsyncIterator[list[Replica]]:
    async with running(Replica(), Replica()) as started:
        yield started


async def form(nc: NATS, match_id: str) -> None:
    """What the matchmaker publishes for a match with a bot seat."""
    match = events_pb2.MatchFormed(
        match_id=match_id,
        game=GAME,
        seats=[
            events_pb2.MatchSeat(seat=0, player_id="alice"),
            events_pb2.MatchSeat(seat=1, player_id="bot-1", bot=True),
        ],
    )
    await nc.jetstream().publish("mm.match_formed", match.SerializeToString())


async def test_the_bots_of_each_game_call_its_owner_and_the_next_when_it_is_down(
    nats_server, nc: NATS, replicas: list[Replica]
) -> None:
    addresses = [r.address for r in replicas]
    owned: dict[str, list[str]] = {a: [] for a in addresses}
    for i in range(40):
        match_id = f"m-{i}"
        if len(owned[ranked(match_id, addresses)[0]]) < 3:
            owned[ranked(match_id, addresses)[0]].append(match_id)
    settings = mm_settings(nats_server.url, engine_target=",".join(addresses))
    async with running_mm(settings):
        for match_id in [*owned[addresses[0]], *owned[addresses[1]]]:
            await form(nc, match_id)
        await eventually(lambda: sum(len(r.asked) for r in replicas) >= 6, within=20)
        for replica in replicas:
            assert sorted(replica.asked) == sorted(owned[replica.address])

        # The first replica stops: its next games go to the other one.
        await replicas[0].stop()
        later = [f"m-late-{i}" for i in range(20)]
        theirs = [m for m in later if ranked(m, addresses)[0] == addresses[0]][:2]
        assert theirs
        for match_id in theirs:
            await form(nc, match_id)
        await eventually(lambda: set(theirs) <= set(replicas[1].asked), within=20)
