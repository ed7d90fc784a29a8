"""TLS for gRPC and NATS: a local certificate authority for `boulevard up --tls` (and
`boulevard tls-certs` for deployments), and the credentials servers and clients use.

A server serves TLS when it has a certificate and key (BOULEVARD_TLS_CERT_FILE,
BOULEVARD_TLS_KEY_FILE); a client verifies its peers against the CA in
BOULEVARD_TLS_CA_FILE. A process with a CA configured never falls back to plaintext, for
gRPC or for NATS (docs/security.md).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Every certificate covers the loopback names: health probes run beside the server.
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
CA_ENV = "BOULEVARD_TLS_CA_FILE"


CA_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=True,
    encipher_only=False,
    decipher_only=False,
)


@dataclass(frozen=True, slots=True)
class Pki:
    """The files of a CA and one server certificate it signed."""

    ca_cert: Path
    ca_key: Path
    cert: Path
    key: Path


def pki_paths(folder: Path) -> Pki:
    folder = Path(folder)
    return Pki(
        ca_cert=folder / "ca.pem",
        ca_key=folder / "ca-key.pem",
        cert=folder / "server.pem",
        key=folder / "server-key.pem",
    )


def _write(path: Path, data: bytes, private: bool) -> None:
    mode = 0o600 if private else 0o644
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Boulevard"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _alt_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _valid(path: Path, hosts: Sequence[str], margin: datetime.timedelta) -> bool:
    """Whether the certificate at `path` is good for `margin` more and names every host."""
    try:
        cert = x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError):
        return False
    if cert.not_valid_after_utc - margin < datetime.datetime.now(datetime.UTC):
        return False
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return True  # the CA
    have = {str(n.value) for n in names}
    return all(str(_alt_name(h).value) in have for h in hosts)


def make_pki(folder: Path, hosts: Sequence[str] = (), days: int = 365) -> Pki:
    """A CA and a server certificate for `hosts` (plus the loopback names), in `folder`.

    Kept while valid for another week and naming every host; otherwise the server
    certificate is made again (and the CA too when it is expiring), so running this again
    is harmless. Keys are EC P-256, files of mode 0600."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    paths = pki_paths(folder)
    wanted = list(dict.fromkeys([*LOCAL_HOSTS, *hosts]))
    week = datetime.timedelta(days=7)
    now = datetime.datetime.now(datetime.UTC)

    if paths.ca_key.exists() and _valid(paths.ca_cert, (), week):
        ca_key = serialization.load_pem_private_key(paths.ca_key.read_bytes(), None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        ca_cert = x509.load_pem_x509_certificate(paths.ca_cert.read_bytes())
        renew_ca = False
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_cert = (
            x509.CertificateBuilder()
            .subject_name(_name("Boulevard CA"))
            .issuer_name(_name("Boulevard CA"))
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days * 5))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(CA_KEY_USAGE, critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
            .sign(ca_key, hashes.SHA256())
        )
        _write(paths.ca_key, _pem_key(ca_key), private=True)
        _write(paths.ca_cert, ca_cert.public_bytes(serialization.Encoding.PEM), private=False)
        renew_ca = True

    if renew_ca or not paths.key.exists() or not _valid(paths.cert, wanted, week):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(hosts[0] if hosts else "localhost"))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.SubjectAlternativeName([_alt_name(h) for h in wanted]), critical=False
            )
            .add_extension(
                # Servers, and NATS servers routing to each other in a cluster.
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
            )
            .sign(ca_key, hashes.SHA256())
        )
        _write(paths.key, _pem_key(key), private=True)
        _write(paths.cert, cert.public_bytes(serialization.Encoding.PEM), private=False)
    return paths


def server_credentials(cert_file: Path, key_file: Path) -> grpc.ServerCredentials:
    return grpc.ssl_server_credentials([(key_file.read_bytes(), cert_file.read_bytes())])


def ca_file_from_env(ca_file: Path | str | None = None) -> Path | None:
    """The CA to verify servers with: the one given, else BOULEVARD_TLS_CA_FILE, else none."""
    chosen = ca_file or os.environ.get(CA_ENV) or None
    return Path(chosen) if chosen else None


def channel(address: str, ca_file: Path | str | None = None) -> grpc.aio.Channel:
    """An async gRPC channel to `address`: TLS verified against the CA (given, or from
    BOULEVARD_TLS_CA_FILE) when there is one, else plaintext."""
    ca = ca_file_from_env(ca_file)
    if ca is None:
        return grpc.aio.insecure_channel(address)
    return grpc.aio.secure_channel(address, grpc.ssl_channel_credentials(ca.read_bytes()))


def sync_channel(address: str, ca_file: Path | str | None = None) -> grpc.Channel:
    """`channel`, for synchronous code (the health probe)."""
    ca = ca_file_from_env(ca_file)
    if ca is None:
        return grpc.insecure_channel(address)
    return grpc.secure_channel(address, grpc.ssl_channel_credentials(ca.read_bytes()))


def client_ssl_context(ca_file: Path) -> ssl.SSLContext:
    """For NATS: verify the server against our CA only, TLS 1.2 at least."""
    context = ssl.create_default_context(cafile=str(ca_file))
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def nats_tls_url(url: str) -> str:
    """The URL with the `tls://` scheme, so nats-py refuses a server that offers no TLS."""
    return url.replace("nats://", "tls://")
