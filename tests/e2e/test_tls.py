"""`boulevard up --tls`: a local CA and certificates in the data dir, every gRPC port and
NATS over TLS. The demo game is played and audited through TLS (bots, spectator, both
audits, and the services among themselves over NATS); a client that verifies with the CA
gets in, a plaintext one is refused, on gRPC and on NATS."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import grpc
import httpx
import nats
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.messaging.identities import inbox_prefix
from boulevard.messaging.server import free_port
from boulevard.platform import tls
from tests.support.processes import SERVICES, address, lines_until, service_env, stop_up

pytestmark = pytest.mark.e2e


async def calls_over_tls(env: dict[str, str], ca: Path) -> None:
    for name in SERVICES:
        async with tls.channel(address(env, name), ca) as channel:
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5
            )
            assert reply.status == health_pb2.HealthCheckResponse.SERVING, name
    async with tls.channel(address(env, "engine"), ca) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await engine_pb2_grpc.EngineServiceStub(channel).GetGame(
                engine_pb2.GetGameRequest(game_id="no-such-game"), timeout=5
            )
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND  # the servicer answered


async def plaintext_grpc_is_refused(env: dict[str, str]) -> None:
    for name in SERVICES:
        async with grpc.aio.insecure_channel(address(env, name)) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(), timeout=3
                )
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, name


async def another_ca_is_refused(env: dict[str, str], other_ca: Path) -> None:
    """A server certificate our client did not expect (a man in the middle) is refused."""
    async with tls.channel(address(env, "engine"), other_ca) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=3
            )
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


async def nats_only_over_tls(port: int, data_dir: Path, ca: Path) -> None:
    seed = (data_dir / "nats-identities" / "admin.nk").read_text().strip()
    options = {"allow_reconnect": False, "max_reconnect_attempts": 0, "connect_timeout": 3}
    # A client speaking plaintext: the server says TLS is required, and answers a plaintext
    # CONNECT by closing the connection (no PONG, nothing read in the clear).
    with socket.create_connection(("127.0.0.1", port), timeout=3) as raw:
        info = raw.recv(65536)
        assert info.startswith(b"INFO ") and b'"tls_required":true' in info
        raw.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\nPING\r\n')
        answer = b""
        with contextlib.suppress(OSError):
            while chunk := raw.recv(4096):
                answer += chunk
        assert b"PONG" not in answer
    # nats-py, given the right key but not our CA, cannot verify the server: refused too.
    with pytest.raises(ssl.SSLCertVerificationError):
        await nats.connect(f"nats://127.0.0.1:{port}", nkeys_seed_str=seed, **options)  # type: ignore[arg-type]
    nc = await nats.connect(
        f"tls://127.0.0.1:{port}",
        nkeys_seed_str=seed,
        inbox_prefix=inbox_prefix("admin"),
        tls=tls.client_ssl_context(ca),
        **options,  # type: ignore[arg-type]
    )
    try:
        assert nc.is_connected
        assert (await nc.jetstream().stream_info("GAMES")).state.messages > 0  # the demo's
    finally:
        await nc.close()


def gateway_only_over_tls(env: dict[str, str], ca: Path, lines: list[str]) -> None:
    """The browser gateway serves HTTPS with the platform's certificate, forwards over TLS to
    the services, and answers no plaintext HTTP."""
    port = env["BOULEVARD_GATEWAY_PORT"]
    url = f"https://127.0.0.1:{port}"
    assert any("gateway" in line and url in line for line in lines), lines
    verified = ssl.create_default_context(cafile=str(ca))
    health = httpx.post(f"{url}/grpc.health.v1.Health/Check", json={}, verify=verified)
    assert health.json() == {"status": "SERVING"}
    games = httpx.post(f"{url}/boulevard.v1.EngineService/ListGames", json={}, verify=verified)
    assert games.status_code == 200 and games.json()["games"], games.text
    with pytest.raises(httpx.ConnectError):  # not our CA's: refused by the client
        httpx.post(
            f"{url}/grpc.health.v1.Health/Check", json={}, verify=ssl.create_default_context()
        )
    with pytest.raises(httpx.TransportError):  # plaintext on the TLS port: no answer
        httpx.post(f"http://127.0.0.1:{port}/grpc.health.v1.Health/Check", json={}, timeout=5)


def test_up_with_tls_plays_and_audits_the_demo_and_refuses_plaintext(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = service_env(None, data)
    env["BOULEVARD_EMBEDDED_NATS_PORT"] = str(free_port())
    proc = subprocess.Popen(
        [sys.executable, "-m", "boulevard.cli.main", "up", "--tls", "--speed", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines = lines_until(proc, "platform up", 280)
        out = "".join(lines)
        assert "platform up" in out, out[-4000:]
        assert "tls://127.0.0.1:" in out  # NATS
        for name in SERVICES:
            assert any(name in line and "SERVING, TLS" in line for line in lines), name
        assert out.count("    PASS  ") == 3, out[-3000:]  # the demo: dice, ledger, game over TLS
        ca = data / "tls" / "ca.pem"
        assert (data / "tls" / "server-key.pem").stat().st_mode & 0o777 == 0o600
        asyncio.run(calls_over_tls(env, ca))
        asyncio.run(plaintext_grpc_is_refused(env))
        gateway_only_over_tls(env, ca, lines)
        # The auditor's commands find the services as every command does: over TLS with
        # the CA in BOULEVARD_TLS_CA_FILE.
        audited = subprocess.run(
            [sys.executable, "-m", "boulevard.cli.main", "audit", "all", "--json"],
            env={**env, "BOULEVARD_TLS_CA_FILE": str(ca)},
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert audited.returncode == 0, audited.stdout + audited.stderr
        report = json.loads(audited.stdout)
        assert report["ok"] and report["audited"] >= 1 and report["ledger"]["ok"], report
        other = tls.make_pki(tmp_path / "other-ca")
        asyncio.run(another_ca_is_refused(env, other.ca_cert))
        asyncio.run(nats_only_over_tls(int(env["BOULEVARD_EMBEDDED_NATS_PORT"]), data, ca))
        # The container probe verifies with the CA too.
        probe = subprocess.run(
            [sys.executable, "-m", "boulevard.cli.healthcheck", address(env, "engine"),
             "boulevard.v1.EngineService", "--tls-ca", str(ca)],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert probe.returncode == 0, probe.stdout + probe.stderr
        plain_probe = subprocess.run(
            [sys.executable, "-m", "boulevard.cli.healthcheck", address(env, "engine")],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert plain_probe.returncode == 1
        # And the gateway's probe (--connect): HTTPS verified with the CA, as compose and
        # Kubernetes run it with BOULEVARD_TLS_CA_FILE set; plaintext gets no answer.
        gateway = f"127.0.0.1:{env['BOULEVARD_GATEWAY_PORT']}"
        connect_probe = subprocess.run(
            [sys.executable, "-m", "boulevard.cli.healthcheck", "--connect", gateway],
            env={**env, "BOULEVARD_TLS_CA_FILE": str(ca)},
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert connect_probe.returncode == 0, connect_probe.stdout + connect_probe.stderr
        plain_connect = subprocess.run(
            [sys.executable, "-m", "boulevard.cli.healthcheck", "--connect", gateway],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert plain_connect.returncode == 1, plain_connect.stdout
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
        assert proc.returncode == 0
    finally:
        stop_up(proc)
