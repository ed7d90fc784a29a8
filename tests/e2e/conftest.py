"""The whole platform for e2e tests: a real nats-server and the four services, each its own
process on free loopback ports; everything is stopped after the test."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from boulevard.cli.up import wait_serving
from boulevard.platform.identity import OPERATOR as OPERATOR_ROLE
from tests.support.identity import auth_env, mint
from tests.support.nats import NatsHandle, start_test_nats
from tests.support.processes import SERVICES, ServiceProcess, service_env

TOKEN_KEY = "e2e-token-key-0123456789abcdef0123456789abcdef"
# An operator's bearer JWT from the test issuer (tests/support/identity.py).
OPERATOR_NAME = "e2e-operator"
OPERATOR = mint(OPERATOR_NAME, (OPERATOR_ROLE,), ttl=6 * 3600)
REVEAL_SECONDS = 12


@dataclass
class Platform:
    nats: NatsHandle
    env: dict[str, str]
    log_dir: Path
    services: dict[str, ServiceProcess] = field(default_factory=dict)

    def address(self, name: str) -> str:
        return self.services[name].address

    def start(self, name: str) -> ServiceProcess:
        return asyncio.run(self.astart(name))

    async def astart(self, name: str) -> ServiceProcess:
        proc = ServiceProcess(name, self.env, self.log_dir).start()
        self.services[name] = proc
        await wait_serving(proc.address, 30, proc.process)
        return proc

    async def arestart(self, name: str) -> ServiceProcess:
        self.services[name].stop()
        return await self.astart(name)

    def logs(self) -> str:
        return "\n".join(f"--- {n}\n{p.log()[-3000:]}" for n, p in self.services.items())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


FAILED = pytest.StashKey[bool]()


@pytest.fixture(scope="session")
def shared_platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    """One platform for the whole e2e session: each test makes its own games, so they do
    not see each other; tests that kill a service start it again before they end."""
    tmp_path = tmp_path_factory.mktemp("platform")
    nats = start_test_nats(tmp_path / "nats")
    env = service_env(
        nats,
        tmp_path / "data",
        {
            "BOULEVARD_TOKEN_KEY": TOKEN_KEY,
            **auth_env(),
            # Seats have this long to reveal their seeds (tests/e2e/test_fair_dice.py waits
            # it out once; every other test reveals at once).
            "BOULEVARD_ENGINE_REVEAL_SECONDS": str(REVEAL_SECONDS),
        },
    )
    p = Platform(nats, env, tmp_path)
    try:
        for name in SERVICES:
            p.start(name)
        yield p
    except BaseException:
        print(p.logs())
        raise
    finally:
        for proc in p.services.values():
            proc.stop()
        nats.stop()


@pytest.fixture
def platform(shared_platform: Platform, request: pytest.FixtureRequest) -> Iterator[Platform]:
    yield shared_platform
    if request.node.stash.get(FAILED, False):
        print(shared_platform.logs())  # shown by pytest for the failed test
    for name, proc in list(shared_platform.services.items()):
        if proc.process is None or proc.process.poll() is not None:
            shared_platform.start(name)  # a test that failed mid-crash leaves it running


def deadline(seconds: float) -> float:
    return time.monotonic() + seconds
