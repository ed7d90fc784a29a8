"""Test hosts with their own addresses: a three-node NATS cluster and the services, each on
its own Linux network namespace, so a fault can cut one host off from another.

Layout (one run; every name starts with PREFIX and the run's id, so leftovers of a run that
died are found and removed at the next start, `cleanup_leftovers`; a run that is still
going, as when CI and a developer share a machine, is left alone: its owner's pid is in
RUNS/<id>.pid):

    root namespace: bridge <PREFIX><id>br, 10.213.<net>.1 (the test process: bots, checks)
      ├─ veth ── netns <PREFIX>-<id>-nats-0   10.213.<net>.10   nats-server
      ├─ veth ── netns <PREFIX>-<id>-nats-1   10.213.<net>.11   nats-server
      ├─ veth ── netns <PREFIX>-<id>-nats-2   10.213.<net>.12   nats-server
      └─ veth ── netns <PREFIX>-<id>-svc      10.213.<net>.20   dice, ledger, engine

The NATS servers run deploy/nats/nats-cluster.conf as shipped, rendered the way
tests/integration/deploy does it: only the file paths move (the TLS files of a temporary CA
where Kubernetes mounts boulevard-tls, the store in a temporary folder). The listen
addresses (0.0.0.0:4222/8222/6222), the route TLS with CA verification, the routes by their
StatefulSet names (`nats-N.nats-headless`: each namespace's /etc/netns/<ns>/hosts maps them,
which `ip netns exec` mounts over /etc/hosts), `sync_interval: always`, the limits and the
permissions are the deployment's. POD_NAME and the identities' public keys come from the
environment, as the pods get them.

Traffic stays on the bridge and the veths made here. Needs root, `ip` (iproute2), `nft`
(nftables) and `tc`; `missing_tools()` names what is absent so a test can skip saying so.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from boulevard.cli.nats_identities import secrets_lines
from boulevard.messaging.server import nats_server_binary
from boulevard.platform.tls import Pki, make_pki

PREFIX = "bvnf"
ROOT = Path(__file__).resolve().parents[2]
NATS_DIR = ROOT / "deploy" / "nats"
NODES = 3
CLIENT_PORT, MONITOR_PORT, ROUTE_PORT = 4222, 8222, 6222
# Where deploy/k8s mounts the boulevard-tls and boulevard-nats-route-tls Secrets, and
# which file of our CA goes there.
MOUNTED_TLS = {  # clients' TLS needs no CA file on the server: clients show no certificate
    "/etc/boulevard/tls/server.pem": "cert",
    "/etc/boulevard/tls/server-key.pem": "key",
}
MOUNTED_ROUTE_TLS = {
    "/etc/boulevard/route-tls/server.pem": "cert",
    "/etc/boulevard/route-tls/server-key.pem": "key",
    "/etc/boulevard/route-tls/ca.pem": "ca_cert",
}
# The two certificates docs/operations.md has the operator make, from one CA.
SERVICE_HOSTS = ("nats", "matchmaking", "engine", "dice", "ledger")
ROUTE_HOSTS = ("*.nats-headless",)


def route_pki(pki: Pki, folder: Path) -> Pki:
    """The routes' own certificate, from the CA of `pki` (what `boulevard tls-certs` does
    with the CA's files copied into a second folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in (pki.ca_cert, pki.ca_key):
        shutil.copy(f, folder / f.name)
    return make_pki(folder, ROUTE_HOSTS)


def missing_tools() -> list[str]:
    """What this harness needs and this machine lacks (root counts as one)."""
    missing = [t for t in ("ip", "nft", "tc") if shutil.which(t) is None]
    if os.geteuid() != 0:
        missing.append("root")
    return missing


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=check)


RUNS = Path("/run") / PREFIX  # <run id>.pid: the process that owns a run's namespaces
RUN_ID_CHARS = 4  # secrets.token_hex(2)


