"""`boulevard up`: the whole platform on one machine, with one command.

Starts an embedded nats-server (JetStream, `sync_interval: always`, data under
`<data-dir>/nats`) unless NATS_URL is set, then the services as separate processes (their
logs in `<data-dir>/logs/<service>.log`, or on this terminal with `--verbose`); waits until
each reports SERVING, prints where they listen, plays a demo game that a person can follow
(the same table as `boulevard watch`), audits it, and on Ctrl-C (or SIGTERM) stops
everything in reverse order. The first start in a data dir also makes the secrets the
services share (`secrets.env`, 0600) and a local token issuer (`issuer/`, see
`boulevard login`).

It supervises the services: one that exits, for whatever reason, is started again after a
backoff (0.5 s, doubling to 30 s, back to 0.5 s once it has stayed up a minute), and the
output says so with its restart count. Only Ctrl-C or SIGTERM stops the platform. With
`--cluster N` it runs N nats-servers as one JetStream cluster, and restarts a dead one.

Exit codes: 0 stopped on request (or, with --exit-after-demo, the demo's audits passed);
1 the platform could not start or a demo audit failed; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import nats
from grpc_health.v1 import health_pb2, health_pb2_grpc

from boulevard.cli import output
from boulevard.cli.healthcheck import SERVING, check, parse_target
from boulevard.cli.login import local_issuer
from boulevard.games import REGISTRY
from boulevard.messaging.cluster import ClusterNode, NatsCluster
from boulevard.messaging.identities import NatsNames
from boulevard.messaging.server import NatsServer
from boulevard.messaging.streams import ensure_stream, platform_streams
from boulevard.platform import tls
from boulevard.platform.identity import OPERATOR
from boulevard.platform.settings import Settings
from boulevard.platform.tls import Pki, make_pki

SERVICES = ("matchmaking", "engine", "dice", "ledger")
# The browser gateway (services/gateway): started after the four, whom it forwards to.
GATEWAY = "gateway"


def say(text: str) -> None:
    """Print a line now. Once nobody reads our output (Ctrl-C also ends the `| tee` that
    read `boulevard up | tee up.log`), carry on without it: a BrokenPipeError here left
    `stop()` unrun and the NATS server, in a session of its own, running."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Python's own recipe: point stdout at /dev/null, so no later write or the flush at
        # exit raises again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


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


def gateway_url(settings: Settings, use_tls: bool) -> str:
    return f"{'https' if use_tls else 'http'}://{settings.grpc_host}:{settings.gateway_port}"


def gateway_serving(url: str, ca_file: Path | None = None, timeout: float = 1.0) -> bool:
    """Whether the gateway at `url` answers the platform's health check SERVING (over
    Connect with JSON, as a browser would: POST /grpc.health.v1.Health/Check)."""
    request = urllib.request.Request(
        f"{url}/grpc.health.v1.Health/Check",
        data=b"{}",
        headers={"content-type": "application/json"},
        method="POST",
    )
    context = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as reply:
            return bool(reply.status == 200 and b'"SERVING"' in reply.read())
    except (OSError, urllib.error.URLError, ValueError):
        return False


