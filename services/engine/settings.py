"""The engine's settings, on top of the platform's (`BOULEVARD_…`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import Field, SecretStr

from boulevard.platform.settings import Settings


class EngineSettings(Settings):
    engine_snapshot_every: int = Field(default=100, ge=1)  # events between snapshots
    engine_cache_games: int = Field(default=10_000, ge=1)
    # A cached game unused this long keeps only its fold: its views, legal commands and
    # recent envelopes are dropped (recomputed when next asked for; docs/performance.md).
    engine_idle_trim_seconds: float = Field(default=30.0, gt=0)
    # A live game with no event for this long counts as stalled (services/engine/stalls.py).
    engine_stall_seconds: float = Field(default=900.0, gt=0)
    # Concurrent WatchGame streams this replica serves (each holds ~30 KiB, more on a long
    # game): spectators (no token needed) share one budget, so strangers cannot exhaust the
    # engine's memory, and each seat of a game has a few streams of its own that spectators
    # cannot take (docs/security.md, "Limits").
    engine_max_spectator_streams: int = Field(default=2000, ge=1)
    engine_max_streams_per_seat: int = Field(default=4, ge=1)
    engine_snapshots_bucket: str = "engine_snapshots"
    engine_games_bucket: str = "engine_games"
    engine_match_consumer: str = "engine-match-formed"
    dice_rpc_prefix: str = "dice.rpc"  # the dice service's request/reply subjects
    dice_timeout_seconds: float = Field(default=5.0, gt=0)
    # How long seats have, from the game's creation, to reveal their client seeds; after it
    # a seat that has not revealed plays with an empty seed (docs/fairness.md).
    engine_reveal_seconds: float = Field(default=60.0, gt=0, le=86_400)
    engine_reveal_sweep_seconds: float = Field(default=1.0, gt=0)
    # Hex of the 32-byte Ed25519 seed that signs receipts and snapshots. Empty: read (or on
    # first start create) `engine_signing_key_file`, by default
    # `<data_dir>/engine/signing-key`. Its public half is served by GetEngineKey.
    engine_signing_key: SecretStr = SecretStr("")
    engine_signing_key_file: Path | None = None
    # The platform's key history the engine serves (GetEngineKeyResponse.key_history), as
    # `boulevard keys history` writes it; by default `<data_dir>/keys/history.json`.
    engine_key_history_file: Path | None = None
    # How often the clock sweeper looks for seats past their deadline and absent seats the
    # platform's bot is to play (docs/auditing.md, "Clocks").
    engine_clock_sweep_seconds: float = Field(default=0.25, gt=0, le=60)
    # The operator's bot key (the matchmaker's, same settings): it signs the moves the
    # platform's bot plays for a seat whose time ran out. Empty: read (or on first start
    # create) `bot_signing_key_file`, by default `<data_dir>/bots/signing-key`.
    bot_signing_key: SecretStr = SecretStr("")
    bot_signing_key_file: Path | None = None
    # New games take the rules of this release (a name in releases.json); "": the newest
    # recorded rules. During a rolling upgrade, set it to the release still running beside
    # this one, and clear it once no engine of that release is left (docs/operations.md).
    engine_new_games_rules_release: str = ""


@cache
def get_engine_settings() -> EngineSettings:
    return EngineSettings()