def _live_runs() -> set[str]:
    """The ids of runs whose owning process is still alive."""
    live = set()
    for pidfile in RUNS.glob("*.pid") if RUNS.is_dir() else ():
        try:
            os.kill(int(pidfile.read_text()), 0)
        except (ValueError, ProcessLookupError):
            pidfile.unlink(missing_ok=True)
            continue
        except PermissionError:
            pass  # alive, someone else's
        live.add(pidfile.stem)
    return live


def cleanup_leftovers(run: str | None = None) -> None:
    """Remove every namespace, link, hosts folder and mount a run of this harness left
    (by name prefix), killing the processes still inside those namespaces first. Only
    dead runs' leftovers, plus `run`'s own (its finish): another run going on at the same
    time (its owner alive) keeps everything it made."""
    spared = _live_runs() - {run}

    def dead(run_id: str) -> bool:
        return run_id not in spared

    listed = sh("ip", "netns", "list", check=False).stdout.split("\n")
    for name in (line.split()[0] for line in listed if line.startswith(f"{PREFIX}-")):
        if not dead(name[len(PREFIX) + 1 :][:RUN_ID_CHARS]):
            continue
        for pid in sh("ip", "netns", "pids", name, check=False).stdout.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGCONT)
                os.kill(int(pid), signal.SIGKILL)
        sh("ip", "netns", "delete", name, check=False)
        shutil.rmtree(f"/etc/netns/{name}", ignore_errors=True)
    for line in sh("ip", "-o", "link", "show", check=False).stdout.splitlines():
        link = line.split(":")[1].strip().split("@")[0]
        if link.startswith(PREFIX) and dead(link[len(PREFIX) :][:RUN_ID_CHARS]):
            sh("ip", "link", "delete", link, check=False)
    for line in Path("/proc/mounts").read_text().splitlines():
        target = line.split()[1]
        _, marker, rest = target.partition(f"/{PREFIX}-")
        if marker and dead(rest[:RUN_ID_CHARS]):
            sh("umount", "-l", target, check=False)
    if run is not None:
        (RUNS / f"{run}.pid").unlink(missing_ok=True)