async def wait_gateway(
    url: str, timeout: float, child: subprocess.Popen[bytes], ca_file: Path | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(gateway_serving, url, ca_file):
        if child.poll() is not None:
            raise RuntimeError(f"the gateway for {url} exited with {child.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no SERVING answer from the gateway at {url} within {timeout}s")
        await asyncio.sleep(0.1)


# BOT_SIGNING_KEY: the Ed25519 seed the operator's bots sign their moves with
# (docs/auditing.md); the engine's receipt key is kept in <data_dir>/engine/signing-key.
SECRETS = ("BOULEVARD_TOKEN_KEY", "BOULEVARD_BOT_SIGNING_KEY")


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


# Each role's key when it is given in the environment rather than kept in the data dir.
SIGNING_KEYS = {
    "engine": "BOULEVARD_ENGINE_SIGNING_KEY",
    "dice": "BOULEVARD_DICE_SIGNING_KEY",
    "ledger": "BOULEVARD_LEDGER_SIGNING_KEY",
    "bots": "BOULEVARD_BOT_SIGNING_KEY",
}


def publish_keys(data_dir: Path, env: dict[str, str]) -> None:
    """Extend the key history the engine serves (docs/auditing.md, "Pinned keys") with the
    keys the services made or were given. A key that changed without a signed handover is
    not added, only said: its rotation is `boulevard keys history --previous ROLE=SEED`."""
    from boulevard.audit.keys import key_history_path
    from boulevard.audit.signing import SigningKey
    from boulevard.cli import keys

    path = key_history_path(data_dir)
    try:
        current = {r: SigningKey.from_hex(env[n]) for r, n in SIGNING_KEYS.items() if env.get(n)}
        history = keys.publish(data_dir, path, current=current)
    except (OSError, ValueError) as err:
        say(f"  key history not extended: {err}")
        return
    say(f"  {'key history':<12} {path} ({len(history.entries)} keys, served by the engine)")


BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0
STABLE_AFTER = 60.0  # seconds up after which the backoff starts again from the first step


@dataclass
class Child:
    """One supervised service process."""

    name: str
    process: subprocess.Popen[bytes]
    address: str
    restarts: int = 0
    backoff: float = BACKOFF_FIRST
    started: float = field(default_factory=time.monotonic)
    restart_at: float | None = None  # set while it is down, waiting for its backoff
    announced: bool = True  # said SERVING since the last (re)start


def demo_operator_token(settings: Settings, data_dir: Path) -> str:
    """An operator token for the demo (it creates the demo game), from the local issuer."""
    return local_issuer(settings, data_dir).mint("demo-operator", (OPERATOR,), 3600)


class Platform:
    """The processes `up` started, stopped in reverse order."""

    def __init__(self) -> None:
        self.nats: NatsServer | None = None
        self.cluster: NatsCluster | None = None
        self._node_down: dict[str, float] = {}  # cluster node -> when it was seen dead
        self.children: list[Child] = []
        self.env: dict[str, str] = {}
        self.ca_file: Path | None = None  # with --tls: what health checks verify with
        self.logs: Path | None = None  # each service's log file goes here; None: this terminal
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None

    def spawn(self, name: str) -> subprocess.Popen[bytes]:
        # The child keeps its own copy of the descriptor.
        out = None if self.logs is None else open(self.logs / f"{name}.log", "ab")  # noqa: SIM115
        try:
            return subprocess.Popen(
                [sys.executable, "-m", f"services.{name}"],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT if out else None,
            )
        finally:
            if out is not None:
                out.close()

    def supervise(self, poll: float = 0.2) -> None:
        """Restart exited services from a background thread until `stop()`."""
        if self._supervisor is not None:
            return
        self._supervisor = threading.Thread(
            target=self._supervise, args=(poll,), name="supervisor", daemon=True
        )
        self._supervisor.start()

    def _supervise(self, poll: float) -> None:
        while not self._stopping.wait(poll):
            with self._lock:
                if self.cluster is not None:
                    for node in self.cluster.nodes:
                        self._look_after_node(self.cluster, node)
                for child in self.children:
                    self._look_after(child)

    def _look_after_node(self, cluster: NatsCluster, node: ClusterNode) -> None:
        """A cluster node that died is started again on its store after a second."""
        if node.process is not None and node.process.poll() is None:
            return
        now = time.monotonic()
        down = self._node_down.setdefault(node.name, now)
        if down == now:
            code = node.process.poll() if node.process is not None else None
            say(f"  nats {node.name:<7} exited with code {code}; restarting in 1s")
        elif now - down >= 1.0 and not self._stopping.is_set():
            try:
                cluster.restart(node)
            except (OSError, TimeoutError) as exc:
                say(f"  nats {node.name:<7} did not start again: {exc}")
                self._node_down[node.name] = now
                return
            del self._node_down[node.name]
            say(f"  nats {node.name:<7} restarted on {node.url}")

    def _look_after(self, child: Child) -> None:
        now = time.monotonic()
        code = child.process.poll()
        if code is None:
            if not child.announced and self._serving(child):
                child.announced = True
                say(f"  {child.name:<12} SERVING again on {child.address} "
                    f"(pid {child.process.pid}, restart {child.restarts})")  # fmt: skip
            elif now - child.started >= STABLE_AFTER:
                child.backoff = BACKOFF_FIRST
            return
        if child.restart_at is None:
            child.restart_at = now + child.backoff
            say(f"  {child.name:<12} exited with code {code}; restarting in "
                f"{child.backoff:g}s (restart {child.restarts + 1})")  # fmt: skip
            child.backoff = min(child.backoff * 2, BACKOFF_MAX)
            return
        if now >= child.restart_at and not self._stopping.is_set():
            child.process = self.spawn(child.name)
            child.restarts += 1
            child.started, child.restart_at, child.announced = now, None, False
            say(f"  {child.name:<12} restarted (pid {child.process.pid}, "
                f"restart {child.restarts})")  # fmt: skip

    def _serving(self, child: Child) -> bool:
        if child.name == GATEWAY:
            return gateway_serving(child.address, self.ca_file)
        return _serving(child.address, self.ca_file)

    def stop(self) -> None:
        self._stopping.set()
        if self._supervisor is not None:
            self._supervisor.join()
            self._supervisor = None
        with self._lock:
            for child in reversed(self.children):
                if child.process.poll() is None:
                    child.process.send_signal(signal.SIGTERM)
            for child in reversed(self.children):
                try:
                    child.process.wait(15)
                except subprocess.TimeoutExpired:
                    say(f"  {child.name} did not stop in 15 s; killing it")
                    child.process.kill()
                    child.process.wait()
            self.children.clear()
        if self.nats is not None:
            self.nats.stop()
            self.nats = None
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None


def _serving(address: str, ca_file: Path | None = None) -> bool:
    try:
        return check(parse_target(address), "", timeout=1.0, ca_file=ca_file)[0] == SERVING
    except ValueError:
        return False


async def update_streams(platform: Platform, settings: Settings) -> None:
    """As admin, bring the platform's streams to this version's configuration (making
    any that are missing)."""
    server = platform.nats or (platform.cluster.nodes[0] if platform.cluster else None)
    if server is None:
        return
    nc = await server.connect()
    try:
        for spec in platform_streams(settings).values():
            try:
                await ensure_stream(nc.jetstream(), spec, update=True)
            except (TimeoutError, nats.errors.Error) as exc:
                # A young cluster may be slow: the services make a missing stream anyway,
                # and use an older one as it is.
                say(f"  could not bring stream {spec.name} up to date now ({exc!r})")
    finally:
        await nc.close()


def _listening(host: str, port: int) -> bool:
    """Whether something accepts connections on host:port (a connect, not a bind: a port
    in TIME_WAIT after a stop is free to use again)."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def ports_in_use(settings: Settings, names: list[str], cluster: int) -> list[str]:
    """The ports this `up` would listen on that something else already answers on. With the
    default ports a second `boulevard up` found the first one's NATS and services answering
    there, took them for its own, said "platform up" and restarted its own services (which
    could not bind) forever."""
    wanted: list[tuple[str, str, int]] = []
    first_nats = settings.embedded_nats_port
    if "NATS_URL" not in os.environ and first_nats:
        wanted += [("nats-server", "127.0.0.1", first_nats + i) for i in range(cluster)]
    for name in names:
        wanted.append((name, settings.grpc_host, settings.port_of(name)))
        if metrics := settings.metrics_port_of(name):
            wanted.append((f"{name} metrics", settings.metrics_host, metrics))
    if set(SERVICES) <= set(names):
        wanted.append((GATEWAY, settings.grpc_host, settings.gateway_port))
        if metrics := settings.gateway_metrics_port:
            wanted.append((f"{GATEWAY} metrics", settings.metrics_host, metrics))
    return [
        f"{host}:{port} ({who})"
        for who, host, port in wanted
        if _listening("127.0.0.1" if host in ("0.0.0.0", "") else host, port)
    ]


async def start_platform(
    settings: Settings,
    names: list[str],
    data_dir: Path,
    timeout: float,
    verbose: bool = True,
    use_tls: bool = False,
    cluster: int = 1,
) -> tuple[Platform, dict[str, str]]:
    platform = Platform()
    env = dict(os.environ)
    env.update(local_secrets(data_dir))
    if not env.get("BOULEVARD_AUTH_JWKS"):
        # The local issuer of players' and operators' bearer tokens (`boulevard login`).
        env["BOULEVARD_AUTH_JWKS"] = str(local_issuer(settings, data_dir).jwks_path)
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
    platform.ca_file = ca_file
    try:
        if "NATS_URL" in os.environ:
            say(f"using NATS at {os.environ['NATS_URL']}")
        elif cluster > 1:
            platform.cluster = NatsCluster(
                data_dir / "nats-cluster",
                cluster,
                first_port=settings.embedded_nats_port,
                identities_dir=data_dir / "nats-identities",
                names=NatsNames.from_settings(settings),
                tls=pki,
            ).start()
            await platform.cluster.wait_jetstream(timeout)
            env["NATS_URL"] = platform.cluster.url
            env["BOULEVARD_STREAM_REPLICAS"] = str(min(cluster, 3))
            for node in platform.cluster.nodes:
                say(f"  nats {node.name:<7} {node.url} (JetStream cluster member, "
                    "every write synced to disk)")  # fmt: skip
            say(f"  streams and KV buckets at {min(cluster, 3)} replicas")
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
        if "NATS_URL" not in os.environ:
            # The services may create streams but never update them (docs/security.md):
            # the operator's admin identity brings the streams of an older data dir to this
            # version's configuration.
            replicas = int(env.get("BOULEVARD_STREAM_REPLICAS", settings.stream_replicas))
            await update_streams(
                platform, settings.model_copy(update={"stream_replicas": replicas})
            )
        addresses = {}
        platform.env = env
        if not verbose:
            platform.logs = data_dir / "logs"
            platform.logs.mkdir(parents=True, exist_ok=True)
        for name in names:
            addresses[name] = f"{settings.grpc_host}:{settings.port_of(name)}"
            platform.children.append(Child(name, platform.spawn(name), addresses[name]))
        if platform.cluster is not None:
            # A young cluster can be slow to create replicated streams: a service that
            # times out doing so exits, and the supervisor starts it again.
            platform.supervise()
        # A bar while the services start (seconds), on a terminal only; with --verbose
        # their own logs share this terminal, so no bar then.
        waiting = len(platform.children) if platform.logs is not None else 0
        with output.progress("waiting for the services to say SERVING", waiting) as step:
            for child in platform.children:
                watched = None if platform.cluster is not None else child.process
                await wait_serving(child.address, timeout, watched, ca_file)
                say(f"  {child.name:<12} {child.address} (gRPC, SERVING{', TLS' if pki else ''})")
                step()
        if "engine" in names:
            publish_keys(data_dir, env)
        if set(SERVICES) <= set(names):
            # Browsers: Connect and gRPC-Web on a port of its own, and the web app.
            url = gateway_url(settings, pki is not None)
            gateway = Child(GATEWAY, platform.spawn(GATEWAY), url)
            platform.children.append(gateway)
            await wait_gateway(url, timeout, gateway.process, ca_file)
            say(f"  {GATEWAY:<12} {url} (Connect + gRPC-Web for browsers; the web app at /)")
        if pki is not None:
            say(f"  TLS on gRPC and NATS; clients verify with the CA {pki.ca_cert}")
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
    if not 1 <= args.cluster <= 5:
        say(f"--cluster takes 1 to 5 servers, not {args.cluster}")
        return 2
    if not args.no_demo and args.demo not in REGISTRY:
        say(f"unknown game {args.demo!r}; choose from {', '.join(sorted(REGISTRY))}")
        return 2
    busy = ports_in_use(settings, names, args.cluster)
    if busy:
        say(
            f"cannot start: something already listens on {', '.join(busy)}. Is another "
            "`boulevard up` running? Stop it (Ctrl-C), or give this one other ports "
            "(BOULEVARD_EMBEDDED_NATS_PORT, BOULEVARD_<SERVICE>_PORT, "
            "BOULEVARD_<SERVICE>_METRICS_PORT, BOULEVARD_GATEWAY_PORT, "
            "BOULEVARD_GATEWAY_METRICS_PORT)"
        )
        return 1
    say("Boulevard — starting the platform on this machine")
    try:
        platform, addresses = asyncio.run(
            start_platform(
                settings,
                names,
                data_dir,
                args.timeout,
                verbose=args.verbose,
                use_tls=args.tls,
                cluster=args.cluster,
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
    platform.supervise()
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
                    demo_operator_token(settings, data_dir),
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
            time.sleep(0.2)
        return 0
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        say("stopping…")
        platform.stop()
        say("stopped")
