"""Start Boulevard processes for e2e tests on free loopback ports, and always clean up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from boulevard.messaging.server import free_port
from tests.support.nats import NatsHandle

SERVICES = ("matchmaking", "engine", "dice", "ledger")


def service_env(
    nats: NatsHandle | None, data_dir: Path, extra: Mapping[str, str] = {}
) -> dict[str, str]:
    """An environment with a free port per service, and when a NATS server is given, its
    URL and the folder of its identities (each service connects as itself)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOULEVARD_")}
    env.pop("NATS_URL", None)
    if nats is not None:
        env["NATS_URL"] = nats.url
        env["BOULEVARD_NATS_IDENTITIES_DIR"] = str(nats.identities_dir)
    env["BOULEVARD_DATA_DIR"] = str(data_dir)
    env["BOULEVARD_LOG_FORMAT"] = "json"
    for name in SERVICES:
        env[f"BOULEVARD_{name.upper()}_PORT"] = str(free_port())
        env[f"BOULEVARD_{name.upper()}_METRICS_PORT"] = str(free_port())
    env["BOULEVARD_GATEWAY_PORT"] = str(free_port())
    env["BOULEVARD_GATEWAY_METRICS_PORT"] = str(free_port())
    env.update(extra)
    return env


def lines_until(proc: subprocess.Popen[str], marker: str, seconds: float) -> list[str]:
    """What a process printed up to and including the first line with `marker` (or until it
    closed its output, or `seconds` passed): for waiting on `boulevard up`'s "platform up"."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if marker in line:
            break
    return lines


def stop_up(proc: subprocess.Popen[str]) -> None:
    """Stop a `boulevard up` a test started, whatever state the test left it in: Ctrl-C
    (SIGINT) lets it stop its services and its NATS; SIGKILL only if that hangs. Killing it
    outright would orphan them (its NATS runs in a session of its own)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def address(env: Mapping[str, str], service: str) -> str:
    return f"127.0.0.1:{env[f'BOULEVARD_{service.upper()}_PORT']}"


def metrics_url(env: Mapping[str, str], service: str) -> str:
    return f"http://127.0.0.1:{env[f'BOULEVARD_{service.upper()}_METRICS_PORT']}/metrics"


class ServiceProcess:
    """One service as its own process (`python -m services.<name>`)."""

    def __init__(self, name: str, env: Mapping[str, str], log_dir: Path) -> None:
        self.name = name
        self.env = dict(env)
        self.log_path = log_dir / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return address(self.env, self.name)

    def start(self) -> ServiceProcess:
        log = open(self.log_path, "ab")  # noqa: SIM115 - lives as long as the process
        self.process = subprocess.Popen(
            [sys.executable, "-m", f"services.{self.name}"],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        return self

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
