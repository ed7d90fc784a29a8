"""Wiring of matchmaking: its stream and KV buckets, the matchmaker and its collaborators
(the ticket book, the matching policy, forming and recovering matches, bot seats), the
ratings feed from the games index, the bot runner, and the gRPC servicer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

import grpc
from nats.aio.client import Client as NATS

from boulevard.api.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from boulevard.messaging.lag import sample_forever
from boulevard.messaging.streams import ensure_stream, platform_streams
from boulevard.platform.identity import TokenVerifier
from boulevard.platform.keys import load_key
from services.matchmaking.bot_seats import BotSeats
from services.matchmaking.botrunner import BotRunner
from services.matchmaking.forming import MatchFormer
from services.matchmaking.listings import Listings
from services.matchmaking.matcher import WindowPolicy
from services.matchmaking.matching import MatchingPolicy
from services.matchmaking.matchmaker import Matchmaker
from services.matchmaking.rating_feed import RatingFeed
from services.matchmaking.recovery import MatchRecovery
from services.matchmaking.server import MatchmakingServicer
from services.matchmaking.settings import MatchmakingSettings
from services.matchmaking.store import Records, open_bucket
from services.matchmaking.tickets import TicketBook, now_ms


class MissingTokenKey(ValueError):
    pass


class MatchmakingApp:
    name = "matchmaking"
    service_names: Sequence[str] = (
        matchmaking_pb2.DESCRIPTOR.services_by_name["MatchmakingService"].full_name,
    )

    def __init__(self, settings: MatchmakingSettings) -> None:
        self.settings = settings
        self.token_key = settings.token_key.get_secret_value().encode()
        if not self.token_key:
            # Tokens are what the engine trusts; an empty key would sign nothing worth having.
            raise MissingTokenKey(
                "matchmaking needs BOULEVARD_TOKEN_KEY (the HMAC key of player tokens, shared "
                "with the engine)"
            )
        if not settings.auth_jwks:
            raise MissingTokenKey(
                "matchmaking needs BOULEVARD_AUTH_JWKS (the JWKS file or URL of the issuer of "
                "players' bearer tokens)"
            )
        self.verifier = TokenVerifier.from_settings(settings)
        # The operator's bot key signs the bot seats' moves (docs/auditing.md).
        self.bot_key = load_key(
            settings.bot_signing_key.get_secret_value(),
            settings.bot_signing_key_file or settings.data_dir / "bots" / "signing-key",
        )
        self.matchmaker: Matchmaker | None = None
        self.ratings: RatingFeed | None = None
        self.bots: BotRunner | None = None
        self._sampling: asyncio.Task[None] | None = None  # consumer lag (messaging/lag.py)

    async def start(self, nc: NATS) -> None:
        try:
            # The JWKS is read (or fetched) before serving: a bad one fails the start.
            await asyncio.to_thread(self.verifier.warm)
        except ValueError as exc:
            raise SystemExit(str(exc)) from exc
        s = self.settings
        js = nc.jetstream()
        streams = platform_streams(s)
        await ensure_stream(js, streams["matchmaking"])
        await ensure_stream(js, streams["games"])
        tickets = await open_bucket(
            js, s.matchmaking_tickets_bucket, s.stream_replicas,
            ttl=s.matchmaking_ticket_retention_seconds,
        )  # fmt: skip
        matches = await open_bucket(js, s.matchmaking_matches_bucket, s.stream_replicas)
        ratings = await open_bucket(js, s.matchmaking_ratings_bucket, s.stream_replicas)
        match_formed_subject = f"{s.matchmaking_subject_prefix}.match_formed"
        # The matchmaker and its collaborators: the ticket book and its listings, the
        # matching policy, forming a match (its bot seats) and recovering one.
        clock = now_ms
        listings = Listings(clock)
        ratings_records = Records(ratings)
        book = TicketBook(
            tickets,
            ratings_records,
            token_key=self.token_key,
            ticket_ttl_ms=int(s.matchmaking_ticket_ttl_seconds * 1000),
            seat_token_ttl_seconds=s.seat_token_ttl_seconds,
            on_assigned=listings.count_match,
            clock=clock,
        )
        policy = MatchingPolicy(
            WindowPolicy(
                s.matchmaking_window_base,
                s.matchmaking_window_widen_per_second,
                s.matchmaking_window_max,
            ),
            recover_after_ms=int(s.matchmaking_recover_after_seconds * 1000),
        )
        match_records = Records(matches)
        former = MatchFormer(
            js,
            book,
            match_records,
            BotSeats(self.token_key, self.bot_key.public_hex),
            match_formed_subject=match_formed_subject,
            games_stream=s.games_stream if s.matchmaking_game_wait_seconds else "",
            games_subject_prefix=s.games_subject_prefix,
            game_wait_seconds=s.matchmaking_game_wait_seconds,
            clock=clock,
        )
        self.matchmaker = Matchmaker(
            book,
            listings,
            ratings_records,
            policy,
            former,
            MatchRecovery(book, match_records, former, clock),
            tick_seconds=s.matchmaking_tick_seconds,
            form_concurrency=s.matchmaking_form_concurrency,
        )
        await self.matchmaker.start()
        self.ratings = RatingFeed(
            nc,
            Records(ratings),
            games_stream=s.games_stream,
            games_prefix=s.games_subject_prefix,
            index_bucket=s.engine_games_bucket,
            durable=s.matchmaking_finished_consumer,
            legacy_durable=s.matchmaking_ratings_consumer,
            fetch_batch=s.matchmaking_ratings_fetch_batch,
            recheck_min=s.matchmaking_ratings_recheck_min_seconds,
            recheck_max=s.matchmaking_ratings_recheck_max_seconds,
        )
        await self.ratings.start()
        # Bot fill: the bots of formed matches play through the engine's public API.
        self.bots = BotRunner(
            nc,
            s.engine_address(),
            self.token_key,
            subject=match_formed_subject,
            stream=s.matchmaking_stream,
            lease_seconds=s.matchmaking_bot_lease_seconds,
            max_games=s.matchmaking_bot_max_games,
            token_ttl_seconds=s.seat_token_ttl_seconds,
            tls_ca_file=s.tls_ca_file,
            bot_key=self.bot_key,
        )
        await self.bots.start()
        self._sampling = asyncio.create_task(
            sample_forever(
                nc.jetstream(),
                # Not the ratings feed's durable: every game still running is pending
                # there by design, so its ack floor stands at the oldest running game.
                [(s.matchmaking_stream, self.bots.durable)],
            ),
            name="matchmaking-lag",
        )  # fmt: skip

    def register(self, server: grpc.aio.Server) -> None:
        assert self.matchmaker is not None, "start() first"
        matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server(
            MatchmakingServicer(
                self.matchmaker,
                self.verifier,
                max_watches_per_caller=self.settings.matchmaking_max_watches_per_caller,
            ),
            server,
        )

    async def stop(self) -> None:
        if self._sampling is not None:
            self._sampling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sampling
        if self.bots is not None:
            await self.bots.stop()
        if self.ratings is not None:
            await self.ratings.stop()
        if self.matchmaker is not None:
            await self.matchmaker.stop()
