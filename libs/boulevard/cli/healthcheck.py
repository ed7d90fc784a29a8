"""A gRPC health probe for containers: `python -m boulevard.cli.healthcheck HOST:PORT [SERVICE]`.

Exits 0 when the server at HOST:PORT answers the standard gRPC health check
(`grpc.health.v1.Health/Check`) with SERVING for SERVICE ("" — the whole server — when
omitted), 1 for any other answer, no answer or a timeout, and 2 for bad arguments. It prints
one line saying which, so `docker inspect` and `kubectl describe pod` show why a probe failed.

It exists so the image needs no `grpc_health_probe` binary and no shell: compose and
Kubernetes run it as an exec probe with the interpreter the services already use. Passing the
service's full proto name (`boulevard.v1.EngineService`) also catches a port wired to the
wrong service, which answers SERVICE_UNKNOWN (NOT_FOUND) for a name it does not serve.

`--alive` is for liveness probes: exit 0 when the service answers at all, SERVING or
NOT_SERVING. A service says NOT_SERVING while its NATS connection is lost (readiness takes it
out of rotation), but restarting it would not bring NATS back, so liveness must not fail on
that; it fails only on no answer, a timeout or SERVICE_UNKNOWN (a hung or miswired process).

Where the services serve TLS, the probe verifies the server against the CA in
BOULEVARD_TLS_CA_FILE (the service's own setting, so the probe needs no argument for it) or
`--tls-ca FILE`; the certificate must name the probed host (127.0.0.1).

`--connect` probes the browser gateway (services/gateway) instead: the same health check over
Connect with JSON on HTTP/1.1 (https when a CA is given), as a browser would call it. There
SERVICE "" means the whole platform: SERVING only when all four services answer SERVING
through the gateway.
"""

from __future__ import annotations

import argparse
import http.client
import json
import ssl
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from boulevard.platform.tls import ca_file_from_env, sync_channel

SERVING = 0
NOT_SERVING = 1
USAGE = 2


