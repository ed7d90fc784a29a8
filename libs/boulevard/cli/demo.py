"""The demo game `boulevard up` plays once the platform is healthy: four heuristic bots play
Lords of Vegas through the public gRPC API while a spectator prints every move."""

from __future__ import annotations

import asyncio
import json
import uuid

import grpc

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.client.bots import new_client_seed, play_game
from boulevard.fairness import client_seed_commitment
from boulevard.games.codec import Codec


def describe(envelope: engine_pb2.WatchGameResponse) -> str:
    event = envelope.event
    payload = json.loads(event.payload)
    payload.pop("transfers", None)
    text = json.dumps(payload, separators=(",", ":"))
    if len(text) > 110:
        text = text[:107] + "..."
    money = ", ".join(f"{t.source}->{t.target} ${t.amount}" for t in event.transfers)
    return f"  v{event.version:<4} {event.type:<18} {text}" + (f"  [{money}]" if money else "")


async def watch(
    stub: engine_pb2_grpc.EngineServiceStub, game_id: str
) -> engine_pb2.WatchGameResponse | None:
    last = None
    async for update in stub.WatchGame(engine_pb2.WatchGameRequest(game_id=game_id)):
        print(describe(update), flush=True)
        last = update
    return last


async def demo(engine_address: str, operator_token: str, game: str, players: int) -> None:
    metadata = (("authorization", f"Bearer {operator_token}"),) if operator_token else ()
    async with grpc.aio.insecure_channel(engine_address) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        # Each seat commits to a seed of its own now and reveals it once the game exists.
        seeds = [new_client_seed() for _ in range(players)]
        created = await stub.CreateGame(
            engine_pb2.CreateGameRequest(
                request_id=f"demo-{uuid.uuid4().hex[:12]}",
                game=game,
                seats=[
                    engine_pb2.SeatAssignment(
                        seat=i,
                        player_id=f"bot-{i}",
                        client_seed_commitment=client_seed_commitment(seeds[i]),
                    )
                    for i in range(players)
                ],
            ),
            metadata=metadata,
        )
        print(
            f"demo: {game} game {created.game_id}, dice commitment {created.seed_commitment[:16]}…"
        )
        watcher = asyncio.create_task(watch(stub, created.game_id))
        seats = await play_game(
            channel, created.game_id, game, list(created.player_tokens), client_seeds=seeds
        )
        last = await watcher
        final = await stub.GetGame(engine_pb2.GetGameRequest(game_id=created.game_id))
        print(final.view.rendered)
        if last is not None and last.event.type == "GameFinished":
            finished = Codec(()).loads(last.event.payload)
            places = " > ".join(
                "=".join(finished.player_ids[s] for s in group) for group in finished.ranking
            )
            print(
                f"demo: finished at version {final.version} after "
                f"{sum(s.moves for s in seats)} moves; ranking {places}; scores {finished.scores}"
            )
        print(
            f"demo: audit it with `boulevard audit dice {created.game_id}` and "
            f"`boulevard audit ledger --game {created.game_id}`"
        )


def play_demo(
    addresses: dict[str, str],
    operator_token: str = "",
    game: str = "lords_of_vegas",
    players: int = 4,
) -> None:
    asyncio.run(demo(addresses["engine"], operator_token, game, players))
