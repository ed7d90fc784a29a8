"""Plays the bot seats of formed matches through the engine's public API.

Consumes `MatchFormed` (durable consumer, so a restart resumes), and for every seat marked
`bot` plays the game's heuristic bot with a token issued for that seat, exactly like a
client app would. A game the runner cannot reach yet (the engine has not created it) is
retried until it appears.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from pathlib import Path

import grpc
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.audit.signing import SigningKey
from boulevard.client.bots import SeatPlayer, bot_client_seed
from boulevard.games import REGISTRY
from boulevard.platform import tls
from boulevard.platform.auth import PlayerClaims, issue_token

log = structlog.get_logger(__name__)


class BotRunner:
    def __init__(
        self,
        nc: NATS,
        engine_address: str,
        token_key: bytes,
        subject: str,
        stream: str,
        bot_key: SigningKey,
        durable: str = "bot-runner",
        bot_name: str = "heuristic",
        tls_ca_file: Path | None = None,
    ) -> None:
        self.nc = nc
        self.engine_address = engine_address
        self.token_key = token_key
        self.subject = subject
        self.stream = stream
        self.durable = durable
        self.bot_name = bot_name
        self.tls_ca_file = tls_ca_file  # the engine serves TLS: verify it with this CA
        # The operator's bot key: the matchmaker binds its public half to every bot seat,
        # so an auditor sees which seats the operator played.
        self.bot_key = bot_key
        self._channel: grpc.aio.Channel | None = None
        self._sub: Subscription | None = None
        self._games: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._channel = tls.channel(self.engine_address, self.tls_ca_file)
        self._sub = await self.nc.jetstream().subscribe(
            self.subject,
            stream=self.stream,
            durable=self.durable,
            queue=self.durable,
            cb=self._on_match,
            manual_ack=True,
            config=ConsumerConfig(
                ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.NEW, ack_wait=30
            ),
        )

    async def _on_match(self, msg: Msg) -> None:
        match = events_pb2.MatchFormed.FromString(msg.data)
        bots = [s for s in match.seats if s.bot]
        if bots and match.game in REGISTRY:
            task = asyncio.create_task(self._play(match, bots))
            self._games.add(task)
            task.add_done_callback(self._games.discard)
        await msg.ack()

    async def _play(self, match: events_pb2.MatchFormed, seats: list[events_pb2.MatchSeat]) -> None:
        assert self._channel is not None
        stub = engine_pb2_grpc.EngineServiceStub(self._channel)
        game = REGISTRY[match.game]
        game_id = match.match_id  # the engine names a match's game after the match
        players = [
            SeatPlayer(
                stub,
                game_id,
                game.name,
                s.seat,
                issue_token(self.token_key, PlayerClaims(game_id, s.seat, s.player_id)),
                game.bots[self.bot_name],
                random.Random(f"{game_id}:{s.seat}"),
                self.bot_key,
                # the seed the matchmaker committed to for this bot seat
                client_seed=bot_client_seed(self.token_key, game_id, s.seat),
            )
            for s in seats
        ]
        for attempt in range(600):  # wait for the engine to create the game (≤ 60 s)
            try:
                await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id))
                break
            except grpc.aio.AioRpcError as err:
                if err.code() not in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE):
                    raise
                await asyncio.sleep(0.1 if attempt < 100 else 0.5)
        try:
            await asyncio.gather(*(p.play() for p in players))
            log.info("bots finished", game_id=game_id, seats=[s.seat for s in seats])
        except Exception:
            log.exception("bots stopped playing", game_id=game_id)

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None
        for task in list(self._games):
            task.cancel()
        await asyncio.gather(*self._games, return_exceptions=True)
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