class Target(NamedTuple):
    host: str
    port: int

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_target(text: str) -> Target:
    """HOST:PORT (an IPv6 host in brackets, `[::1]:50052`); ValueError with a reason else."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"put an IPv6 host in brackets, as in [::1]:50052, got {text!r}")
    if not host:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"the port must be a number from 1 to 65535, got {port_text!r}")
    return Target(host, int(port_text))


def _target_arg(text: str) -> Target:
    try:
        return parse_target(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m boulevard.cli.healthcheck",
        description="Exit 0 if a gRPC server says SERVING for SERVICE, 1 otherwise.",
    )
    parser.add_argument("target", type=_target_arg, metavar="HOST:PORT")
    parser.add_argument(
        "service",
        nargs="?",
        default="",
        metavar="SERVICE",
        help='full proto service name, e.g. boulevard.v1.EngineService (default "": the server)',
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=3.0,
        metavar="SECONDS",
        help="give up after this long (default 3)",
    )
    parser.add_argument(
        "--tls-ca",
        type=Path,
        default=None,
        metavar="FILE",
        help="verify the server's TLS certificate with this CA (default: BOULEVARD_TLS_CA_FILE, "
        "plaintext when neither is set)",
    )
    parser.add_argument(
        "--alive",
        action="store_true",
        help="liveness: exit 0 for NOT_SERVING too (the process answers); 1 only for no "
        "answer, a timeout or SERVICE_UNKNOWN",
    )
    parser.add_argument(
        "--connect",
        action="store_true",
        help="probe the browser gateway: the health check over Connect (HTTP/1.1, JSON)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print {"target", "service", "healthy", "message"} as JSON on stdout',
    )
    return parser


def check(
    target: Target,
    service: str = "",
    timeout: float = 3.0,
    ca_file: Path | None = None,
    *,
    alive: bool = False,
) -> tuple[int, str]:
    """(exit code, message) for one health check of `service` at `target`; with `alive`,
    any SERVING/NOT_SERVING answer counts as healthy (a liveness probe)."""
    what = f"{target.address} {service or '(server)'}"
    with sync_channel(target.address, ca_file) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
            if code == grpc.StatusCode.NOT_FOUND:
                return NOT_SERVING, f"unhealthy: {what}: SERVICE_UNKNOWN (not served on this port)"
            name = code.name if code is not None else "error"
            return NOT_SERVING, f"unhealthy: {what}: no answer ({name}: {details})"
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    if reply.status == health_pb2.HealthCheckResponse.SERVING:
        return SERVING, f"healthy: {what}: {status}"
    if alive and reply.status == health_pb2.HealthCheckResponse.NOT_SERVING:
        return SERVING, f"alive: {what}: {status} (answers; not ready)"
    return NOT_SERVING, f"unhealthy: {what}: {status}"


def check_connect(
    target: Target,
    service: str = "",
    timeout: float = 3.0,
    ca_file: Path | None = None,
    *,
    alive: bool = False,
) -> tuple[int, str]:
    """`check`, asked of the browser gateway over Connect: POST
    /grpc.health.v1.Health/Check with a JSON body, over https verified with `ca_file` (or
    BOULEVARD_TLS_CA_FILE) when set. Connect's `not_found` is SERVICE_UNKNOWN, as gRPC's
    NOT_FOUND is."""
    what = f"{target.address} {service or '(platform)'} over Connect"
    ca = ca_file_from_env(ca_file)  # as sync_channel: the argument, else BOULEVARD_TLS_CA_FILE
    scheme = "https" if ca else "http"
    request = urllib.request.Request(
        f"{scheme}://{target.address}/grpc.health.v1.Health/Check",
        data=json.dumps({"service": service}).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    context = ssl.create_default_context(cafile=str(ca)) if ca else None
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as reply:
            status = str(json.loads(reply.read()).get("status", "UNKNOWN"))
    except urllib.error.HTTPError as exc:  # an answer, with a Connect error in its body
        try:
            code = str(json.loads(exc.read()).get("code", exc.code))
        except ValueError:
            code = str(exc.code)
        if code == "not_found":
            return NOT_SERVING, f"unhealthy: {what}: SERVICE_UNKNOWN (not served here)"
        return NOT_SERVING, f"unhealthy: {what}: {code}"
    # Refused, timed out, TLS failed, not HTTP/1.1 (a gRPC port answers with HTTP/2 frames),
    # not JSON.
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return NOT_SERVING, f"unhealthy: {what}: no answer ({exc})"
    if status == "SERVING":
        return SERVING, f"healthy: {what}: {status}"
    if alive and status == "NOT_SERVING":
        return SERVING, f"alive: {what}: {status} (answers; not ready)"
    return NOT_SERVING, f"unhealthy: {what}: {status}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed the reason; keep its exit code (2)
        return exc.code if isinstance(exc.code, int) else USAGE
    if not args.timeout > 0:
        parser.print_usage(sys.stderr)
        print("error: --timeout must be more than 0", file=sys.stderr)
        return USAGE
    return report(
        args.target,
        args.service,
        args.timeout,
        args.tls_ca,
        as_json=args.json,
        alive=args.alive,
        connect=args.connect,
    )


def report(
    target: Target,
    service: str,
    timeout: float,
    ca_file: Path | None,
    *,
    as_json: bool = False,
    alive: bool = False,
    connect: bool = False,
) -> int:
    """Check, print the verdict (a line, or with `as_json` one JSON document on stdout) and
    return the exit code: what both `python -m boulevard.cli.healthcheck` and `boulevard
    healthcheck` do."""
    tls = {"ca_file": ca_file} if ca_file else {}
    probe = check_connect if connect else check
    code, message = probe(target, service, timeout, **tls, alive=alive)
    if as_json:
        print(json.dumps({"target": target.address, "service": service,
                          "healthy": code == SERVING, "message": message}))  # fmt: skip
    else:
        print(message, file=sys.stdout if code == SERVING else sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
