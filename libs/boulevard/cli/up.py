"""`boulevard up`: the whole platform on one machine, with one command.

Starts an embedded nats-server (JetStream, `sync_interval: always`, data under
`<data-dir>/nats`) unless NATS_URL is set, then the services as separate processes (their
logs in `<data-dir>/logs/<service>.log`, or on this terminal with `--verbose`); waits until
each reports SERVING, prints where they listen, plays a demo game that a person can follow
(the same table as `boulevard watch`), audits it, and on Ctrl-C (or SIGTERM) stops
everything in reverse order.

Exit codes: 0 stopped on request (or, with --exit-after-demo, the demo's audits passed);
1 the platform could not start, a service died, or a demo audit failed; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from boulevard.games import REGISTRY
from boulevard.messaging.identities import NatsNames
from boulevard.messaging.server import NatsServer
from boulevard.platform import tls
from boulevard.platform.settings import Settings
from boulevard.platform.tls import Pki, make_pki

SERVICES = ("matchmaking", "engine", "dice", "ledger")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("up", help="start NATS and the services, play a demo game")
    p.add_argument("--data-dir", type=Path, default=None, help="where NATS keeps its store")
    p.add_argument(
        "--services", default=",".join(SERVICES), help="comma-separated services to start"
    )
    p.add_argument("--no-demo", action="store_true", help="do not play the demo game")
    p.add_argument(
        "--demo",
        default="lords_of_vegas",
        metavar="GAME",
        help="the game the demo plays (default: lords_of_vegas)",
    )
    p.add_argument(
        "--speed",
        type=float,
        default=2.0,
        help="demo turns shown per second on a terminal (0: as fast as it plays; default 2)",
    )
    p.add_argument(
        "--verbose", action="store_true", help="stream the services' logs here, not to files"
    )
    p.add_argument(
        "--exit-after-demo", action="store_true", help="stop everything once the demo ends"
    )
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for SERVING")
    p.add_argument(
        "--tls",
        action="store_true",
        help="serve gRPC and NATS over TLS, with a local CA and certificates made in "
        "<data-dir>/tls (clients: --tls-ca <data-dir>/tls/ca.pem)",
    )
    p.set_defaults(func=run)


def say(text: str) -> None:
    print(text, flush=True)


async def wait_serving(
    address: str,
    timeout: float,
    child: subprocess.Popen[bytes] | None = None,
    ca_file: Path | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    async with tls.channel(address, ca_file) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            if child is not None and child.poll() is not None:
                raise RuntimeError(f"the process for {address} exited with {child.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no SERVING answer from {address} within {timeout}s")
            await asyncio.sleep(0.1)


# BOT_SIGNING_KEY: the Ed25519 seed the operator's bots sign their moves with
# (docs/auditing.md); the engine's receipt key is kept in <data_dir>/engine/signing-key.
SECRETS = ("BOULEVARD_TOKEN_KEY", "BOULEVARD_OPERATOR_TOKEN", "BOULEVARD_BOT_SIGNING_KEY")


def local_secrets(data_dir: Path) -> dict[str, str]:
    """Secrets for a one-machine platform: from the environment when set, else made once
    and kept in <data_dir>/secrets.env (mode 0600), so a restart keeps tokens valid."""
    path = data_dir / "secrets.env"
    stored: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            name, _, value = line.partition("=")
            stored[name.strip()] = value.strip()
    missing = [n for n in SECRETS if n not in stored]
    if missing:
        for name in missing:
            stored[name] = secrets.token_hex(32)
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.writelines(f"{n}={stored[n]}\n" for n in SECRETS)
    return {n: os.environ.get(n) or stored[n] for n in SECRETS}


class Platform:
    """The processes `up` started, stopped in reverse order."""

    def __init__(self) -> None:
        self.nats: NatsServer | None = None
        self.children: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.env: dict[str, str] = {}

    def stop(self) -> None:
        for _name, child in reversed(self.children):
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for name, child in reversed(self.children):
            try:
                child.wait(15)
            except subprocess.TimeoutExpired:
                say(f"  {name} did not stop in 15 s; killing it")
                child.kill()
                child.wait()
        self.children.clear()
        if self.nats is not None:
            self.nats.stop()
            self.nats = None


async def start_platform(
    settings: Settings,
    names: list[str],
    data_dir: Path,
    timeout: float,
    verbose: bool = True,
    use_tls: bool = False,
) -> tuple[Platform, dict[str, str]]:
    platform = Platform()
    env = dict(os.environ)
    env.update(local_secrets(data_dir))
    env["BOULEVARD_DATA_DIR"] = str(data_dir)  # the services keep their key files there
    pki: Pki | None = None
    if use_tls:
        if "NATS_URL" in os.environ:
            raise RuntimeError(
                "--tls starts its own NATS with TLS; with NATS_URL, configure TLS through "
                "BOULEVARD_TLS_CERT_FILE, BOULEVARD_TLS_KEY_FILE and BOULEVARD_TLS_CA_FILE"
            )
        pki = make_pki(data_dir / "tls")
        env["BOULEVARD_TLS_CERT_FILE"] = str(pki.cert)
        env["BOULEVARD_TLS_KEY_FILE"] = str(pki.key)
        env["BOULEVARD_TLS_CA_FILE"] = str(pki.ca_cert)
    ca_file = pki.ca_cert if pki else None
    try:
        if "NATS_URL" in os.environ:
            say(f"using NATS at {os.environ['NATS_URL']}")
        else:
            data_dir.mkdir(parents=True, exist_ok=True)
            platform.nats = NatsServer(
                data_dir / "nats",
                port=settings.embedded_nats_port,
                log_file=data_dir / "nats.log",
                tls=pki,
                names=NatsNames.from_settings(settings),
            ).start()
            env["NATS_URL"] = platform.nats.url
            say(
                f"  {'nats-server':<12} {platform.nats.url} (JetStream, every write synced to disk)"
            )
        addresses = {}
        logs = data_dir / "logs"
        if not verbose:
            logs.mkdir(parents=True, exist_ok=True)
        for name in names:
            # The child keeps its own copy of the descriptor.
            out = None if verbose else open(logs / f"{name}.log", "ab")  # noqa: SIM115, ASYNC230
            try:
                child = subprocess.Popen(
                    [sys.executable, "-m", f"services.{name}"],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT if out else None,
                )
            finally:
                if out is not None:
                    out.close()
            platform.children.append((name, child))
            addresses[name] = f"{settings.grpc_host}:{settings.port_of(name)}"
        for name, child in platform.children:
            await wait_serving(addresses[name], timeout, child, ca_file)
            say(f"  {name:<12} {addresses[name]} (gRPC, SERVING{', TLS' if pki else ''})")
        if pki is not None:
            say(f"  TLS on gRPC and NATS; clients verify with the CA {pki.ca_cert}")
        platform.env = env
        return platform, addresses
    except BaseException:
        platform.stop()
        raise


def run(args: argparse.Namespace) -> int:
    settings = Settings()
    names = [n.strip() for n in args.services.split(",") if n.strip()]
    unknown = sorted(set(names) - set(SERVICES))
    if unknown:
        say(f"unknown service(s): {', '.join(unknown)}; choose from {', '.join(SERVICES)}")
        return 2
    data_dir: Path = args.data_dir or settings.data_dir
    if not args.no_demo and args.demo not in REGISTRY:
        say(f"unknown game {args.demo!r}; choose from {', '.join(sorted(REGISTRY))}")
        return 2
    say("Boulevard — starting the platform on this machine")
    try:
        platform, addresses = asyncio.run(
            start_platform(
                settings, names, data_dir, args.timeout, verbose=args.verbose, use_tls=args.tls
            )
        )
    except (TimeoutError, RuntimeError, OSError) as exc:
        say(f"could not start the platform: {exc}")
        if not args.verbose:
            say(f"the services' logs are in {data_dir / 'logs'}")
        return 1
    say(f"  data in {data_dir.resolve()}")
    if not args.verbose:
        say(f"  logs in {(data_dir / 'logs').resolve()} (boulevard up --verbose shows them here)")
    stopping = False
    in_demo = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        if in_demo:  # the demo runs in this thread: interrupt it, then stop as usual
            raise KeyboardInterrupt

    previous: dict[int, Callable[..., object] | int | None] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, on_signal)
    try:
        if args.tls:
            # The demo, and whatever else this process calls, verifies the services.
            os.environ[tls.CA_ENV] = platform.env["BOULEVARD_TLS_CA_FILE"]
        if not args.no_demo:
            from boulevard.cli.demo import play_demo

            in_demo = True
            try:
                passed = play_demo(
                    addresses,
                    platform.env.get("BOULEVARD_OPERATOR_TOKEN", ""),
                    args.demo,
                    terminal=sys.stdout.isatty(),
                    speed=args.speed,
                    env=platform.env,
                )
            except KeyboardInterrupt:
                say("demo interrupted")
                return 0
            finally:
                in_demo = False
            if args.exit_after_demo:
                return 0 if passed else 1
            say("watch any game: boulevard watch <game_id>")
            say("audit any game: boulevard audit dice <game_id>; "
                "boulevard audit ledger --game <game_id>")  # fmt: skip
        say("platform up; press Ctrl-C to stop")
        while not stopping:
            for name, child in platform.children:
                if child.poll() is not None:
                    say(f"{name} exited with code {child.returncode}; stopping everything")
                    return 1
            time.sleep(0.2)
        return 0
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        say("stopping…")
        platform.stop()
        say("stopped")
