from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from nats.aio.client import Client as NATS

from boulevard.platform.identity import LocalIssuer
from tests.support.identity import session_issuer
from tests.support.nats import DockerNats, TestNats, start_test_nats

# Property tests draw the same examples on every `make test` run, so a red CI names a change,
# never a lucky draw (one run failed on a 1-in-256 chance before). `make explore` draws fresh
# ones each run: run it after touching a game's rules, and turn any failure it finds into an
# explicit @example. No example has a deadline: on a loaded 2-core machine one took over
# Hypothesis's default 200 ms and failed a test whose property held (speed is the benches'
# business, never a test's).
settings.register_profile("ci", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


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


@pytest.fixture
def issuer() -> LocalIssuer:
    """The test session's token issuer: `issuer.mint("alice")` is alice's bearer token, and
    `issuer.jwks_path` the JWKS file services under test verify against."""
    return session_issuer()
