"""Matchmaking's own settings, beside the platform's (`BOULEVARD_MATCHMAKING_…`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import Field, SecretStr

from boulevard.platform.settings import Settings

_NAME = r"^[A-Za-z0-9_-]{1,64}$"


class MatchmakingSettings(Settings):
    # JetStream KV buckets: tickets (and their indexes), match records, ratings.
    matchmaking_tickets_bucket: str = Field(default="tickets", pattern=_NAME)
    matchmaking_matches_bucket: str = Field(default="matches", pattern=_NAME)
    matchmaking_ratings_bucket: str = Field(default="ratings", pattern=_NAME)
    # Finished tickets are kept this long (GetTicket and request-id retries work until then).
    matchmaking_ticket_retention_seconds: float = Field(default=7 * 86400.0, gt=0)
    # A waiting ticket expires after this long.
    matchmaking_ticket_ttl_seconds: float = Field(default=600.0, gt=0)
    # How often the matcher looks at the queues (and expires tickets).
    matchmaking_tick_seconds: float = Field(default=0.1, gt=0)
    # Rating window (openskill mu points): base, growth per second of waiting, cap.
    matchmaking_window_base: float = Field(default=3.0, ge=0)
    matchmaking_window_widen_per_second: float = Field(default=0.5, ge=0)
    matchmaking_window_max: float = Field(default=100.0, ge=0)
    # A ticket still MATCHED this long after its last change is recovered: its match is
    # finished (published and assigned) or abandoned (a crash between form and assign).
    matchmaking_recover_after_seconds: float = Field(default=5.0, gt=0)
    # A ticket turns ASSIGNED only once the engine has written its game's first event; this
    # long at most per try (then recovery tries again). 0: assign without waiting (for
    # tests of matchmaking alone, with no engine).
    matchmaking_game_wait_seconds: float = Field(default=10.0, ge=0)
    # WatchTicket streams one caller (a token's subject) may hold open at once: each holds a
    # queue and reads the ticket every second while it waits (docs/security.md, "Limits").
    matchmaking_max_watches_per_caller: int = Field(default=16, ge=1)
    # Matches being formed at once.
    matchmaking_form_concurrency: int = Field(default=64, ge=1)
    # Ratings follow the engine's games index (its bucket, read only): a durable consumer
    # of matchmaking's on it. A game not finished in its log when its summary comes is
    # looked at again after its summary's age, within these bounds (docs/matchmaking.md).
    engine_games_bucket: str = Field(default="engine_games", pattern=_NAME)
    matchmaking_finished_consumer: str = Field(default="matchmaking-finished", pattern=_NAME)
    matchmaking_ratings_fetch_batch: int = Field(default=256, ge=1)
    matchmaking_ratings_recheck_min_seconds: float = Field(default=30.0, gt=0)
    matchmaking_ratings_recheck_max_seconds: float = Field(default=6 * 3600.0, gt=0)
    # The durable consumer on GAMES that fed ratings before (read once at upgrade: how far
    # it had rated).
    matchmaking_ratings_consumer: str = Field(default="matchmaking-ratings", pattern=_NAME)
    # Where the bot runner finds the engine (bots play through its public API).
    engine_host: str = "127.0.0.1"
    # Or the engine's replicas, comma-separated (`engine-0.engine-headless:50052,…`), as
    # the gateway's BOULEVARD_GATEWAY_ENGINE_TARGET: each bot game's calls go to the replica
    # that owns its game id (docs/operations.md, "Scaling the engine"). Empty: the one
    # engine at `engine_host` and `engine_port`.
    engine_target: str = ""
    # Hex of the 32-byte Ed25519 seed of the operator's bot key (the bot seats sign with
    # it). Empty: read (or on first start create) `bot_signing_key_file`, by default
    # `<data_dir>/bots/signing-key`; `boulevard up` makes it once per data dir.
    bot_signing_key: SecretStr = SecretStr("")
    bot_signing_key_file: Path | None = None
    # A bot game's lease: a matchmaking process that dies stops renewing it, and after this
    # long another one (or the same one restarted) resumes the bot seats.
    matchmaking_bot_lease_seconds: float = Field(default=15.0, ge=1, le=300)
    # Bot games played at once across all matchmaking processes (the consumer's ack pending).
    matchmaking_bot_max_games: int = Field(default=10_000, ge=1)

    def engine_address(self) -> str:
        """Where the bots play: `engine_target`, else `engine_host:engine_port`."""
        return self.engine_target or f"{self.engine_host}:{self.engine_port}"


@cache
def get_matchmaking_settings() -> MatchmakingSettings:
    return MatchmakingSettings()
