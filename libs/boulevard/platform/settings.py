"""Settings: environment variables read once into a frozen model that fails fast.

Every port, subject prefix and stream name is a setting (`BOULEVARD_…`); `NATS_URL` (no
prefix, the NATS convention) points everything at an existing server.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class NatsIdentityMissing(RuntimeError):
    """No NATS identity is configured: NATS has no anonymous user, so nothing would work."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BOULEVARD_", frozen=True, extra="ignore")

    nats_url: str = Field(
        default="nats://127.0.0.1:4222",
        validation_alias=AliasChoices("NATS_URL", "BOULEVARD_NATS_URL"),
    )
    data_dir: Path = Path(".data")
    # The service's NATS identity (docs/security.md): the nkey seed given as a secret value
    # (containers: from a Secret), else the seed file `<identity>.nk` in this folder (mode
    # 0600; `boulevard up` and the tests make them), by default <data_dir>/nats-identities.
    nats_nkey_seed: SecretStr = SecretStr("")
    nats_identities_dir: Path | None = None
    embedded_nats_port: int = Field(default=4222, ge=0, le=65535)  # `boulevard up` only

    # TLS (docs/security.md): the gRPC server serves TLS with this certificate and key; the
    # CA verifies what this process connects to (other services' gRPC, and NATS, which is
    # then always TLS). `boulevard up --tls` makes all three under <data_dir>/tls.
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_ca_file: Path | None = None

    grpc_host: str = "127.0.0.1"
    matchmaking_port: int = Field(default=50051, ge=0, le=65535)
    engine_port: int = Field(default=50052, ge=0, le=65535)
    dice_port: int = Field(default=50053, ge=0, le=65535)
    ledger_port: int = Field(default=50054, ge=0, le=65535)
    # The browser gateway (services/gateway): Connect and gRPC-Web over HTTP/1.1 on this port
    # of `grpc_host`, forwarding to the four gRPC services above; it also serves the web app.
    gateway_port: int = Field(default=8080, ge=0, le=65535)
    shutdown_grace_seconds: float = Field(default=5.0, ge=0)
    # The largest gRPC message a service reads (every request field is bounded far below
    # this, docs/security.md "Limits") and writes (a Reconcile with a long game's events).
    grpc_max_receive_bytes: int = Field(default=256 * 1024, ge=4096)
    grpc_max_send_bytes: int = Field(default=16 * 1024 * 1024, ge=4096)
    # The largest header block (metadata) a service reads. gRPC's own default (8 KiB soft,
    # 16 KiB hard, refused at random between the two) answered RESOURCE_EXHAUSTED to a
    # bearer token just over 8 KiB before auth could say UNAUTHENTICATED; one fixed limit
    # well above MAX_TOKEN_CHARS lets auth answer for every token a client can send under it.
    grpc_max_metadata_bytes: int = Field(default=64 * 1024, ge=16 * 1024)

    # Prometheus /metrics, one port per service (0: any free port); loopback unless opened
    # on purpose (compose and k8s set 0.0.0.0 so the scraper can reach it).
    metrics_host: str = "127.0.0.1"
    matchmaking_metrics_port: int = Field(default=9091, ge=0, le=65535)
    engine_metrics_port: int = Field(default=9092, ge=0, le=65535)
    dice_metrics_port: int = Field(default=9093, ge=0, le=65535)
    ledger_metrics_port: int = Field(default=9094, ge=0, le=65535)
    gateway_metrics_port: int = Field(default=9095, ge=0, le=65535)
    # Traces: OTLP/gRPC endpoint (e.g. http://127.0.0.1:4317); unset, tracing is off.
    otlp_endpoint: str = Field(
        default="",
        validation_alias=AliasChoices("BOULEVARD_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"),
    )

    # Secrets. `boulevard up` makes them once per data folder (<data_dir>/secrets.env) when
    # unset; services refuse to start without the ones they need.
    token_key: SecretStr = SecretStr("")  # HMAC key of player tokens (matchmaking, engine)
    seat_token_ttl_seconds: float = Field(default=6 * 3600.0, gt=0, le=7 * 86400)

    # Who callers are: bearer JWTs verified against this JWKS (a file path or an https URL),
    # issuer and audience (docs/security.md). `boulevard up` makes a local issuer and sets
    # the JWKS to its file; matchmaking and the engine refuse to start without one.
    auth_jwks: str = ""
    auth_issuer: str = "boulevard-local"
    auth_audience: str = "boulevard"
    auth_leeway_seconds: float = Field(default=5.0, ge=0, le=60)

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

    @model_validator(mode="after")
    def _tls_pair(self) -> Settings:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError(
                "set both BOULEVARD_TLS_CERT_FILE and BOULEVARD_TLS_KEY_FILE, or neither"
            )
        return self

    def nats_seed(self, identity: str) -> str:
        """The nkey seed this process connects to NATS with, as `identity`."""
        given = self.nats_nkey_seed.get_secret_value().strip()
        if given:
            return given
        folder = self.nats_identities_dir or self.data_dir / "nats-identities"
        path = folder / f"{identity}.nk"
        try:
            return path.read_text().strip()
        except FileNotFoundError:
            raise NatsIdentityMissing(
                f"no NATS identity for {identity}: set BOULEVARD_NATS_NKEY_SEED, or put its "
                f"seed in {path} (BOULEVARD_NATS_IDENTITIES_DIR; `boulevard up` makes them)"
            ) from None

    def port_of(self, service: str) -> int:
        port: int = getattr(self, f"{service}_port")
        return port

    def metrics_port_of(self, service: str) -> int:
        port: int = getattr(self, f"{service}_metrics_port")
        return port


@cache
def get_settings() -> Settings:
    return Settings()
