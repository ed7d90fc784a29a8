"""The gateway serves every RPC the protos declare: its routes come from the descriptors,
and they are exactly the paths of the generated Connect stubs (the committed `*_connect.py`)."""

import inspect
import re
from pathlib import Path

import grpc
import httpx
from google.protobuf.message import Message

from boulevard.api.v1 import dice_connect, engine_connect, ledger_connect, matchmaking_connect
from services.gateway.app import PROTO_SERVICES, build_app
from services.gateway.forward import CODES, endpoints
from services.gateway.settings import GatewaySettings

STUBS = {
    "matchmaking": matchmaking_connect,
    "engine": engine_connect,
    "dice": dice_connect,
    "ledger": ledger_connect,
}


def no_channel(_request: Message) -> list[grpc.aio.Channel]:
    raise AssertionError("no call is made here")


def test_every_generated_route_is_forwarded() -> None:
    for name, service in PROTO_SERVICES.items():
        generated = set(re.findall(r'"(/boulevard\.v1\.\w+/\w+)"', inspect.getsource(STUBS[name])))
        assert generated, name
        streaming_requests = {
            f"/{service.full_name}/{m.name}" for m in service.methods if m.client_streaming
        }
        assert set(endpoints(service, no_channel)) == generated - streaming_requests, name


def test_only_the_submit_stream_streams_requests() -> None:
    # Browsers cannot stream a request over HTTP/1.1, and the gateway forwards no such
    # method: SubmitActions is for gRPC clients (a browser submits with SubmitAction).
    streaming = [
        f"{service.name}.{m.name}"
        for service in PROTO_SERVICES.values()
        for m in service.methods
        if m.client_streaming
    ]
    assert streaming == ["EngineService.SubmitActions"]


def test_every_grpc_status_has_its_connect_code() -> None:
    assert len(CODES) == len(grpc.StatusCode) - 1
    assert CODES[grpc.StatusCode.CANCELLED].name == "CANCELED"
    assert CODES[grpc.StatusCode.UNAUTHENTICATED].name == "UNAUTHENTICATED"


def test_the_default_origin_is_the_gateways_own() -> None:
    settings = GatewaySettings(gateway_port=8080)
    assert settings.allowed_origins() == ("http://127.0.0.1:8080", "http://localhost:8080")
    tls = GatewaySettings(
        gateway_port=8443, tls_cert_file="c.pem", tls_key_file="k.pem", grpc_host="play.example"
    )
    assert tls.allowed_origins() == ("https://play.example:8443",)
    given = GatewaySettings(gateway_origins="https://a.example, https://b.example/")
    assert given.allowed_origins() == ("https://a.example", "https://b.example")


async def get(web_dir: Path, path: str, **headers: str) -> httpx.Response:
    """One request to the gateway's ASGI app in-process (no backend is called)."""
    transport = httpx.ASGITransport(app=build_app(GatewaySettings(gateway_web_dir=web_dir)))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as c:
        return await c.get(path, headers=headers)


async def test_the_root_serves_the_built_app_or_says_it_is_not_built(tmp_path: Path) -> None:
    page = await get(tmp_path, "/")
    assert page.status_code == 200 and "not built" in page.text
    (tmp_path / "index.html").write_text("<!doctype html><title>built</title>")
    (tmp_path / "app.js").write_text("console.log(1)")
    assert "built" in (await get(tmp_path, "/")).text
    script = await get(tmp_path, "/app.js")
    assert script.headers["content-type"].startswith(("text/javascript", "application/javascript"))
    # a foreign page's request is refused before anything runs
    refused = await get(tmp_path, "/", origin="http://evil.example")
    assert refused.status_code == 403
