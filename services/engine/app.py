"""Wiring of the engine: the GAMES stream, the event store, the dice client, the KV
buckets, the MatchFormed consumer and the gRPC servicer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import grpc
import structlog
from google.protobuf.message import DecodeError
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.audit.keys import key_history_path
from boulevard.contract.clocks import time_control_from_proto
from boulevard.eventlog.jetstream import JetStreamEventStore
from boulevard.messaging.poison import poisoned
from boulevard.messaging.streams import ensure_stream, platform_streams
from boulevard.platform import metrics
from boulevard.platform.errors import BoulevardError, Unavailable, nats_unavailable
from boulevard.platform.identity import TokenVerifier
from boulevard.platform.keys import load_key
from services.engine.chance import DiceServiceChance
from services.engine.dice_client import DiceClient
from services.engine.engine import Engine, SeatRequest
from services.engine.games_index import GamesIndex
from services.engine.kv import JetStreamKeyValue
from services.engine.server import EngineServicer, summary_json
from services.engine.sessions import Session
from services.engine.settings import EngineSettings
from services.engine.stalls import Stalls, stalls

log = structlog.get_logger(__name__)

MATCH_ATTEMPTS = 5  # deliveries of one MatchFormed before an unexplained failure is poison


class EngineApp:
    name = "engine"
    service_names: Sequence[str] = (
        engine_pb2.DESCRIPTOR.services_by_name["EngineService"].full_name,
    )

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings
        self.token_key = settings.token_key.get_secret_value().encode()
        if not self.token_key:
            raise SystemExit("the engine needs BOULEVARD_TOKEN_KEY to verify player tokens")
        if not settings.auth_jwks:
            raise SystemExit(
                "the engine needs BOULEVARD_AUTH_JWKS (the JWKS file or URL of the token issuer)"
            )
        self.verifier = TokenVerifier.from_settings(settings)
        self.servicer: EngineServicer | None = None
        self._match_sub: Subscription | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._clock_sweeper: asyncio.Task[None] | None = None
        self.index: GamesIndex | None = None

    async def start(self, nc: NATS) -> None:
        try:
            # The JWKS is read (or fetched) before serving: a bad one fails the start.
            await asyncio.to_thread(self.verifier.warm)
        except ValueError as exc:
            raise SystemExit(str(exc)) from exc
        s = self.settings
        streams = platform_streams(s)
        js = nc.jetstream()
        await ensure_stream(js, streams["games"])
        await ensure_stream(js, streams["matchmaking"])
        store = JetStreamEventStore(nc, s.games_stream, s.games_subject_prefix)
        snapshots = await JetStreamKeyValue.open(nc, s.engine_snapshots_bucket, s.stream_replicas)
        self.index = GamesIndex(
            await JetStreamKeyValue.open(nc, s.engine_games_bucket, s.stream_replicas), nc
        )
        # Every game in memory before serving: ListGames and the reveal sweeper read it.
        await self.index.start()
        dice = DiceClient(nc, prefix=s.dice_rpc_prefix, timeout=s.dice_timeout_seconds)
        self.engine = Engine(
            store,
            DiceServiceChance(dice),
            snapshots,
            self.token_key,
            snapshot_every=s.engine_snapshot_every,
            token_ttl_seconds=s.seat_token_ttl_seconds,
            cache_size=s.engine_cache_games,
            on_finished=self._finished,
            on_halted=self._finished,  # the index says "halted" (summary_json)
            reveal_seconds=s.engine_reveal_seconds,
            idle_trim_seconds=s.engine_idle_trim_seconds,
            rules_release=s.engine_new_games_rules_release,
            receipt_key=load_key(
                s.engine_signing_key.get_secret_value(),
                s.engine_signing_key_file or s.data_dir / "engine" / "signing-key",
            ),
            stand_in_key=load_key(
                s.bot_signing_key.get_secret_value(),
                s.bot_signing_key_file or s.data_dir / "bots" / "signing-key",
            ),
        )
        metrics.GAMES_LIVE.set_function(self.engine.live_games)
        metrics.GAMES_CACHED.set_function(self.engine.cached_games)
        metrics.GAMES_OVERDUE.set_function(self.engine.overdue_games)
        engine, limit = self.engine, s.engine_stall_seconds

        def stalled_now() -> Stalls:
            return stalls(engine.waiting_since_ms(), time.time_ns() // 1_000_000, limit)

        metrics.GAMES_LONGEST_WAIT.set_function(lambda: stalled_now().longest_wait_seconds)
        metrics.GAMES_STALLED.set_function(lambda: stalled_now().stalled)
        self.servicer = EngineServicer(
            self.engine,
            store,
            self.index,
            self.verifier,
            max_spectator_streams=s.engine_max_spectator_streams,
            max_streams_per_seat=s.engine_max_streams_per_seat,
            key_history_file=s.engine_key_history_file or key_history_path(s.data_dir),
        )
        self._match_sub = await js.subscribe(
            f"{s.matchmaking_subject_prefix}.match_formed",
            stream=s.matchmaking_stream,
            durable=s.engine_match_consumer,
            queue=s.engine_match_consumer,  # replicas share the consumer: each match once
            cb=self._on_match_formed,
            manual_ack=True,
            config=ConsumerConfig(
                ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL, ack_wait=30
            ),
        )

        self._sweeper = asyncio.create_task(self._sweep_reveals(), name="engine-reveal-sweeper")
        self._clock_sweeper = asyncio.create_task(self._sweep_clocks(), name="engine-clocks")

    async def _sweep_clocks(self) -> None:
        """Time out seats past their deadline and let the bot play absent seats, in every
        game with a clock, on any replica (each step is recorded once: an append at the
        expected version). Running games with a clock from before a restart are found in
        the games index and loaded, which rebuilds their deadlines from the log."""
        assert self.index is not None
        for key, info in self.index.items():
            if info.clocked and info.status == "active":
                self.engine.clock_due.setdefault(key, 0)
        while True:
            await asyncio.sleep(self.settings.engine_clock_sweep_seconds)
            try:
                await self.engine.sweep_clocks()
            except Exception:
                log.exception("the clock sweep failed")

    async def _sweep_reveals(self) -> None:
        """Wake games whose players never reveal their seeds: past the deadline they play
        with empty seeds instead of waiting forever. Games waiting before a restart are
        found again in the games index. The same loop trims idle games' caches."""
        assert self.index is not None
        for key, info in self.index.items():  # complete: start() waited for the replay
            if info.seeds_pending_until is not None:
                self.engine.awaiting_seeds.setdefault(key, info.seeds_pending_until)
        while True:
            await asyncio.sleep(self.settings.engine_reveal_sweep_seconds)
            try:
                await self.engine.sweep_reveals()
            except Exception:
                log.exception("the reveal sweep failed")
            self.engine.trim_idle()  # idle games' caches go, so ten thousand fit

    async def _finished(self, session: Session) -> None:
        """Write the game's summary to the games index: at its end, or when it halts."""
        assert self.index is not None
        await self.index.put(session.game_id, summary_json(session))

    async def _on_match_formed(self, msg: Msg) -> None:
        """Create the match's game exactly once (CreateGame is idempotent per match id).

        A message that does not decode, or a match the rules refuse, is poison: reported
        and terminated (never redelivered). NATS being away is not the message's fault: it
        is retried as long as it takes. Any other failure is retried a few times, then the
        message is reported and terminated, so it cannot loop forever."""
        try:
            match = events_pb2.MatchFormed.FromString(msg.data)
        except DecodeError as exc:
            poisoned("engine.match_formed", "undecodable", subject=msg.subject, error=exc)
            await msg.term()
            return
        try:
            created = await self.engine.create_game(
                match.match_id,
                match.game,
                [
                    SeatRequest(
                        s.seat,
                        s.player_id,
                        s.client_seed_commitment,
                        s.bot,
                        public_key=s.public_key,
                    )
                    for s in match.seats
                ],
                match_id=match.match_id,
                time_control=time_control_from_proto(match.time_control)
                if match.HasField("time_control")
                else None,
            )
            assert self.index is not None
            await self.index.put(
                created.game_id, summary_json(await self.engine.load(created.game_id))
            )
            await msg.ack()
            log.info("match created", match_id=match.match_id, game_id=created.game_id)
        except BoulevardError as exc:
            if nats_unavailable(exc.__cause__ or exc) or isinstance(exc, Unavailable):
                log.warning("match creation waits for NATS or dice", error=str(exc))
                await msg.nak(delay=1.0)
                return
            # A match the rules can't host will never succeed: record it and move on.
            poisoned("engine.match_formed", "refused", subject=msg.subject, error=exc)
            await msg.term()
        except Exception as exc:
            if nats_unavailable(exc):
                log.warning("match creation waits for NATS", error=repr(exc))
                await msg.nak(delay=1.0)
                return
            delivered = msg.metadata.num_delivered
            if delivered >= MATCH_ATTEMPTS:
                poisoned("engine.match_formed", "failed_repeatedly", subject=msg.subject, error=exc)
                await msg.term()
                return
            log.exception("match creation failed; will retry", attempt=delivered)
            await msg.nak(delay=1.0)

    def register(self, server: grpc.aio.Server) -> None:
        assert self.servicer is not None, "start() before register()"
        engine_pb2_grpc.add_EngineServiceServicer_to_server(self.servicer, server)

    async def stop(self) -> None:
        for task in (self._sweeper, self._clock_sweeper):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        self._sweeper = self._clock_sweeper = None
        if self._match_sub is not None:
            await self._match_sub.unsubscribe()
            self._match_sub = None
        if self.index is not None:
            await self.index.stop()
        await asyncio.sleep(0)
