"""The gateway's own settings, on top of the platform's (`BOULEVARD_…`).

The gateway listens on `grpc_host:gateway_port` (TLS with the same certificate and key as the
gRPC services when they are set) and calls each service at its gRPC target, by default the
same host and port the service itself listens on, verified against `tls_ca_file` when set.
"""

from __future__ import annotations

import ipaddress
from functools import cache
from pathlib import Path

from pydantic import model_validator

from boulevard.contract.routing import replica_list
from boulevard.platform.settings import Settings

SERVICES = ("matchmaking", "engine", "dice", "ledger")
LOOPBACK_NAMES = ("127.0.0.1", "localhost")


def _is_loopback_or_any(host: str) -> bool:
    if host in ("", "0.0.0.0", "::", "localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class GatewaySettings(Settings):
    # The browser origins allowed to call the APIs from another page, comma-separated
    # (e.g. `https://play.example.com`). Empty: only the gateway's own origin (the web app
    # it serves), so a page anywhere else gets no CORS grant and its calls are refused.
    gateway_origins: str = ""
    # The built web app (index.html and its assets). Empty: the copy inside the package,
    # libs/boulevard/web/static (a placeholder page says so when it is not built).
    gateway_web_dir: Path | None = None
    # Where each service answers gRPC; empty: `grpc_host` and that service's port. The
    # engine's may list several replicas, comma-separated (`engine-0.engine-headless:50052,
    # …`): each game's calls go to the one that owns its game id (docs/operations.md,
    # "Scaling the engine").
    gateway_matchmaking_target: str = ""
    gateway_engine_target: str = ""
    gateway_dice_target: str = ""
    gateway_ledger_target: str = ""

    @model_validator(mode="after")
    def _one_target_unless_engine(self) -> GatewaySettings:
        for service in SERVICES:
            if service != "engine" and len(self.targets_of(service)) > 1:
                raise ValueError(
                    f"BOULEVARD_GATEWAY_{service.upper()}_TARGET names one address; only the "
                    "engine's may list replicas"
                )
        return self

    def target_of(self, service: str) -> str:
        """The gRPC address (for the engine: the comma-separated addresses) the gateway
        forwards `service`'s calls to."""
        given: str = getattr(self, f"gateway_{service}_target")
        return given or f"{self.grpc_host}:{self.port_of(service)}"

    def targets_of(self, service: str) -> tuple[str, ...]:
        """`target_of` as a list of addresses, at least one."""
        return replica_list(self.target_of(service)) or (
            f"{self.grpc_host}:{self.port_of(service)}",
        )

    @property
    def tls(self) -> bool:
        return self.tls_cert_file is not None

    def allowed_origins(self, port: int | None = None) -> tuple[str, ...]:
        """The origins CORS admits: the configured ones, else the gateway's own (on a
        loopback or any-address listener, both loopback names, as a browser may use
        either)."""
        if self.gateway_origins.strip():
            return tuple(o.strip().rstrip("/") for o in self.gateway_origins.split(",") if o)
        scheme = "https" if self.tls else "http"
        port = self.gateway_port if port is None else port
        host = self.grpc_host
        hosts = LOOPBACK_NAMES if _is_loopback_or_any(host) else (host,)
        return tuple(f"{scheme}://{h}:{port}" for h in hosts)

    def web_dir(self) -> Path:
        if self.gateway_web_dir is not None:
            return self.gateway_web_dir
        import boulevard

        return Path(boulevard.__file__).resolve().parent / "web" / "static"


@cache
def get_gateway_settings() -> GatewaySettings:
    return GatewaySettings()
