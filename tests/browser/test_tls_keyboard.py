"""The web app over TLS, played from the keyboard alone, while its seat tokens expire: a
real Chromium against `boulevard up --tls` whose seat tokens live 3 seconds.

One Las Vegas game is played through the page with arrows, Enter and the / filter only
(web/test/drive.mjs checks that the arrows reached each chosen move). Chromium accepts the
page from the platform's own certificate key only (pinned by its SPKI hash: the platform's
local CA is in no browser's store); without the pin it refuses it. The player sits at the
table for 2 × 3 s + 1 s before one move, so the seat's stream ends UNAUTHENTICATED at least
twice: the page renews the token (RenewPlayerToken) and goes on, missing nothing.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.messaging.server import free_port
from tests.browser.conftest import WebBuild
from tests.browser.test_play import Web, drive
from tests.support.processes import address, lines_until, service_env, stop_up

pytestmark = pytest.mark.e2e

TOKEN_SECONDS = 3


class TlsWeb(Web):
    def __init__(self, env: dict[str, str], url: str, tls: Path) -> None:
        super().__init__(env, url)
        self.tls = tls

    def spki(self) -> str:
        """base64(SHA-256(SubjectPublicKeyInfo)) of the gateway's certificate."""
        cert = x509.load_pem_x509_certificate((self.tls / "server.pem").read_bytes())
        der = cert.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return base64.b64encode(hashlib.sha256(der).digest()).decode()


@pytest.fixture(scope="module")
def tls_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsWeb]:
    data = tmp_path_factory.mktemp("web-tls") / "data"
    env = service_env(None, data)
    env["BOULEVARD_EMBEDDED_NATS_PORT"] = str(free_port())
    env["BOULEVARD_GATEWAY_PORT"] = str(free_port())
    env["BOULEVARD_SEAT_TOKEN_TTL_SECONDS"] = str(TOKEN_SECONDS)
    proc = subprocess.Popen(
        [sys.executable, "-m", "boulevard.cli.main", "up", "--no-demo", "--tls"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        lines = lines_until(proc, "platform up", 90)
        assert any("platform up" in line for line in lines), "".join(lines)
        port = env["BOULEVARD_GATEWAY_PORT"]
        assert any(f"https://127.0.0.1:{port}" in line for line in lines), "".join(lines)
        yield TlsWeb(env, f"https://127.0.0.1:{port}", data / "tls")
    finally:
        stop_up(proc)


@pytest.fixture(scope="module")
def played(
    web_build: WebBuild, tls_web: TlsWeb, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    lines = drive(
        web_build, tls_web, "web-kim", ("las_vegas",), doctor=False,
        shots=None, keyboard=True, spki=tls_web.spki(),
        pauseMs=(2 * TOKEN_SECONDS + 1) * 1000,
    )  # fmt: skip
    by: dict[str, Any] = {}
    for line in lines:
        by.setdefault(line["event"], line)
    return by


def test_chromium_plays_over_tls_and_refuses_the_page_without_the_platforms_key(
    played: dict[str, Any], tls_web: TlsWeb
) -> None:
    # Unpinned, Chromium does not know the local CA: no page at all.
    assert "ERR_CERT_AUTHORITY_INVALID" in (played["untrusted"]["refused"] or ""), played
    # Pinned, the whole game and its audit went over https, to the gateway alone.
    assert played["requests"]["origins"] == [tls_web.url]
    assert played["audit"]["verdict"].startswith("PASS"), played["audit"]


def test_a_whole_game_is_played_from_the_keyboard_alone(played: dict[str, Any]) -> None:
    finished = played["finished"]
    assert finished["moves"] > 0 and finished["keys"] == finished["moves"], finished
    assert played["story"]["errors"] == [], played["story"]


def test_the_page_renews_expired_seat_tokens_and_misses_nothing(
    played: dict[str, Any], tls_web: TlsWeb
) -> None:
    # The player's pause outlived two tokens, so the page renewed them.
    finished = played["finished"]
    assert finished["seconds"] > 2 * TOKEN_SECONDS + 1, finished
    assert played["requests"]["renewals"] >= 2, played["requests"]
    # No error shown: every expired stream and move was renewed and went on.
    assert played["story"]["errors"] == [], played["story"]
    # The story tells every event once, in order (a CommandAccepted says nothing there): each
    # new stream began at the version after the last one told.
    log = game_log(tls_web, finished["gameId"])
    envelopes = [events_pb2.EventEnvelope.FromString(e.envelope) for e in log.envelopes]
    told = [e.version for e in envelopes if e.type != "CommandAccepted"]
    assert played["story"]["versions"] == told


def game_log(web: TlsWeb, game_id: str) -> engine_pb2.GetGameLogResponse:
    ca = (web.tls / "ca.pem").read_bytes()
    creds = grpc.ssl_channel_credentials(root_certificates=ca)
    with grpc.secure_channel(address(web.env, "engine"), creds) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        return stub.GetGameLog(engine_pb2.GetGameLogRequest(game_id=game_id, page_size=1000))
