"""`boulevard watch <game_id>`: follow a game as a spectator, on the same table the demo
uses (`boulevard.client.table`): the board after each turn, the moves in words, the dice
with their nonces, the ranking at the end. Only public reads (`WatchGame`), no token.
With --tui, the same screen `boulevard play` shows a player (board, moves, dice commitment
and its verification at the end, the ranking), as a spectator.

Exit codes: 0 the game ended (or was already over), 2 cannot watch (unreachable, unknown
game), 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import grpc

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.cli import output
from boulevard.cli.screen import GameScreen
from boulevard.client.dice import DiceReader
from boulevard.client.table import Table
from boulevard.platform import tls
from boulevard.platform.replicas import engine_channel
from boulevard.platform.settings import Settings
from boulevard.seats.watching import WATCH_RETRIES, each_event


class WatchApp(GameScreen):
    """The play screen as a spectator: public reads only, no menu."""

    def __init__(self, game_id: str, *, engine: str, dice: str) -> None:
        super().__init__("", seat=None)
        self.game_id = game_id
        self.addresses = {"engine": engine, "dice": dice}

    async def session(self) -> None:
        async with (
            engine_channel(self.addresses["engine"]) as engines,
            tls.channel(self.addresses["dice"]) as dice_channel,
        ):
            stub = engine_pb2_grpc.EngineServiceStub(engines)
            got = await stub.GetGame(engine_pb2.GetGameRequest(game_id=self.game_id), timeout=10)
            self.begin(got.game, self.game_id, f"game {self.game_id} — spectator")
            self.say("watching")
            request = engine_pb2.WatchGameRequest(game_id=self.game_id)
            async for update in each_event(stub, request, retries=WATCH_RETRIES):
                self.show(update)
                if update.event.type == "GameFinished":
                    break
            if self.finished:
                await self.verify_dice(DiceReader(dice_channel))


async def follow(address: str, game_id: str, speed: float) -> Table:
    async with engine_channel(address) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        got = await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id), timeout=10)
        table = Table(got.game, terminal=sys.stdout.isatty(), speed=speed)
        async for update in each_event(
            stub, engine_pb2.WatchGameRequest(game_id=game_id), retries=WATCH_RETRIES
        ):
            await asyncio.to_thread(table.feed, update)
        return table


def run(args: argparse.Namespace) -> int:
    settings = Settings()
    address = args.engine or f"{settings.grpc_host}:{settings.engine_port}"
    if args.tui:
        from boulevard.cli.play import exit_code, needs_a_terminal

        if not needs_a_terminal("boulevard watch --tui"):
            return 2
        app = WatchApp(
            args.game_id,
            engine=address,
            dice=args.dice or f"{settings.grpc_host}:{settings.dice_port}",
        )
        app.run()
        return exit_code(app)
    try:
        table = asyncio.run(follow(address, args.game_id, args.speed))
    except KeyboardInterrupt:
        return 130
    except grpc.aio.AioRpcError as exc:
        why = f"{exc.code().name}: {exc.details()}{output.hint(exc.code().name)}"
        print(f"cannot watch {args.game_id} at {address}: {why}", file=sys.stderr)
        return 2
    print(f"game over — {table.ranking()}" if table.finished else "the stream ended")
    return 0
