"""Plays the bot seats of formed matches through the engine's public API.

Consumes `MatchFormed` (durable consumer, so a restart resumes), and for every seat marked
`bot` plays the game's heuristic bot with a token issued for that seat, exactly like a
client app would. A game the runner cannot reach yet (the engine has not created it) is
retried until it appears.

Bot seats outlive the process playing them. The `MatchFormed` message is the lease: it is
acknowledged only when the game is over, and while the bots play the runner tells JetStream
every `lease/3` seconds that it is still at work (`in_progress`). A runner that dies stops
saying so; after `lease` seconds (the consumer's ack wait) JetStream hands the message to the
next live runner of the queue group (or the same one restarted), which picks the seats up
from the game as it stands. Two runners can never both hold one game: the message is
delivered to one at a time, and a late duplicate move is only a lost race (ABORTED).

Bot seats are the matchmaker's own: the runner holds the token key and issues their seat
tokens itself (again when one expires); no one outside gets them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
from pathlib import Path

import grpc
import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.audit.signing import SigningKey
from boulevard.games import REGISTRY
from boulevard.platform import metrics
from boulevard.platform.auth import DEFAULT_TTL_SECONDS, PlayerClaims, issue_token
from boulevard.platform.replicas import engine_channel
from boulevard.seats.player import SeatPlayer
from services.matchmaking.bot_seats import bot_client_seed

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
        lease_seconds: float = 15.0,
        max_games: int = 10_000,
        token_ttl_seconds: float = DEFAULT_TTL_SECONDS,
        tls_ca_file: Path | None = None,
    ) -> None:
        self.token_ttl_seconds = token_ttl_seconds
        self.nc = nc
        self.engine_address = engine_address
        self.token_key = token_key
        self.subject = subject
        self.stream = stream
        self.durable = durable
        self.bot_name = bot_name
        self.lease_seconds = lease_seconds
        self.max_games = max_games
        self.tls_ca_file = tls_ca_file  # the engine serves TLS: verify it with this CA
        # The operator's bot key: the matchmaker binds its public half to every bot seat,
        # so an auditor sees which seats the operator played.
        self.bot_key = bot_key
        self._channel: grpc.aio.Channel | None = None
        self._sub: Subscription | None = None
        self._games: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        # One engine, or its replicas: each game's calls then go to the game's owner.
        self._channel = engine_channel(self.engine_address, self.tls_ca_file)
        js = self.nc.jetstream()
        config = ConsumerConfig(
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.NEW,
            ack_wait=self.lease_seconds,
            max_ack_pending=self.max_games,  # games played at once by the whole group
        )
        try:
            existing = await js.consumer_info(self.stream, self.durable)
        except NotFoundError:
            existing = None
        if existing is not None and (
            existing.config.ack_wait != self.lease_seconds
            or existing.config.max_ack_pending != self.max_games
        ):
            # A consumer made by an older version (or another lease setting): the lease
            # and the limit are editable in place.
            updated = existing.config
            updated.ack_wait = self.lease_seconds
            updated.max_ack_pending = self.max_games
            await js._jsm.add_consumer(self.stream, config=updated)
        self._sub = await js.subscribe(
            self.subject,
            stream=self.stream,
            durable=self.durable,
            queue=self.durable,
            cb=self._on_match,
            manual_ack=True,
            config=config,
        )

    async def _on_match(self, msg: Msg) -> None:
        try:
            match = events_pb2.MatchFormed.FromString(msg.data)
        except Exception:
            metrics.POISON_MESSAGES.labels("matchmaking", self.durable).inc()
            log.error("not a MatchFormed message; skipped", subject=msg.subject)
            await msg.term()
            return
        bots = [s for s in match.seats if s.bot]
        if not bots or match.game not in REGISTRY:
            await msg.ack()
            return
        if msg.metadata.num_delivered > 1:
            metrics.BOT_GAMES_RESUMED.inc()
            log.info(
                "resuming bot seats", game_id=match.match_id, delivery=msg.metadata.num_delivered
            )
        task = asyncio.create_task(self._hold(msg, match, bots))
        self._games.add(task)
        task.add_done_callback(self._games.discard)

    async def _hold(
        self, msg: Msg, match: events_pb2.MatchFormed, seats: list[events_pb2.MatchSeat]
    ) -> None:
        """Play the seats while renewing the lease; acknowledge when the game is over."""
        play = asyncio.create_task(self._play(match, seats))
        try:
            while True:
                done, _ = await asyncio.wait({play}, timeout=self.lease_seconds / 3)
                if done:
                    break
                with contextlib.suppress(Exception):  # NATS away: the lease may lapse
                    await msg.in_progress()
            finished = play.result()
        except asyncio.CancelledError:
            play.cancel()
            # Stopping: hand the seats back at once rather than after the lease.
            with contextlib.suppress(Exception):
                await asyncio.shield(msg.nak())
            raise
        except Exception:
            log.exception("bots gave up", game_id=match.match_id)
            finished = False
        with contextlib.suppress(Exception):
            await (msg.ack() if finished else msg.term())

    async def _play(self, match: events_pb2.MatchFormed, seats: list[events_pb2.MatchSeat]) -> bool:
        """Play until the game is over (True); False if it never can be (no such game, a
        token the engine refuses). Outages of the engine are waited out."""
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
                self._token(game_id, s),
                game.bots[self.bot_name],
                random.Random(f"{game_id}:{s.seat}"),
                self.bot_key,
                renew=functools.partial(self._renew, game_id, s),
                # the seed the matchmaker committed to for this bot seat
                client_seed=bot_client_seed(self.token_key, game_id, s.seat),
            )
            for s in seats
        ]
        missing_since: float | None = None
        pause = 0.1
        loop = asyncio.get_running_loop()
        while True:
            try:
                got = await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id))
                if got.status == engine_pb2.GAME_STATUS_FINISHED:
                    return True
                await asyncio.gather(*(p.play() for p in players))
                log.info("bots finished", game_id=game_id, seats=[s.seat for s in seats])
                return True
            except grpc.aio.AioRpcError as err:
                code = err.code()
                if code == grpc.StatusCode.NOT_FOUND:
                    # The engine creates the game from the same MatchFormed, just after.
                    missing_since = missing_since or loop.time()
                    if loop.time() - missing_since > 60:
                        log.error("the game of a formed match never appeared", game_id=game_id)
                        return False
                elif code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INVALID_ARGUMENT):
                    log.error("the engine refuses the bots", game_id=game_id, error=err.details())
                    return False
                else:  # UNAVAILABLE, a broken WatchGame stream, …: the engine will be back
                    log.warning("bots waiting for the engine", game_id=game_id, code=code.name)
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)

    def _token(self, game_id: str, seat: events_pb2.MatchSeat) -> str:
        claims = PlayerClaims(game_id, seat.seat, seat.player_id)
        return issue_token(self.token_key, claims, self.token_ttl_seconds)

    async def _renew(self, game_id: str, seat: events_pb2.MatchSeat) -> str:
        return self._token(game_id, seat)

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
