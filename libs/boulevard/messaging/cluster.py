"""nats-server processes as one JetStream cluster on loopback, each with its own store and
`sync_interval: always`; any node can be SIGKILLed and started again on its store. What
`boulevard up --cluster 3` runs, and what the cluster test kills nodes of.

Each node is a `NatsServer` (the same identities, permissions and TLS as the single
server) plus a `cluster` block. Routes need a password, made once per cluster folder (mode
0600): without it anyone on the host could join the cluster as a server and read every
stream.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from boulevard.messaging.identities import NatsNames
from boulevard.messaging.server import NatsServer, free_port
from boulevard.platform.tls import Pki


class ClusterNode(NatsServer):
    def __init__(
        self,
        name: str,
        folder: Path,
        port: int,
        route_port: int,
        route_secret: str,
        identities_dir: Path,
        names: NatsNames | None = None,
        tls: Pki | None = None,
    ) -> None:
        super().__init__(
            folder / "store",
            port=port,
            log_file=folder / "nats.log",
            identities_dir=identities_dir,
            names=names,
            tls=tls,
        )
        self.name = name
        self.route_port = route_port
        self.route_secret = route_secret
        self.routes: list[int] = []  # every node's route port (set by the cluster)

    def config_text(self) -> str:
        routes = ", ".join(
            f'"nats-route://route:{self.route_secret}@127.0.0.1:{p}"' for p in self.routes
        )
        return (
            f"server_name: {self.name}\n"
            + super().config_text()
            + "cluster {\n  name: boulevard\n"
            + f'  listen: "127.0.0.1:{self.route_port}"\n'
            + f'  authorization {{\n    user: route\n    password: "{self.route_secret}"\n  }}\n'
            + f"  routes: [{routes}]\n}}\n"
        )


def route_secret(folder: Path) -> str:
    """The cluster's route password, made once and kept in <folder>/route.secret (0600)."""
    path = folder / "route.secret"
    if path.exists():
        return path.read_text().strip()
    folder.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_hex(24)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secret + "\n")
    return secret


class NatsCluster:
    def __init__(
        self,
        folder: Path,
        size: int = 3,
        first_port: int = 0,
        identities_dir: Path | None = None,
        names: NatsNames | None = None,
        tls: Pki | None = None,
    ) -> None:
        # first_port: clients on first_port, first_port+1, …, routes 2000 above; 0: free ports.
        self.identities_dir = Path(identities_dir or folder / "nats-identities")
        secret = route_secret(folder)
        self.nodes = [
            ClusterNode(
                f"n{i}",
                folder / f"n{i}",
                first_port + i if first_port else free_port(),
                first_port + 2000 + i if first_port else free_port(),
                secret,
                self.identities_dir,
                names,
                tls,
            )
            for i in range(size)
        ]
        for node in self.nodes:
            node.routes = [n.route_port for n in self.nodes]

    @property
    def url(self) -> str:
        """Every node, comma-separated (what NATS_URL takes for a cluster)."""
        return ",".join(n.url for n in self.nodes)

    def start(self) -> NatsCluster:
        for node in self.nodes:
            node.start()
        return self

    def node(self, name: str) -> ClusterNode:
        return next(n for n in self.nodes if n.name == name)

    def restart(self, node: NatsServer) -> None:
        node.start()

    def kill(self) -> None:  # NatsHandle: the whole cluster at once
        for node in self.nodes:
            node.kill()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
