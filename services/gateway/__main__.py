"""Run the browser gateway: `python -m services.gateway`.

uvicorn serves it on `grpc_host:gateway_port`, with TLS when the platform's certificate and
key are set (the same ones the gRPC services serve), and stops gracefully on SIGTERM/SIGINT.
Prometheus `/metrics` is served apart, on `metrics_host:gateway_metrics_port` (0: any free
port), like every service's, so the public port answers only the APIs and the web app.
"""

import structlog
import uvicorn

from boulevard.platform import metrics
from boulevard.platform.gctune import tune_gc
from boulevard.platform.logging import configure_logging
from services.gateway.app import build_app
from services.gateway.settings import get_gateway_settings


def main() -> None:
    settings = get_gateway_settings()
    configure_logging(settings.log_level, settings.log_format)
    wanted = settings.gateway_metrics_port
    try:
        port = metrics.serve_metrics(settings.metrics_host, wanted)
    except OSError as exc:  # fail loudly, as the services do: unscraped is unobservable
        raise SystemExit(
            f"gateway: cannot serve /metrics on {settings.metrics_host}:{wanted} ({exc}); "
            "set BOULEVARD_GATEWAY_METRICS_PORT to a free port"
        ) from exc
    structlog.get_logger().info("metrics", address=f"http://{settings.metrics_host}:{port}/metrics")
    tls = settings.tls_cert_file is not None and settings.tls_key_file is not None
    config = uvicorn.Config(
        build_app(settings),
        host=settings.grpc_host,
        port=settings.gateway_port,
        lifespan="on",
        log_config=None,  # the platform's logging (structlog), not uvicorn's own
        access_log=False,
        # Headers as large as the gRPC services read, so a long bearer token reaches the
        # service's auth (UNAUTHENTICATED) rather than stopping at HTTP's parser.
        h11_max_incomplete_event_size=settings.grpc_max_metadata_bytes,
        ssl_certfile=str(settings.tls_cert_file) if tls else None,
        ssl_keyfile=str(settings.tls_key_file) if tls else None,
        timeout_graceful_shutdown=int(settings.shutdown_grace_seconds) or 1,
    )
    tune_gc()
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
