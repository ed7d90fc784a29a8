"""Settings: environment variables read once into a frozen model that fails fast.

Every port, subject prefix and stream name is a setting (`BOULEVARD_…`); `NATS_URL` (no
prefix, the NATS convention) points everything at an existing server.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BOULEVARD_", frozen=True, extra="ignore")

    nats_url: str = Field(
        default="nats://127.0.0.1:4222",
        validation_alias=AliasChoices("NATS_URL", "BOULEVARD_NATS_URL"),
    )
    data_dir: Path = Path(".data")
    embedded_nats_port: int = Field(default=4222, ge=0, le=65535)  # `boulevard up` only

    grpc_host: str = "127.0.0.1"
    matchmaking_port: int = Field(default=50051, ge=0, le=65535)
    engine_port: int = Field(default=50052, ge=0, le=65535)
    dice_port: int = Field(default=50053, ge=0, le=65535)
    ledger_port: int = Field(default=50054, ge=0, le=65535)
    shutdown_grace_seconds: float = Field(default=5.0, ge=0)
    # The largest gRPC message a service reads (every request field is bounded far below
    # this, docs/security.md "Limits") and writes (a Reconcile with a long game's events).
    grpc_max_receive_bytes: int = Field(default=256 * 1024, ge=4096)
    grpc_max_send_bytes: int = Field(default=16 * 1024 * 1024, ge=4096)

    # Secrets. `boulevard up` makes them once per data folder (<data_dir>/secrets.env) when
    # unset; services refuse to start without the ones they need.
    token_key: SecretStr = SecretStr("")  # HMAC key of player tokens (matchmaking, engine)
    operator_token: SecretStr = SecretStr("")  # bearer token for operator-only RPCs

    log_level: Literal["debug", "info", "warning", "error"] = "info"
    log_format: Literal["auto", "json", "console"] = "auto"

    # Streams and subjects.
    games_stream: str = "GAMES"
    games_subject_prefix: str = "game"
    dice_stream: str = "DICE"
    dice_subject_prefix: str = "dice"
    ledger_stream: str = "LEDGER"
    ledger_subject_prefix: str = "ledger"
    matchmaking_stream: str = "MATCHMAKING"
    matchmaking_subject_prefix: str = "mm"
    stream_replicas: int = Field(default=1, ge=1, le=5)
    duplicate_window_seconds: float = Field(default=120.0, gt=0)

    def port_of(self, service: str) -> int:
        port: int = getattr(self, f"{service}_port")
        return port


@cache
def get_settings() -> Settings:
    return Settings()
