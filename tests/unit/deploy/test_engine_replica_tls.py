"""The gateway and matchmaking's bots call each engine replica by its own name
(engine-0.engine-headless, …) over TLS: the certificate that the deploy docs and the Secret
template make (`boulevard tls-certs … --host …`) must name every replica, or gRPC refuses
the handshake and the replica gets none of its games. Checked by a real gRPC handshake:
that certificate, made by the code that makes it, served on loopback, and each replica's
name verified as gRPC verifies it (`grpc.ssl_target_name_override`)."""

from __future__ import annotations

import re
import shlex
import tempfile
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from boulevard.messaging.server import free_port
from boulevard.platform.tls import make_pki, server_credentials
from tests.unit.deploy.support import K8S, ROOT
from tests.unit.deploy.test_kubernetes import engine_replica_names

OPERATIONS = ROOT / "docs" / "operations.md"


def hosts_of_commands(text: str, folder: str) -> list[list[str]]:
    """The --host values of each `boulevard tls-certs <folder> …` command in `text` (the
    docs' `tls`, the Secret template comment's `DIR`), continuation lines and `# ` joined."""
    joined = re.sub(r"\\\n\s*", " ", text)  # shell continuations
    joined = re.sub(r"\n#\s*", " ", joined)  # a comment's lines
    found = []
    for command in re.findall(rf"boulevard tls-certs {folder} --host [^\n`]*", joined):
        words = shlex.split(command)
        found.append([words[i + 1] for i, w in enumerate(words) if w == "--host"])
    return found


def server_certificate_hosts() -> dict[str, list[str]]:
    """Where the services' certificate is made, with the hosts it names."""
    docs = hosts_of_commands(OPERATIONS.read_text(), "tls")
    template = hosts_of_commands((K8S / "secret.example.yaml").read_text(), "DIR")
    assert len(docs) == 1 and len(template) == 1, (docs, template)
    return {"docs/operations.md": docs[0], "secret.example.yaml": template[0]}


async def handshake(pki_dir: Path, hosts: list[str], name: str) -> bool:
    """Whether a gRPC client verifying `name` accepts a server whose certificate (from
    `make_pki`, the code behind `boulevard tls-certs`) names `hosts`."""
    # A folder of its own: make_pki keeps a certificate that names at least these hosts.
    pki = make_pki(Path(tempfile.mkdtemp(dir=pki_dir)), hosts)
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    port = free_port()
    server.add_secure_port(f"127.0.0.1:{port}", server_credentials(pki.cert, pki.key))
    await server.start()
    credentials = grpc.ssl_channel_credentials(pki.ca_cert.read_bytes())
    options = [("grpc.ssl_target_name_override", name)]
    try:
        async with grpc.aio.secure_channel(f"127.0.0.1:{port}", credentials, options) as ch:
            try:
                await health_pb2_grpc.HealthStub(ch).Check(
                    health_pb2.HealthCheckRequest(), timeout=5
                )
            except grpc.aio.AioRpcError as err:
                assert err.code() is grpc.StatusCode.UNAVAILABLE, err
                return False
            return True
    finally:
        await server.stop(None)


@pytest.mark.parametrize("where", ["docs/operations.md", "secret.example.yaml"])
async def test_the_service_certificate_names_every_engine_replica(
    where: str, tmp_path: Path
) -> None:
    hosts = server_certificate_hosts()[where]
    for address in engine_replica_names():
        name = address.rsplit(":", 1)[0]
        assert await handshake(tmp_path, hosts, name), f"{where}: {hosts} do not cover {name}"
    # and still the Services by name, which clients naming one engine use
    for service in ("engine", "matchmaking", "dice", "ledger", "gateway", "nats"):
        assert service in hosts, where


async def test_a_name_the_certificate_does_not_cover_is_refused(tmp_path: Path) -> None:
    """The check above can fail: gRPC refuses a replica the certificate does not name (a
    wildcard covers one label only)."""
    assert not await handshake(tmp_path, ["engine", "*.engine-headless"], "engine-0.elsewhere")
    assert not await handshake(tmp_path, ["engine"], "engine-0.engine-headless")
    assert not await handshake(tmp_path, ["*.engine-headless"], "a.b.engine-headless")