class Host:
    """One network namespace with one veth to the bridge."""

    def __init__(self, run: str, name: str, address: str, net: str) -> None:
        self.name = name
        self.netns = f"{PREFIX}-{run}-{name}"
        self.address = address
        self.link = f"{PREFIX}{run}{name[-1] if name.startswith('nats') else 's'}"

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return sh("ip", "netns", "exec", self.netns, *argv, check=check)

    def popen(
        self, argv: Sequence[str], env: Mapping[str, str], log: Path
    ) -> subprocess.Popen[bytes]:
        out = open(log, "ab")  # noqa: SIM115 - lives as long as the process
        # `ip netns exec` execs the command in place: the pid is the server's own.
        return subprocess.Popen(
            ["ip", "netns", "exec", self.netns, *argv], env=dict(env), stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip


class NatsNode:
    def __init__(self, index: int, host: Host, folder: Path, env: Mapping[str, str]) -> None:
        self.index = index
        self.name = f"nats-{index}"
        self.host = host
        self.folder = folder
        self.store = folder / "store"
        self.conf = folder / "nats-cluster.conf"
        self.env = {**env, "POD_NAME": self.name}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.store.mkdir(parents=True, exist_ok=True)
        self.process = self.host.popen(
            [nats_server_binary(), "-c", str(self.conf)], self.env, self.folder / "nats.log"
        )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            assert self.process is not None
            os.kill(self.process.pid, sig)

    def kill(self) -> None:
        if self.alive():
            assert self.process is not None
            self.signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        if self.alive():
            assert self.process is not None
            self.signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        path = self.folder / "nats.log"
        return path.read_text(errors="replace") if path.exists() else ""


def render_cluster_conf(pki: Pki, routes: Pki, store: Path) -> str:
    """deploy/nats/nats-cluster.conf with only its file paths moved (module docstring)."""
    text = (NATS_DIR / "nats-cluster.conf").read_text()
    for files, mounts in ((pki, MOUNTED_TLS), (routes, MOUNTED_ROUTE_TLS)):
        for mounted, attr in mounts.items():
            assert mounted in text, f"nats-cluster.conf no longer reads {mounted}"
            text = text.replace(mounted, str(getattr(files, attr)))
    old = "store_dir: /data/jetstream"
    assert old in text, f"nats-cluster.conf no longer says {old!r}"
    return text.replace(old, f'store_dir: "{store / "jetstream"}"')


class NetnsCluster:
    """The namespaces, the NATS cluster in them, and the faults (see the module docstring).
    `start()` then `stop()` (always: a fixture's finalizer)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.run = secrets.token_hex(2)
        used = sh("ip", "-o", "-4", "addr", "show", check=False).stdout
        # A /24 no other run on this machine uses (each run routes its own).
        self.net = next(
            str(n) for n in (16 + secrets.randbelow(200) for _ in range(1000))
            if f" 10.213.{n}." not in used
        )  # fmt: skip
        base = f"10.213.{self.net}"
        self.bridge = f"{PREFIX}{self.run}br"
        self.gateway = f"{base}.1"
        self.hosts = [
            Host(self.run, f"nats-{i}", f"{base}.{10 + i}", self.net) for i in range(NODES)
        ]
        self.svc = Host(self.run, "svc", f"{base}.20", self.net)
        self.identities_dir = folder / "identities"
        self.pki: Pki | None = None
        self.route_pki: Pki | None = None
        self.nodes: list[NatsNode] = []
        self.mounts: list[Path] = []
        self.filled: list[int] = []  # nodes whose disk `fill_disk` filled

    # -- setup and teardown ------------------------------------------------------------

    def start(self) -> NetnsCluster:
        cleanup_leftovers()
        RUNS.mkdir(parents=True, exist_ok=True)
        (RUNS / f"{self.run}.pid").write_text(str(os.getpid()))
        self.folder.mkdir(parents=True, exist_ok=True)
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        # The routes' names, and `nats` (the Kubernetes Service the services connect to)
        # on every node, as the Service spreads over the pods: resolvers return all three.
        names = "\n".join(
            [f"{h.address} {h.name}.nats-headless {h.name}" for h in self.hosts]
            + [f"{h.address} nats" for h in self.hosts]
        )
        for host in [*self.hosts, self.svc]:
            sh("ip", "netns", "add", host.netns)
            etc = Path(f"/etc/netns/{host.netns}")
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(f"127.0.0.1 localhost\n{names}\n")
            sh("ip", "link", "add", host.link, "type", "veth", "peer", "name", f"{host.link}p")
            sh("ip", "link", "set", f"{host.link}p", "netns", host.netns)
            host.run("ip", "link", "set", f"{host.link}p", "name", "eth0")
            host.run("ip", "addr", "add", f"{host.address}/24", "dev", "eth0")
            host.run("ip", "link", "set", "eth0", "up")
            host.run("ip", "link", "set", "lo", "up")
            sh("ip", "link", "set", host.link, "master", self.bridge)
            sh("ip", "link", "set", host.link, "up")
        # The deployment's two certificates (docs/operations.md): boulevard-tls for `nats`
        # and the services, boulevard-nats-route-tls for the routes.
        self.pki = make_pki(self.folder / "tls", SERVICE_HOSTS)
        self.route_pki = route_pki(self.pki, self.folder / "route-tls")
        keys = dict(line.split("=", 1) for line in secrets_lines(self.identities_dir))
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOULEVARD_")}
        env.update({k: v for k, v in keys.items() if k.endswith("_NKEY")})
        for i, host in enumerate(self.hosts):
            node = NatsNode(i, host, self.folder / host.name, env)
            node.folder.mkdir(parents=True, exist_ok=True)
            node.conf.write_text(render_cluster_conf(self.pki, self.route_pki, node.store))
            shutil.copy(NATS_DIR / "nats-permissions.conf", node.folder)
            self.nodes.append(node)
        for node in self.nodes:
            node.start()
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        for mount in self.mounts:
            sh("umount", "-l", str(mount), check=False)
        cleanup_leftovers(self.run)

    # -- for clients -------------------------------------------------------------------

    @property
    def nats_url(self) -> str:
        """The URL deploy/k8s gives the services: the `nats` Service (TLS, as with a CA
        configured every service speaks it). The certificate names `nats` and
        `*.nats-headless`; Python's TLS refuses a one-label wildcard, so the servers'
        own names would not verify from a client anyway."""
        return f"tls://nats:{CLIENT_PORT}"

    @property
    def admin_urls(self) -> list[str]:
        """The servers by address, for the test process (the root namespace has no names)."""
        return [f"tls://{h.address}:{CLIENT_PORT}" for h in self.hosts]

    def monitor(self, index: int, path: str) -> str:
        """A monitoring endpoint (/varz, /jsz, /healthz) of one node: its body, or "" when
        the node does not answer (the monitoring port listens on every address)."""
        url = f"http://{self.hosts[index].address}:{MONITOR_PORT}{path}"
        try:
            with urllib.request.urlopen(url, timeout=3) as reply:
                return str(reply.read().decode())
        except urllib.error.HTTPError as err:  # /healthz says what fails with a 503
            return str(err.read().decode(errors="replace"))
        except OSError:
            return ""

    # -- faults ------------------------------------------------------------------------

    def _nft(self, host: Host, rules: str, what: str = "cut") -> None:
        script = self.folder / f"{host.name}-{what}.nft"
        script.write_text(rules)
        host.run("nft", "-f", str(script))

    def cut(self, index: int, peers: Sequence[int], *, inbound_only: bool = False) -> None:
        """Drop what node `index` receives from `peers` (nodes); unless inbound_only, also
        what it sends them. Clients (the services' namespace) still reach it."""
        host = self.hosts[index]
        addresses = ", ".join(self.hosts[p].address for p in peers)
        rules = (
            "table inet bvnf_cut\ndelete table inet bvnf_cut\n"
            "table inet bvnf_cut {\n"
            "  chain input { type filter hook input priority 0; "
            f"ip saddr {{ {addresses} }} drop; }}\n"
        )
        if not inbound_only:
            rules += (
                "  chain output { type filter hook output priority 0; "
                f"ip daddr {{ {addresses} }} drop; }}\n"
            )
        self._nft(host, rules + "}\n")

    def isolate(self, index: int) -> None:
        """Node `index` can reach nobody and nobody it: its link is down."""
        self.hosts[index].run("ip", "link", "set", "eth0", "down")

    def heal(self) -> None:
        """Every partition, cut and slow link undone."""
        for host in self.hosts:
            host.run("ip", "link", "set", "eth0", "up")
            host.run("nft", "delete", "table", "inet", "bvnf_cut", check=False)
            host.run("nft", "delete", "table", "inet", "bvnf_slow", check=False)
            host.run("tc", "qdisc", "del", "dev", "eth0", "root", check=False)

    def split(self, minority: Sequence[int]) -> None:
        """A majority/minority partition between the nodes (clients reach all)."""
        majority = [i for i in range(NODES) if i not in minority]
        for i in minority:
            self.cut(i, majority)
        for i in majority:
            self.cut(i, minority)

    def slow(self, index: int, delay_ms: int, loss_percent: int) -> str:
        """Node `index`'s outgoing packets delayed and some lost; what was applied.

        With the kernel's netem qdisc: `delay_ms` with a quarter of it as jitter, and
        `loss_percent` lost. Kernels without sch_netem (this project's CI and dev
        containers have none) get the nearest thing the kernel has: a token bucket (tbf)
        capping the link at 512 kbit/s with up to `delay_ms` of queueing, and nftables
        dropping `loss_percent` of the packets at random."""
        host = self.hosts[index]
        netem = host.run(
            "tc", "qdisc", "replace", "dev", "eth0", "root", "netem", "delay",
            f"{delay_ms}ms", f"{delay_ms // 4}ms", "loss", f"{loss_percent}%", check=False,
        )  # fmt: skip
        if netem.returncode == 0:
            return f"netem delay {delay_ms}±{delay_ms // 4} ms, loss {loss_percent}%"
        host.run(
            "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", "512kbit",
            "burst", "16kbit", "latency", f"{delay_ms}ms",
        )  # fmt: skip
        self._nft(host, (
            "table inet bvnf_slow\ndelete table inet bvnf_slow\n"
            "table inet bvnf_slow {\n  chain output { type filter hook output priority 0; "
            f"numgen random mod 100 < {loss_percent} drop; }}\n}}\n"
        ), "slow")  # fmt: skip
        return (
            f"no sch_netem in this kernel: tbf 512 kbit/s (≤{delay_ms} ms queue), "
            f"nft random loss {loss_percent}%"
        )

    def small_disk(self, index: int, size: str) -> None:
        """Restart node `index` on a size-capped tmpfs holding its store (copied over)."""
        node = self.nodes[index]
        node.stop()
        mount = self.folder / f"{PREFIX}-{self.run}-disk{index}"
        mount.mkdir(exist_ok=True)
        sh("mount", "-t", "tmpfs", "-o", f"size={size}", f"{PREFIX}-disk", str(mount))
        self.mounts.append(mount)
        if node.store.exists():
            shutil.copytree(node.store, mount / "store", dirs_exist_ok=True)
        node.store = mount / "store"
        assert self.pki is not None and self.route_pki is not None
        node.conf.write_text(render_cluster_conf(self.pki, self.route_pki, node.store))
        node.start()

    def fill_disk(self, index: int) -> None:
        """Fill what is left of node `index`'s small disk (`small_disk` first) with a file
        of its own, as another writer to the volume would: the store's next write fails
        with ENOSPC, and nats-server then stops JetStream on that node (docs/operations.md,
        "A full disk")."""
        mount = self.nodes[index].store.parent
        assert mount in self.mounts, f"nats-{index} is not on a small disk"
        with contextlib.suppress(OSError), open(mount / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        self.filled.append(index)

    def jetstream_stopped(self, index: int) -> bool:
        """Whether node `index` says (on /jsz) its JetStream is off."""
        return '"disabled": true' in self.monitor(index, "/jsz").replace(
            '"disabled":true', '"disabled": true'
        )

    def free_disk(self, size: str = "1g") -> None:
        """Every capped store's tmpfs grown to `size`: the disk freed, as an operator would."""
        for mount in self.mounts:
            sh("mount", "-o", f"remount,size={size}", str(mount))

    def restart(self, index: int) -> None:
        self.nodes[index].kill()
        self.nodes[index].start()


def main(argv: Sequence[str] | None = None) -> int:
    """`sudo .venv/bin/python -m tests.support.netns [folder]`: start the namespaced cluster
    by hand, print how to reach it, and remove everything on Ctrl-C."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("folder", nargs="?", type=Path, default=Path("netns-cluster"))
    args = parser.parse_args(argv)
    missing = missing_tools()
    if missing:
        print(f"needs: {', '.join(missing)}")
        return 2
    cluster = NetnsCluster(args.folder.resolve())
    try:
        cluster.start()
        time.sleep(5)
        for i, host in enumerate(cluster.hosts):
            varz = json.loads(cluster.monitor(i, "/varz") or "{}")
            print(f"{host.name}: netns {host.netns}, {host.address}, routes {varz.get('routes')}")
        assert cluster.pki is not None
        print(f"services' netns: {cluster.svc.netns} ({cluster.svc.address}); from there "
              f"NATS_URL={cluster.nats_url} BOULEVARD_TLS_CA_FILE={cluster.pki.ca_cert} "
              f"BOULEVARD_NATS_IDENTITIES_DIR={cluster.identities_dir} "
              f"BOULEVARD_STREAM_REPLICAS=3; run a service with "
              f"`ip netns exec {cluster.svc.netns} python -m services.engine`")  # fmt: skip
        print("Ctrl-C stops the cluster and removes the namespaces")
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        cluster.stop()


if __name__ == "__main__":
    raise SystemExit(main())
