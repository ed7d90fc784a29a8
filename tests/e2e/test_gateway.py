"""The browser gateway (services/gateway) in front of the real services: Connect unary and
server streams over HTTP/1.1, gRPC-Web framing, the same auth, limits and error codes as
gRPC, and CORS open only to the platform's own origin."""

from __future__ import annotations

import asyncio
import json
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import grpc
import httpx
import pytest
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType

from boulevard.api.v1 import (
    engine_connect,
    engine_pb2,
    engine_pb2_grpc,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
)
from boulevard.messaging.server import free_port
from tests.e2e.conftest import Platform
from tests.e2e.test_games import create
from tests.support.identity import mint
from tests.support.keys import seat_key

pytestmark = pytest.mark.e2e

ENGINE = "/boulevard.v1.EngineService"
MATCHMAKING = "/boulevard.v1.MatchmakingService"
KEY = seat_key(0).public_hex


class Gateway:
    """`python -m services.gateway` as its own process, pointed at the platform."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.env = {**env, "BOULEVARD_GATEWAY_PORT": str(self.port)}
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Gateway:
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "services.gateway"],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()
            try:
                reply = httpx.post(f"{self.url}/grpc.health.v1.Health/Check", json={}, timeout=1.0)
                if reply.status_code == 200 and reply.json() == {"status": "SERVING"}:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"the gateway did not serve: {self.log.read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def gateway(shared_platform: Platform) -> Iterator[Gateway]:
    gw = Gateway(shared_platform.env, shared_platform.log_dir / "gateway.log").start()
    try:
        yield gw
    finally:
        gw.stop()


def watch_game(gateway: Gateway, request: bytes) -> AbstractContextManager[httpx.Response]:
    """WatchGame through the gateway over the Connect protocol (binary), as a browser's
    stream: `request` is a serialized WatchGameRequest."""
    return httpx.stream(
        "POST",
        f"{gateway.url}{ENGINE}/WatchGame",
        content=envelope(request),
        headers={"content-type": "application/connect+proto"},
        timeout=10,
    )


def envelope(message: bytes, flags: int = 0) -> bytes:
    """One length-prefixed frame, as Connect streams and gRPC-Web use."""
    return struct.pack(">BI", flags, len(message)) + message


def frames(data: bytes) -> list[tuple[int, bytes]]:
    out = []
    while data:
        flags, size = struct.unpack(">BI", data[:5])
        out.append((flags, data[5 : 5 + size]))
        data = data[5 + size :]
    return out


def new_game(platform: Platform) -> engine_pb2.CreateGameResponse:
    async def run() -> engine_pb2.CreateGameResponse:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            return await create(engine_pb2_grpc.EngineServiceStub(channel), "las_vegas", 2)

    return asyncio.run(run())


def grpc_error(
    platform: Platform, service: str, call: str, request: object, **kw: object
) -> grpc.aio.AioRpcError:
    """What the gRPC service itself answers to `request`: the error it raises."""

    async def run() -> grpc.aio.AioRpcError:
        async with grpc.aio.insecure_channel(platform.address(service)) as channel:
            stub = (
                engine_pb2_grpc.EngineServiceStub(channel)
                if service == "engine"
                else matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
            )
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await getattr(stub, call)(request, **kw)
            return caught.value

    return asyncio.run(run())


def test_connect_unary_json_answers_what_grpc_answers(platform: Platform, gateway: Gateway) -> None:
    game = new_game(platform)
    reply = httpx.post(f"{gateway.url}{ENGINE}/GetGame", json={"gameId": game.game_id})
    assert reply.status_code == 200, reply.text
    assert reply.http_version == "HTTP/1.1"
    body = reply.json()
    assert body["gameId"] == game.game_id
    assert body["game"] == "las_vegas"
    # The binary codec carries the same message.
    binary = httpx.post(
        f"{gateway.url}{ENGINE}/GetGame",
        content=engine_pb2.GetGameRequest(game_id=game.game_id).SerializeToString(),
        headers={"content-type": "application/proto"},
    )
    assert binary.status_code == 200
    parsed = engine_pb2.GetGameResponse.FromString(binary.content)
    assert parsed.game_id == game.game_id and parsed.version == int(body["version"])


def test_watch_game_is_a_connect_server_stream_over_http11(
    platform: Platform, gateway: Gateway
) -> None:
    game = new_game(platform)
    request = engine_pb2.WatchGameRequest(game_id=game.game_id).SerializeToString()
    versions: list[int] = []
    with watch_game(gateway, request) as response:
        assert response.status_code == 200
        assert response.http_version == "HTTP/1.1"
        buffer = b""
        for chunk in response.iter_bytes():
            buffer += chunk
            while len(buffer) >= 5:
                flags, size = struct.unpack(">BI", buffer[:5])
                if len(buffer) < 5 + size:
                    break
                frame, buffer = buffer[5 : 5 + size], buffer[5 + size :]
                assert flags == 0, f"the stream ended early: {frame!r}"
                update = engine_pb2.WatchGameResponse.FromString(frame)
                versions.append(update.event.version)
            if len(versions) >= 3:
                break
    assert versions[:3] == [1, 2, 3]


def test_grpc_web_frames_the_message_and_its_trailers(platform: Platform, gateway: Gateway) -> None:
    game = new_game(platform)
    reply = httpx.post(
        f"{gateway.url}{ENGINE}/GetGame",
        content=envelope(engine_pb2.GetGameRequest(game_id=game.game_id).SerializeToString()),
        headers={"content-type": "application/grpc-web+proto", "x-grpc-web": "1"},
    )
    assert reply.status_code == 200
    (data_flags, data), (trailer_flags, trailers) = frames(reply.content)
    assert data_flags == 0 and trailer_flags == 0x80
    assert engine_pb2.GetGameResponse.FromString(data).game_id == game.game_id
    assert b"grpc-status: 0" in trailers or b"grpc-status:0" in trailers

    missing = httpx.post(
        f"{gateway.url}{ENGINE}/GetGame",
        content=envelope(engine_pb2.GetGameRequest(game_id="g" + "0" * 32).SerializeToString()),
        headers={"content-type": "application/grpc-web+proto", "x-grpc-web": "1"},
    )
    status = missing.headers.get("grpc-status") or _trailer(missing.content, "grpc-status")
    assert status == str(grpc.StatusCode.NOT_FOUND.value[0])


def _trailer(body: bytes, name: str) -> str | None:
    for flags, frame in frames(body):
        if flags & 0x80:
            for line in frame.decode().split("\r\n"):
                key, _, value = line.partition(":")
                if key.strip().lower() == name:
                    return value.strip()
    return None


def test_the_generated_python_client_speaks_grpc_web(platform: Platform, gateway: Gateway) -> None:
    game = new_game(platform)

    async def run() -> tuple[str, str]:
        async with engine_connect.EngineServiceClient(
            gateway.url, protocol=ProtocolType.GRPC_WEB
        ) as client:
            got = await client.get_game(engine_pb2.GetGameRequest(game_id=game.game_id))
            with pytest.raises(ConnectError) as caught:
                await client.create_game(engine_pb2.CreateGameRequest(game="las_vegas"))
            return got.game_id, caught.value.code.name

    game_id, code = asyncio.run(run())
    assert game_id == game.game_id
    assert code == "UNAUTHENTICATED"


def test_without_a_token_the_answer_is_the_services_own(
    platform: Platform, gateway: Gateway
) -> None:
    request = matchmaking_pb2.CreateTicketRequest(game="las_vegas", min_seats=2, max_seats=2)
    direct = grpc_error(platform, "matchmaking", "CreateTicket", request)
    assert direct.code() == grpc.StatusCode.UNAUTHENTICATED
    reply = httpx.post(
        f"{gateway.url}{MATCHMAKING}/CreateTicket",
        json={"game": "las_vegas", "minSeats": 2, "maxSeats": 2, "publicKey": KEY},
    )
    assert reply.status_code == 401
    assert reply.json() == {"code": "unauthenticated", "message": direct.details()}


def test_a_token_is_passed_on_and_watch_ticket_streams(
    platform: Platform, gateway: Gateway
) -> None:
    token = mint("gateway-alice")
    created = httpx.post(
        f"{gateway.url}{MATCHMAKING}/CreateTicket",
        json={"game": "las_vegas", "minSeats": 2, "maxSeats": 2, "publicKey": KEY},
        headers={"authorization": f"Bearer {token}"},
    )
    assert created.status_code == 200, created.text
    ticket_id = created.json()["ticket"]["ticketId"]
    request = json.dumps({"ticketId": ticket_id}).encode()
    with httpx.stream(
        "POST",
        f"{gateway.url}{MATCHMAKING}/WatchTicket",
        content=envelope(request),
        headers={
            "content-type": "application/connect+json",
            "authorization": f"Bearer {token}",
        },
        timeout=10,
    ) as response:
        assert response.status_code == 200
        first = b""
        for chunk in response.iter_bytes():
            first += chunk
            if len(first) >= 5 and len(first) >= 5 + struct.unpack(">I", first[1:5])[0]:
                break
    flags, frame = frames(first[: 5 + struct.unpack(">I", first[1:5])[0]])[0]
    assert flags == 0, frame
    assert json.loads(frame)["ticket"]["ticketId"] == ticket_id
    cancelled = httpx.post(
        f"{gateway.url}{MATCHMAKING}/CancelTicket",
        json={"ticketId": ticket_id},
        headers={"authorization": f"Bearer {token}"},
    )
    assert cancelled.status_code == 200, cancelled.text


def test_a_limit_is_enforced_identically(platform: Platform, gateway: Gateway) -> None:
    request = engine_pb2.GetGameRequest(game_id="g" * 10_000)
    direct = grpc_error(platform, "engine", "GetGame", request)
    assert direct.code() == grpc.StatusCode.INVALID_ARGUMENT
    reply = httpx.post(f"{gateway.url}{ENGINE}/GetGame", json={"gameId": "g" * 10_000})
    assert reply.status_code == 400
    assert reply.json() == {"code": "invalid_argument", "message": direct.details()}


def test_cors_admits_the_platforms_own_origin_only(gateway: Gateway) -> None:
    own = f"http://127.0.0.1:{gateway.port}"
    preflight = {
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,authorization,connect-protocol-version",
    }
    ok = httpx.options(f"{gateway.url}{ENGINE}/GetGame", headers={"origin": own, **preflight})
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == own
    assert "authorization" in ok.headers["access-control-allow-headers"].lower()

    evil = "http://evil.example"
    refused = httpx.options(f"{gateway.url}{ENGINE}/GetGame", headers={"origin": evil, **preflight})
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers
    # A call sent anyway (a browser would not, after that preflight) is refused outright.
    sent = httpx.post(
        f"{gateway.url}{ENGINE}/GetGame", json={"gameId": "x"}, headers={"origin": evil}
    )
    assert sent.status_code == 403
    assert "access-control-allow-origin" not in sent.headers


def test_the_web_app_or_its_placeholder_is_served_at_the_root(gateway: Gateway) -> None:
    page = httpx.get(f"{gateway.url}/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "Boulevard" in page.text


@pytest.mark.parametrize("chars", [8193, 12_000, 40_000])
def test_a_token_over_8_kib_is_unauthenticated_over_grpc_and_connect(
    platform: Platform, gateway: Gateway, chars: int
) -> None:
    token = "x" * chars
    request = matchmaking_pb2.CreateTicketRequest(game="las_vegas", public_key=KEY)
    direct = grpc_error(
        platform,
        "matchmaking",
        "CreateTicket",
        request,
        metadata=(("authorization", f"Bearer {token}"),),
    )
    assert direct.code() == grpc.StatusCode.UNAUTHENTICATED, direct
    assert "longer than 8192" in direct.details()
    reply = httpx.post(
        f"{gateway.url}{MATCHMAKING}/CreateTicket",
        json={"game": "las_vegas", "publicKey": KEY},
        headers={"authorization": f"Bearer {token}"},
    )
    assert reply.status_code == 401, reply.text
    assert reply.json() == {"code": "unauthenticated", "message": direct.details()}


def test_a_header_block_over_64_kib_is_refused_by_grpc_itself(platform: Platform) -> None:
    # The transport's limit (BOULEVARD_GRPC_MAX_METADATA_BYTES), before any service code.
    request = matchmaking_pb2.CreateTicketRequest(game="las_vegas", public_key=KEY)
    refused = grpc_error(
        platform,
        "matchmaking",
        "CreateTicket",
        request,
        metadata=(("authorization", "Bearer " + "x" * 70_000),),
    )
    assert refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_json_unknown_keys_are_ignored_and_a_mistyped_value_is_refused(
    platform: Platform, gateway: Gateway
) -> None:
    game = new_game(platform)
    ok = httpx.post(
        f"{gateway.url}{ENGINE}/GetGame", json={"gameId": game.game_id, "noSuchField": 1}
    )
    assert ok.status_code == 200 and ok.json()["gameId"] == game.game_id
    snake = httpx.post(f"{gateway.url}{ENGINE}/GetGame", json={"game_id": game.game_id})
    assert snake.status_code == 200 and snake.json()["gameId"] == game.game_id
    bad = httpx.post(f"{gateway.url}{ENGINE}/GetGame", json={"gameId": {"not": "a string"}})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_argument", bad.text


def test_a_body_over_the_services_request_limit_is_resource_exhausted(gateway: Gateway) -> None:
    big = engine_pb2.GetGameRequest(game_id="g", player_token="t" * 300_000).SerializeToString()
    reply = httpx.post(
        f"{gateway.url}{ENGINE}/GetGame", content=big, headers={"content-type": "application/proto"}
    )
    assert reply.json()["code"] == "resource_exhausted", reply.text


def test_health_of_one_named_service_and_of_an_unknown_name(gateway: Gateway) -> None:
    named = httpx.post(
        f"{gateway.url}/grpc.health.v1.Health/Check", json={"service": "boulevard.v1.DiceService"}
    )
    assert named.json() == {"status": "SERVING"}
    unknown = httpx.post(f"{gateway.url}/grpc.health.v1.Health/Check", json={"service": "nope"})
    assert unknown.status_code == 404 and unknown.json()["code"] == "not_found"


def test_a_closed_browser_stream_frees_its_watch_slot(platform: Platform, gateway: Gateway) -> None:
    """Each seat may hold 4 WatchGame streams; a browser that goes away must give its slot
    back (the gateway ends its gRPC call), or 4 reloads would lock the seat out."""
    game = new_game(platform)
    request = engine_pb2.WatchGameRequest(
        game_id=game.game_id, player_token=game.player_tokens[0]
    ).SerializeToString()
    for attempt in range(10):
        with watch_game(gateway, request) as response:
            first = next(response.iter_raw())
            flags = first[0]
            assert flags == 0, f"stream {attempt} was refused: {first!r}"
        time.sleep(0.2)  # the disconnect reaches the gateway, which ends the call


def scrape(gateway: Gateway) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """The gateway's /metrics (its own port, as every service's), by sample name and labels."""
    from prometheus_client.parser import text_string_to_metric_families

    url = f"http://127.0.0.1:{gateway.env['BOULEVARD_GATEWAY_METRICS_PORT']}/metrics"
    reply = httpx.get(url, timeout=5)
    assert reply.status_code == 200
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(reply.text)
        for sample in family.samples
    }


def sample(
    metrics: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return metrics.get((name, frozenset(labels.items())), 0.0)


def test_metrics_count_calls_by_procedure_protocol_and_code_and_open_streams(
    platform: Platform, gateway: Gateway
) -> None:
    get_game, watch = "boulevard.v1.EngineService/GetGame", "boulevard.v1.EngineService/WatchGame"
    game = new_game(platform)
    unknown = engine_pb2.GetGameRequest(game_id="g" + "0" * 32).SerializeToString()
    before = scrape(gateway)
    assert httpx.post(f"{gateway.url}{ENGINE}/GetGame", json={"gameId": game.game_id}).is_success
    assert (
        httpx.post(f"{gateway.url}{ENGINE}/GetGame", json={"gameId": "g" + "0" * 32}).status_code
        == 404
    )
    httpx.post(
        f"{gateway.url}{ENGINE}/GetGame",
        content=envelope(unknown),
        headers={"content-type": "application/grpc-web+proto", "x-grpc-web": "1"},
    )
    after = scrape(gateway)

    def delta(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    requests = "boulevard_gateway_requests_total"
    assert delta(requests, procedure=get_game, protocol="connect", code="OK") == 1
    assert delta(requests, procedure=get_game, protocol="connect", code="NOT_FOUND") == 1
    assert delta(requests, procedure=get_game, protocol="grpc-web", code="NOT_FOUND") == 1
    assert delta(requests, procedure=get_game, protocol="grpc-web", code="OK") == 0
    seconds = "boulevard_gateway_forward_seconds_count"
    assert delta(seconds, procedure=get_game, protocol="connect") == 2
    assert delta(seconds, procedure=get_game, protocol="grpc-web") == 1
    assert sample(after, "boulevard_gateway_forward_seconds_sum", procedure=get_game,
                  protocol="connect") > 0  # fmt: skip

    # A stream is open while a browser reads it, and counted when it goes away.
    streams = "boulevard_gateway_streams_open"
    request = engine_pb2.WatchGameRequest(game_id=game.game_id).SerializeToString()
    with watch_game(gateway, request) as response:
        # Held, not a temporary: a dropped iterator closes the response, ending the stream.
        chunks = response.iter_raw()
        assert next(chunks)[0] == 0
        during = scrape(gateway)
        assert sample(during, streams, procedure=watch, protocol="connect") == 1 + sample(
            before, streams, procedure=watch, protocol="connect"
        )
    deadline = time.monotonic() + 10
    while True:
        closed = scrape(gateway)
        ended = sample(
            closed, requests, procedure=watch, protocol="connect", code="CANCELED"
        ) - sample(before, requests, procedure=watch, protocol="connect", code="CANCELED")
        if ended == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.1)  # the disconnect reaches the gateway, which ends the call
    assert ended == 1, {k: v for k, v in closed.items() if k[0] == requests}
    assert sample(closed, streams, procedure=watch, protocol="connect") == sample(
        before, streams, procedure=watch, protocol="connect"
    )


def test_the_container_probe_asks_the_gateway_over_connect(
    platform: Platform, gateway: Gateway
) -> None:
    """`python -m boulevard.cli.healthcheck --connect`, as compose and Kubernetes run it."""

    def probe(*args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in gateway.env.items() if k != "BOULEVARD_TLS_CA_FILE"}
        return subprocess.run(
            [sys.executable, "-m", "boulevard.cli.healthcheck", "--connect", *args],
            capture_output=True, text=True, timeout=30, env=env, check=False,
        )  # fmt: skip

    target = f"127.0.0.1:{gateway.port}"
    for args in ([target], [target, "boulevard.v1.EngineService"], [target, "--alive"]):
        result = probe(*args)
        assert result.returncode == 0, result.stderr
        assert "healthy" in result.stdout or "alive" in result.stdout
    unknown = probe(target, "boulevard.v1.NoSuchService")
    assert unknown.returncode == 1 and "SERVICE_UNKNOWN" in unknown.stderr
    # A gRPC port is not the gateway: no Connect answer there.
    grpc_port = probe(platform.address("engine"))
    assert grpc_port.returncode == 1 and "unhealthy" in grpc_port.stderr
