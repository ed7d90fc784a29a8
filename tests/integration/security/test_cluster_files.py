"""The route password of `boulevard up --cluster` stays the user's.

A local NATS cluster's routes are guarded by one password (cluster.py): whoever has it can
join the cluster as a server on 127.0.0.1 and read or write every stream, past every nkey
identity and permission. It is kept in `route.secret` (0600), but every node's generated
`nats-server.conf` names it too, and that file was written with the default mode (0644 under
the usual umask, in folders of 0755): any other user on the host could read it."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from boulevard.messaging.cluster import NatsCluster, route_secret

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    old = os.umask(0o022)  # the usual umask: what a user running `make run` has
    try:
        started = NatsCluster(tmp_path / "cluster", size=2).start()
    finally:
        os.umask(old)
    try:
        yield started
    finally:
        started.stop()


def test_no_file_naming_the_route_password_is_readable_by_others(
    cluster: NatsCluster, tmp_path: Path
) -> None:
    secret = route_secret(tmp_path / "cluster").encode()
    holding = [
        p for p in (tmp_path / "cluster").rglob("*") if p.is_file() and secret in p.read_bytes()
    ]
    # route.secret itself and each node's config (the server reads the password from it).
    assert len(holding) >= 1 + len(cluster.nodes), holding
    for path in holding:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path.relative_to(tmp_path)} is {oct(mode)}"
