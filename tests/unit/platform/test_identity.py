"""The bearer-token verifier against forged, foreign, stale and malformed tokens."""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import threading
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.rsa import generate_private_key
from jwt.algorithms import RSAAlgorithm

from boulevard.platform.errors import PermissionDenied, Unauthenticated
from boulevard.platform.identity import (
    OPERATOR,
    PLAYER,
    LocalIssuer,
    Principal,
    TokenVerifier,
    bearer_of,
)


@pytest.fixture
def issuer(tmp_path: Path) -> LocalIssuer:
    return LocalIssuer.ensure(tmp_path / "issuer")


@pytest.fixture
def verifier(issuer: LocalIssuer) -> TokenVerifier:
    return TokenVerifier(issuer.jwks_path, issuer.issuer, issuer.audience, leeway_seconds=2)


def claims(**over: object) -> dict[str, object]:
    now = int(time.time())
    base: dict[str, object] = {
        "iss": "boulevard-local",
        "aud": "boulevard",
        "sub": "alice",
        "iat": now,
        "exp": now + 60,
    }
    base.update(over)
    return base


def hs256(payload: dict[str, object], secret: bytes, kid: str) -> str:
    """A token MACed with the JWKS bytes as a shared secret (the key-confusion attack)."""
    enc = jwt.utils.base64url_encode
    head = enc(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    body = enc(json.dumps(payload).encode())
    mac = hmac.new(secret, head + b"." + body, hashlib.sha256).digest()
    return (head + b"." + body + b"." + enc(mac)).decode()


def test_a_minted_token_gives_its_subject_and_roles(
    issuer: LocalIssuer, verifier: TokenVerifier
) -> None:
    p = verifier.verify(issuer.mint("alice"))
    assert (p.subject, p.roles) == ("alice", frozenset({PLAYER}))
    op = verifier.verify(issuer.mint("olga", roles=[OPERATOR]))
    assert op.is_operator and not op.has(PLAYER)


def test_the_private_key_is_private(issuer: LocalIssuer) -> None:
    (pem,) = (issuer.folder / "keys").glob("*.pem")
    assert pem.stat().st_mode & 0o777 == 0o600
    assert "d" not in json.loads(issuer.jwks_path.read_text())["keys"][0]  # public half only


def test_the_exact_bearer_scheme_only() -> None:
    assert bearer_of([("authorization", "Bearer abc")]) == "abc"
    assert bearer_of([("x-other", "1")]) is None
    for bad in ["abc", "bearer abc", "Bearer  abc", "Bearer ", "Basic abc", "Bearer abc "]:
        with pytest.raises(Unauthenticated):
            bearer_of([("authorization", bad)])
    with pytest.raises(Unauthenticated):
        bearer_of([("authorization", "Bearer a"), ("authorization", "Bearer b")])


def test_forged_foreign_and_stale_tokens_are_refused(
    tmp_path: Path, issuer: LocalIssuer, verifier: TokenVerifier
) -> None:
    other = LocalIssuer.ensure(tmp_path / "other")  # same issuer name, another key
    stranger_key = Ed25519PrivateKey.generate()
    kid = json.loads(issuer.jwks_path.read_text())["keys"][0]["kid"]
    good = issuer.mint("alice")
    head, _body, sig = good.split(".")
    forged_body = jwt.utils.base64url_encode(json.dumps(claims(sub="mallory")).encode()).decode()
    bad_tokens = {
        "another key": other.mint("alice"),
        "another key, our kid": jwt.encode(
            claims(), stranger_key, algorithm="EdDSA", headers={"kid": kid}
        ),
        "alg none": jwt.encode(claims(), None, algorithm="none", headers={"kid": kid}),
        "HS256 with the public key": hs256(claims(), issuer.jwks_path.read_bytes(), kid),
        "tampered body": f"{head}.{forged_body}.{sig}",
        "wrong audience": issuer.mint("alice", aud="elsewhere"),
        "wrong issuer": issuer.mint("alice", iss="someone-else"),
        "expired": issuer.mint("alice", ttl_seconds=-60),
        "garbage": "not.a.jwt",
    }
    for name, token in bad_tokens.items():
        with pytest.raises(Unauthenticated):
            verifier.verify(token)
            pytest.fail(f"{name} was accepted")


def test_missing_claims_are_refused(issuer: LocalIssuer, verifier: TokenVerifier) -> None:
    kid = json.loads(issuer.jwks_path.read_text())["keys"][0]["kid"]
    key = issuer._private(kid)
    for missing in ("exp", "sub", "iat", "aud", "iss"):
        c = claims()
        del c[missing]
        with pytest.raises(Unauthenticated):
            verifier.verify(jwt.encode(c, key, algorithm="EdDSA", headers={"kid": kid}))
    with pytest.raises(Unauthenticated):
        long_sub = claims(sub="x" * 129)
        verifier.verify(jwt.encode(long_sub, key, algorithm="EdDSA", headers={"kid": kid}))


def test_rotation_keeps_old_tokens_until_the_old_key_leaves(
    issuer: LocalIssuer, verifier: TokenVerifier
) -> None:
    old = issuer.mint("alice")
    issuer.rotate()
    new = issuer.mint("bob")
    assert jwt.get_unverified_header(old)["kid"] != jwt.get_unverified_header(new)["kid"]
    # The verifier reads the JWKS again when the file changes: both keys are trusted.
    assert verifier.verify(old).subject == "alice"
    assert verifier.verify(new).subject == "bob"
    issuer.rotate()  # keeps the newest two: the first key is gone
    with pytest.raises(Unauthenticated, match="does not know"):
        verifier.verify(old)
    assert verifier.verify(new).subject == "bob"


def test_an_rs256_jwks_works_too(tmp_path: Path) -> None:
    key = generate_private_key(public_exponent=65537, key_size=2048)
    jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [{**jwk, "kid": "r1", "alg": "RS256"}]}))
    verifier = TokenVerifier(path, "boulevard-local", "boulevard")
    auditor = claims(roles=["auditor"])
    token = jwt.encode(auditor, key, algorithm="RS256", headers={"kid": "r1"})
    assert verifier.verify(token) == Principal("alice", frozenset({"auditor"}), auditor["exp"])  # type: ignore[arg-type]
    # an EdDSA header against the RSA key is refused
    stranger = Ed25519PrivateKey.generate()
    ed = jwt.encode(claims(), stranger, algorithm="EdDSA", headers={"kid": "r1"})
    with pytest.raises(Unauthenticated):
        verifier.verify(ed)


