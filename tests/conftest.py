from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client as NATS

from boulevard.platform.identity import LocalIssuer
from tests.support.identity import session_issuer
from tests.support.nats import NatsHandle, start_test_nats


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsHandle]:
    """A fresh nats-server with JetStream on its own store, stopped after the test."""
    server = start_test_nats(tmp_path / "nats")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def nc(nats_server: NatsHandle) -> AsyncIterator[NATS]:
    client = await nats.connect(nats_server.url, max_reconnect_attempts=60, reconnect_time_wait=0.1)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
def issuer() -> LocalIssuer:
    """The test session's token issuer: `issuer.mint("alice")` is alice's bearer token, and
    `issuer.jwks_path` the JWKS file services under test verify against."""
    return session_issuer()
