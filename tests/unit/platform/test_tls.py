"""The local CA of `boulevard up --tls` and `boulevard tls-certs`: what it names, that it is
kept while valid and made again when not, and that settings refuse half a TLS setup."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from pydantic import ValidationError

from boulevard.platform.settings import Settings
from boulevard.platform.tls import make_pki, nats_tls_url


def names(path: Path) -> set[str]:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(n.value) for n in san}


def test_the_server_certificate_names_the_hosts_and_is_signed_by_the_ca(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "tls", ["engine", "*.nats-headless"])
    assert names(pki.cert) == {"localhost", "127.0.0.1", "::1", "engine", "*.nats-headless"}
    ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    cert = x509.load_pem_x509_certificate(pki.cert.read_bytes())
    cert.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for key in (pki.key, pki.ca_key):
        assert key.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "tls").stat().st_mode & 0o777 == 0o700


def test_a_valid_pki_is_kept_and_a_new_host_gets_a_new_certificate(tmp_path: Path) -> None:
    first = make_pki(tmp_path, ["engine"])
    ca, cert = first.ca_cert.read_bytes(), first.cert.read_bytes()
    again = make_pki(tmp_path, ["engine"])
    assert (again.ca_cert.read_bytes(), again.cert.read_bytes()) == (ca, cert)
    more = make_pki(tmp_path, ["engine", "dice"])
    assert more.ca_cert.read_bytes() == ca  # same CA: clients keep trusting it
    assert more.cert.read_bytes() != cert and "dice" in names(more.cert)


def test_an_expiring_certificate_is_made_again(tmp_path: Path) -> None:
    pki = make_pki(tmp_path, days=3)  # less than the week of margin
    cert = pki.cert.read_bytes()
    assert make_pki(tmp_path, days=30).cert.read_bytes() != cert
    renewed = x509.load_pem_x509_certificate(pki.cert.read_bytes())
    left = renewed.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
    assert left > datetime.timedelta(days=29)


def test_half_a_tls_setup_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="BOULEVARD_TLS_KEY_FILE"):
        Settings(tls_cert_file=tmp_path / "server.pem")


def test_with_a_ca_nats_is_tls_or_nothing() -> None:
    assert nats_tls_url("nats://127.0.0.1:4222") == "tls://127.0.0.1:4222"
    assert nats_tls_url("nats://a:4222,nats://b:4222") == "tls://a:4222,tls://b:4222"
    assert nats_tls_url("tls://nats:4222") == "tls://nats:4222"
