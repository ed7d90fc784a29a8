"""Watching a finished game from past its end ends the stream at once.

WatchGame skipped every event below `from_version` before it looked for the game's end, so
a finished game watched from beyond its last version streamed nothing and never ended: the
call held the game's feed (a NATS consumer and the whole log in the engine's memory) for as
long as the caller liked. A stranger needs no token for that, and ListGames names every
finished game: one such call per game, left open, was memory the engine never got back."""

from __future__ import annotations

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.seats.player import play_game
from tests.e2e.conftest import Platform
from tests.e2e.test_games import create
from tests.support.keys import seat_keys

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("past", [1, 1000, 2**63])
async def test_a_finished_game_watched_from_past_its_end_ends_the_stream(
    platform: Platform, past: int
) -> None:
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        if not FINISHED:
            created = await create(stub, "las_vegas", 2)
            await play_game(
                channel,
                created.game_id,
                "las_vegas",
                list(created.player_tokens),
                seat_keys(2),
                seed=3,
            )
            FINISHED.append(created.game_id)
        game_id = FINISHED[0]
        final = await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id), timeout=10)
        assert final.status == engine_pb2.GAME_STATUS_FINISHED
        for bursts in (False, True):
            request = engine_pb2.WatchGameRequest(
                game_id=game_id, from_version=final.version + past, bursts=bursts
            )
            # Nothing comes after the end: the stream closes OK, well inside its deadline.
            updates = [u async for u in stub.WatchGame(request, timeout=10)]
            assert updates == []
        # From its last version it shows that version (the end) and closes, as before.
        request = engine_pb2.WatchGameRequest(game_id=game_id, from_version=final.version)
        updates = [u async for u in stub.WatchGame(request, timeout=10)]
        assert [u.event.version for u in updates] == [final.version]
        assert updates[0].event.type == "GameFinished"


FINISHED: list[str] = []  # one game for every case
