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
from tests.support.nats import NatsHandle, start_test_nats
from tests.support.processes import SERVICES, ServiceProcess, service_env

TOKEN_KEY = "e2e-token-key-0123456789abcdef0123456789abcdef"
OPERATOR = "e2e-operator"


@dataclass
class Platform:
    nats: NatsHandle
    env: dict[str, str]
    log_dir: Path
    services: dict[str, ServiceProcess] = field(default_factory=dict)

    def address(self, name: str) -> str:
        return self.services[name].address

    def start(self, name: str, extra_env: dict[str, str] | None = None) -> ServiceProcess:
        env = {**self.env, **(extra_env or {})}
        proc = ServiceProcess(name, env, self.log_dir).start()
        self.services[name] = proc
        asyncio.run(wait_serving(proc.address, 30, proc.process))
        return proc

    def restart(self, name: str) -> ServiceProcess:
        self.services[name].stop()
        return self.start(name)

    def logs(self) -> str:
        return "\n".join(f"--- {n}\n{p.log()[-3000:]}" for n, p in self.services.items())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


FAILED = pytest.StashKey[bool]()


@pytest.fixture
def platform(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Platform]:
    nats = start_test_nats(tmp_path / "nats")
    env = service_env(
        nats.url,
        tmp_path / "data",
        {"BOULEVARD_TOKEN_KEY": TOKEN_KEY, "BOULEVARD_OPERATOR_TOKEN": OPERATOR},
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
        if request.node.stash.get(FAILED, False):
            print(p.logs())  # shown by pytest for the failed test
        for proc in p.services.values():
            proc.stop()
        nats.stop()


def deadline(seconds: float) -> float:
    return time.monotonic() + seconds
