"""The gateway serves every RPC the protos declare: its routes come from the descriptors,
and they are exactly the paths of the generated Connect stubs (the committed `*_connect.py`)."""

import inspect
import re

import grpc
from google.protobuf.message import Message

from boulevard.api.v1 import dice_connect, engine_connect, ledger_connect, matchmaking_connect
from services.gateway.app import PROTO_SERVICES
from services.gateway.forward import CODES, endpoints
from services.gateway.settings import GatewaySettings

STUBS = {
    "matchmaking": matchmaking_connect,
    "engine": engine_connect,
    "dice": dice_connect,
    "ledger": ledger_connect,
}


def no_channel(_request: Message) -> grpc.aio.Channel:
    raise AssertionError("no call is made here")


def test_every_generated_route_is_forwarded() -> None:
    for name, service in PROTO_SERVICES.items():
        generated = set(re.findall(r'"(/boulevard\.v1\.\w+/\w+)"', inspect.getsource(STUBS[name])))
        assert generated, name
        assert set(endpoints(service, no_channel)) == generated, name


def test_no_service_streams_requests() -> None:
    # Browsers cannot stream a request over HTTP/1.1, and the gateway forwards no such method.
    for service in PROTO_SERVICES.values():
        assert not [m.name for m in service.methods if m.client_streaming], service.full_name


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
