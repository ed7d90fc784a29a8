"""Vegas Showdown through the public gRPC API, every service a separate process on a real
nats-server: bots play 3-, 4- and 5-player games to the end; afterwards both audits pass
(`boulevard audit dice` and `boulevard audit ledger`), as for the other games."""

from __future__ import annotations

import asyncio
import json

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from tests.e2e.conftest import Platform
from tests.e2e.test_games import create, play_and_check

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


@pytest.mark.parametrize("players", [3, 4, 5])
def test_vegas_showdown_by_bots(platform: Platform, players: int) -> None:
    asyncio.run(play_and_check(platform, "vegas_showdown", players))


def test_the_premier_stacks_and_event_deck_stay_hidden(platform: Platform) -> None:
    """No shuffle's order reaches a player or a spectator while the game runs: not in
    WatchGame events, not in views (which show only how many tiles and cards are left)."""

    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "vegas_showdown", 4)
            for token in ("", created.player_tokens[0]):
                request = engine_pb2.WatchGameRequest(game_id=created.game_id, player_token=token)
                shuffles = 0
                async for update in stub.WatchGame(request):
                    if update.event.type == "ChanceResolved":
                        payload = json.loads(update.event.payload)
                        if payload["kind"] == "shuffle":
                            shuffles += 1
                            assert payload["values"] == []
                    if update.HasField("view") and update.view.vegas_showdown.turn >= 1:
                        view = update.view.vegas_showdown
                        assert view.events_left == 33
                        assert sum(view.premier_left) == 30 - 3
                        break
                assert shuffles >= 4  # the event deck and every premier stack part
            got = await stub.GetGame(
                engine_pb2.GetGameRequest(
                    game_id=created.game_id, player_token=created.player_tokens[1]
                )
            )
            assert got.status == engine_pb2.GAME_STATUS_ACTIVE
            view = got.view.vegas_showdown
            assert len(view.seats) == 4 and view.events_left > 0
            hidden = {"deck", "premier_stacks", "stack_parts"}
            assert not hidden & {f.name for f in view.DESCRIPTOR.fields}

    asyncio.run(run())