def test_require_names_the_missing_role(issuer: LocalIssuer, verifier: TokenVerifier) -> None:
    with pytest.raises(Unauthenticated):
        verifier.require([], OPERATOR, "CreateGame")
    md = [("authorization", f"Bearer {issuer.mint('alice')}")]
    with pytest.raises(PermissionDenied, match="operator"):
        verifier.require(md, OPERATOR, "CreateGame")
    assert verifier.require(md, PLAYER, "CreateTicket").subject == "alice"


def test_a_jwks_url_is_https_except_on_loopback(issuer: LocalIssuer) -> None:
    with pytest.raises(ValueError, match="https"):
        TokenVerifier("http://id.example.com/jwks.json", "boulevard-local", "boulevard")
    body = issuer.jwks_path.read_bytes()

    class Jwks(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Jwks)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
        verifier = TokenVerifier(url, issuer.issuer, issuer.audience)
        verifier.warm()
        assert verifier.verify(issuer.mint("alice")).subject == "alice"
        stranger = LocalIssuer.ensure(issuer.folder.parent / "stranger")
        with pytest.raises(Unauthenticated):
            verifier.verify(stranger.mint("alice"))
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_missing_jwks_fails_the_start_not_a_call(tmp_path: Path) -> None:
    verifier = TokenVerifier(tmp_path / "nope.json", "boulevard-local", "boulevard")
    with pytest.raises(ValueError, match="cannot be read"):
        verifier.warm()


def test_rotations_in_one_millisecond_still_sign_with_the_newest_key(
    issuer: LocalIssuer, verifier: TokenVerifier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kid starts with a millisecond stamp and the last kid in sorted order signs: two
    rotations within one millisecond used to leave the order to the kids' random suffixes."""
    import boulevard.platform.identity as identity

    monkeypatch.setattr(identity.time, "time", lambda: 1_796_129_371.356)
    kids = [issuer.rotate() for _ in range(20)]
    assert kids == sorted(kids)
    newest = jwt.get_unverified_header(issuer.mint("carol"))["kid"]
    assert newest == kids[-1]
