"""The route gap closed (docs/security.md): on the namespaced cluster running the shipped
cluster config, a nats-server holding a service's certificate (same CA, naming `nats` and
the services, as every service pod mounts) cannot join as a route; the same server with the
routes' own certificate can (so the refusal is the certificate's, not the network's).

Needs root, ip, nft and tc (tests/support/netns.py): skipped locally without them, naming
what is missing; CI=true fails instead."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from boulevard.messaging.server import nats_server_binary
from boulevard.platform.tls import Pki
from tests.support.netns import NetnsCluster, missing_tools

pytestmark = pytest.mark.e2e


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[NetnsCluster]:
    missing = missing_tools()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the route certificate test; missing: {', '.join(missing)}")
        pytest.skip(f"needs {', '.join(missing)} (network namespaces)")
    c = NetnsCluster(tmp_path / "netns")
    try:
        yield c.start()
    finally:
        c.stop()


def routes_of(cluster: NetnsCluster, index: int) -> set[str]:
    varz = json.loads(cluster.monitor(index, "/routez") or "{}")
    return {r.get("remote_name", "") for r in varz.get("routes") or []}


def wait_for_cluster(cluster: NetnsCluster, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(
            {f"nats-{j}" for j in range(3) if j != i} <= routes_of(cluster, i) for i in range(3)
        ):
            return
        time.sleep(0.5)
    raise AssertionError(f"the three nodes did not route to each other: {routes_of(cluster, 0)}")


def rogue(cluster: NetnsCluster, tmp: Path, cert: Pki, name: str) -> subprocess.Popen[bytes]:
    """A nats-server in the services' namespace that dials nats-0's route port with `cert`."""
    tmp.mkdir(parents=True, exist_ok=True)
    conf = tmp / "rogue.conf"
    conf.write_text(
        f"server_name: {name}\nlisten: 127.0.0.1:4333\n"
        "cluster {\n  name: boulevard\n  listen: 0.0.0.0:6333\n"
        f'  tls {{\n    cert_file: "{cert.cert}"\n    key_file: "{cert.key}"\n'
        f'    ca_file: "{cert.ca_cert}"\n    timeout: 2\n  }}\n'
        "  routes: [nats://nats-0.nats-headless:6222]\n}\n"
    )
    return cluster.svc.popen([nats_server_binary(), "-c", str(conf)], os.environ, tmp / "rogue.log")


def test_a_service_certificate_is_refused_as_a_route(cluster: NetnsCluster, tmp_path: Path) -> None:
    assert cluster.pki is not None and cluster.route_pki is not None
    wait_for_cluster(cluster)
    for cert, name, joins in ((cluster.pki, "rogue-service", False),
                              (cluster.route_pki, "rogue-route", True)):  # fmt: skip
        proc = rogue(cluster, tmp_path / name, cert, name)
        try:
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline and name not in routes_of(cluster, 0):
                time.sleep(0.5)
            assert (name in routes_of(cluster, 0)) == joins, (
                f"{name}: routes of nats-0 {routes_of(cluster, 0)}\n"
                + cluster.nodes[0].log()[-2000:]
            )
        finally:
            proc.terminate()
            proc.wait(10)
    # nats-0 said why: the certificate names no route host (verify_cert_and_check_known_urls).
    assert "Router connection closed: Authentication Failure" in cluster.nodes[0].log()
