"""Wiring of the dice service: the DICE stream, the sealed seed vault, the engine's NATS
request/reply API and the public gRPC servicer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

import grpc
import structlog
from nats.aio.client import Client as NATS

from boulevard.api.v1 import dice_pb2, dice_pb2_grpc
from boulevard.messaging.streams import ensure_stream, platform_streams
from services.dice.dealer import Dealer
from services.dice.queries import DiceQueries
from services.dice.rpc import DiceRpc
from services.dice.sealing import SeedSealer
from services.dice.server import DiceServicer
from services.dice.settings import DiceSettings
from services.dice.store import DiceLog, GamesLog, SeedVault

log = structlog.get_logger(__name__)


class DiceApp:
    name = "dice"
    service_names: Sequence[str] = (dice_pb2.DESCRIPTOR.services_by_name["DiceService"].full_name,)

    def __init__(self, settings: DiceSettings) -> None:
        self.settings = settings
        self._sealer = SeedSealer(settings.seed_key())  # fail fast on a bad key
        self._signer = settings.signer()
        self.dealer: Dealer | None = None
        self.queries: DiceQueries | None = None
        self._rpc: DiceRpc | None = None
        self._purging: asyncio.Task[None] | None = None

    async def start(self, nc: NATS) -> None:
        s = self.settings
        js = nc.jetstream()
        await ensure_stream(js, platform_streams(s)["dice"])
        vault = await SeedVault.open(js, s.dice_seeds_bucket, self._sealer, s.stream_replicas)
        dice_log = DiceLog(nc, s.dice_stream, s.dice_subject_prefix)
        games = GamesLog(nc, s.games_stream, s.games_subject_prefix)
        self.dealer = Dealer(
            dice_log,
            vault,
            self._signer,
            games.ended,
            cache_size=s.dice_cache_games,
            heads_apart=s.dice_heads_apart,
        )
        log.info(
            "dice signing key",
            key_id=self._signer.key_id,
            public_key=self._signer.public_key.hex(),
        )
        self.queries = DiceQueries(dice_log, self._signer.public_key)
        self._rpc = DiceRpc(nc, self.dealer, s.dice_rpc_prefix, s.dice_rpc_queue)
        await self._rpc.start()
        self._purging = asyncio.create_task(self.dealer.purge_until_done(), name="dice-purge")

    def register(self, server: grpc.aio.Server) -> None:
        assert self.queries is not None, "start() before register()"
        dice_pb2_grpc.add_DiceServiceServicer_to_server(DiceServicer(self.queries), server)

    async def stop(self) -> None:
        if self._purging is not None:
            self._purging.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._purging
            self._purging = None
        if self._rpc is not None:
            await self._rpc.stop()
            self._rpc = None
