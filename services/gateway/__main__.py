"""Run the browser gateway: `python -m services.gateway`.

uvicorn serves it on `grpc_host:gateway_port`, with TLS when the platform's certificate and
key are set (the same ones the gRPC services serve), and stops gracefully on SIGTERM/SIGINT.
"""

import uvicorn

from boulevard.platform.logging import configure_logging
from services.gateway.app import build_app
from services.gateway.settings import get_gateway_settings


def main() -> None:
    settings = get_gateway_settings()
    configure_logging(settings.log_level, settings.log_format)
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
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
