"""nats-server processes as one JetStream cluster on loopback, each with its own store and
`sync_interval: always`; any node can be SIGKILLed and started again on its store. What
`boulevard up --cluster 3` runs, and what the cluster test kills nodes of."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from boulevard.messaging.server import free_port, nats_server_binary


class ClusterNode:
    def __init__(self, name: str, folder: Path, port: int, route_port: int) -> None:
        self.name = name
        self.folder = folder
        self.port = port
        self.route_port = route_port
        self.process: subprocess.Popen[bytes] | None = None

    def url_of(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def config(self, routes: list[int]) -> str:
        store = str((self.folder / "store").resolve())
        route_list = ", ".join(f'"nats-route://127.0.0.1:{p}"' for p in routes)
        return (
            f"server_name: {self.name}\n"
            f'listen: "127.0.0.1:{self.port}"\n'
            f'jetstream {{\n  store_dir: "{store}"\n  sync_interval: always\n}}\n'
            "max_payload: 8MB\n"
            f'cluster {{\n  name: boulevard\n  listen: "127.0.0.1:{self.route_port}"\n'
            f"  routes: [{route_list}]\n}}\n"
        )

    def start(self, routes: list[int]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        conf = self.folder / "nats.conf"
        conf.write_text(self.config(routes))
        log = open(self.folder / "nats.log", "ab")  # noqa: SIM115 - lives with the process
        self.process = subprocess.Popen(
            [nats_server_binary(), "-c", str(conf)], stdout=log, stderr=log,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    if s.recv(4).startswith(b"INFO"):
                        return
            except OSError:
                time.sleep(0.05)
        raise TimeoutError(f"{self.name} did not start")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None


class NatsCluster:
    def __init__(self, folder: Path, size: int = 3, first_port: int = 0) -> None:
        # first_port: clients on first_port, first_port+1, …; routes 2000 above. 0: free ports.
        self.nodes = [
            ClusterNode(
                f"n{i}",
                folder / f"n{i}",
                first_port + i if first_port else free_port(),
                first_port + 2000 + i if first_port else free_port(),
            )
            for i in range(size)
        ]

    @property
    def url(self) -> str:
        """Every node, comma-separated (what NATS_URL takes for a cluster)."""
        return ",".join(f"nats://127.0.0.1:{n.port}" for n in self.nodes)

    def routes(self) -> list[int]:
        return [n.route_port for n in self.nodes]

    def start(self) -> NatsCluster:
        for node in self.nodes:
            node.start(self.routes())
        return self

    def node(self, name: str) -> ClusterNode:
        return next(n for n in self.nodes if n.name == name)

    def restart(self, node: ClusterNode) -> None:
        node.start(self.routes())

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
