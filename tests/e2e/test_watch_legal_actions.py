"""WatchGame carries the watching seat's legal actions (issue 17: one call per move), and
only to that seat: a spectator, another seat or another game's token never receives them."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.seats.signing import signed_submit
from tests.e2e.conftest import Platform
from tests.e2e.test_games import create
from tests.support.keys import seat_key

pytestmark = pytest.mark.e2e

MOVES = 14


async def collect(
    stub: engine_pb2_grpc.EngineServiceStub, game_id: str, token: str, into: list[Any]
) -> None:
    """Every update with a view: (version, to_act, legal actions)."""
    request = engine_pb2.WatchGameRequest(game_id=game_id, player_token=token)
    async for update in stub.WatchGame(request):
        if update.HasField("view"):
            into.append((update.event.version, list(update.to_act), list(update.legal_actions)))


def test_watch_game_carries_legal_actions_to_their_seat_only(platform: Platform) -> None:
    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "lords_of_vegas", 2)
            other = await create(stub, "lords_of_vegas", 2)
            game_id, tokens = created.game_id, list(created.player_tokens)
            seen: dict[str, list[Any]] = {"spectator": [], "seat0": [], "seat1": []}
            watchers = [
                asyncio.create_task(collect(stub, game_id, "", seen["spectator"])),
                asyncio.create_task(collect(stub, game_id, tokens[0], seen["seat0"])),
                asyncio.create_task(collect(stub, game_id, tokens[1], seen["seat1"])),
            ]
            # The truth: what ListLegalActions answered each seat at each version.
            truth: dict[tuple[int, int], list[engine_pb2.Action]] = {}
            moves = 0
            version = 0
            while moves < MOVES:
                moved = False
                for seat, token in enumerate(tokens):
                    legal = await stub.ListLegalActions(
                        engine_pb2.ListLegalActionsRequest(game_id=game_id, player_token=token)
                    )
                    truth[(legal.version, seat)] = list(legal.actions)
                    if legal.actions and not moved:
                        reply = await stub.SubmitAction(
                            signed_submit(
                                game_id,
                                token,
                                seat,
                                seat_key(seat),
                                legal.actions[0],
                                legal.version,
                            )
                        )
                        version = reply.version
                        moves += 1
                        moved = True
                assert moved, "nobody could move"
            for _ in range(200):  # let the streams reach the last version
                if all(s and s[-1][0] >= version for s in seen.values()):
                    break
                await asyncio.sleep(0.05)
            for task in watchers:
                task.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)

            assert seen["spectator"], "the spectator saw no views"
            assert all(not actions for _, _, actions in seen["spectator"])
            for seat in (0, 1):
                updates = seen[f"seat{seat}"]
                compared = 0
                for at, to_act, actions in updates:
                    if seat not in to_act:
                        assert not actions, f"seat {seat} got actions at {at} off its turn"
                    if (at, seat) in truth:
                        assert actions == truth[(at, seat)]
                        compared += bool(actions)
                assert compared > 0, f"seat {seat}: no update to compare with ListLegalActions"

            # Every stream above has ended, so the game's shared feed was closed: a new
            # stream reads the log afresh, every version once, in order, from the start.
            versions: list[int] = []
            request = engine_pb2.WatchGameRequest(game_id=game_id)
            async for update in stub.WatchGame(request):
                versions.append(update.event.version)
                if update.event.version >= version:
                    break
            assert versions == list(range(1, version + 1))

            # Another game's seat token, a forged token: no stream at all.
            with pytest.raises(grpc.aio.AioRpcError) as err:
                request = engine_pb2.WatchGameRequest(
                    game_id=game_id, player_token=other.player_tokens[0]
                )
                async for _ in stub.WatchGame(request):
                    pass
            assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
            with pytest.raises(grpc.aio.AioRpcError) as err:
                request = engine_pb2.WatchGameRequest(
                    game_id=game_id, player_token=tokens[0][:-4] + "AAAA"
                )
                async for _ in stub.WatchGame(request):
                    pass
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED

    asyncio.run(run())
