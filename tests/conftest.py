from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from tests.support.nats import DockerNats, TestNats, start_test_nats


@pytest.fixture
def nats_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestNats | DockerNats]:
    """A fresh nats-server with JetStream on its own store, stopped after the test. It has
    no anonymous user: connect with `await nats_server.connect()` (admin) or
    `nats_server.connect("engine")`; services started in this process find their identity
    through BOULEVARD_NATS_IDENTITIES_DIR, set here."""
    server = start_test_nats(tmp_path / "nats")
    monkeypatch.setenv("BOULEVARD_NATS_IDENTITIES_DIR", str(server.identities_dir))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def nc(nats_server: TestNats | DockerNats) -> AsyncIterator[NATS]:
    """A NATS client as `admin` (test setup: may do anything but delete evidence)."""
    client = await nats_server.connect()
    try:
        yield client
    finally:
        await client.close()
