"""Who is calling: verified bearer tokens (JWT) for players, operators and auditors.

Every service that needs to know its caller uses the one `TokenVerifier` here. A caller sends
`authorization: Bearer <jwt>` (exactly that scheme, one header); the JWT must be signed with
EdDSA (Ed25519) or RS256 by a key in the configured JWKS (a file, or an https URL), name the
configured issuer and audience, and carry `sub`, `iat` and `exp`. Its claims become a
`Principal(subject, roles)`; the subject is the player id everywhere, never a request field.

`LocalIssuer` is the development issuer `boulevard up` makes once per data dir: an Ed25519
private key (mode 0600) and the JWKS file the services read. Rotating it adds a new key and
keeps the old public key in the JWKS, so tokens already handed out stay valid until they
expire. See docs/security.md.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jwt.algorithms import OKPAlgorithm

from boulevard.contract.players import BOT_PREFIX
from boulevard.platform.errors import PermissionDenied, Unauthenticated

PLAYER = "player"
OPERATOR = "operator"
AUDITOR = "auditor"
ROLES = frozenset({PLAYER, OPERATOR, AUDITOR})

ALGORITHMS = ("EdDSA", "RS256")  # never "none", never a shared-secret HMAC
SCHEME = "Bearer "
MAX_TOKEN_CHARS = 8192
MAX_SUBJECT_CHARS = 128
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True, slots=True)
class Principal:
    """A verified caller: `subject` is the player (or operator) id, from the token's `sub`."""

    subject: str
    roles: frozenset[str]
    expires_unix: int = 0

    def has(self, role: str) -> bool:
        return role in self.roles

    @property
    def is_operator(self) -> bool:
        return OPERATOR in self.roles


def bearer_of(metadata: Iterable[tuple[str, str | bytes]] | None) -> str | None:
    """The token of the call's `authorization: Bearer <token>` header; None when there is no
    such header; Unauthenticated when there is one in any other form."""
    values = [v for k, v in (metadata or ()) if k.lower() == "authorization"]
    if not values:
        return None
    if len(values) > 1:
        raise Unauthenticated("send one authorization header, not several")
    value = values[0]
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if not value.startswith(SCHEME):
        raise Unauthenticated("the authorization header must be 'Bearer <token>'")
    token = value[len(SCHEME) :]
    if not token or token != token.strip() or " " in token:
        raise Unauthenticated("the authorization header must be 'Bearer <token>'")
    if len(token) > MAX_TOKEN_CHARS:
        raise Unauthenticated(f"the bearer token is longer than {MAX_TOKEN_CHARS} characters")
    return token


def check_subject(subject: str) -> None:
    if not subject or len(subject) > MAX_SUBJECT_CHARS or not subject.isprintable():
        raise Unauthenticated(f"the token's sub must be 1-{MAX_SUBJECT_CHARS} printable characters")
    if subject.startswith(BOT_PREFIX):
        # Bot seats are the matchmaker's own: no person may hold (or renew) one.
        raise Unauthenticated(f"the token's sub may not start with {BOT_PREFIX!r} (bots' ids)")


class _JwksFile:
    """A JWKS file, read again when it changes (that is how a rotated key arrives)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._keys: jwt.PyJWKSet | None = None
        self._lock = threading.Lock()

    def keys(self) -> jwt.PyJWKSet:
        try:
            stat = self.path.stat()
        except OSError as exc:
            raise Unauthenticated("the token keys (JWKS) cannot be read") from exc
        stamp = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if self._keys is None or stamp != self._stamp:
                try:
                    self._keys = jwt.PyJWKSet.from_dict(json.loads(self.path.read_text()))
                except (OSError, ValueError, jwt.PyJWTError) as exc:
                    # Half-written or broken: keep the keys we had, if any.
                    if self._keys is None:
                        raise Unauthenticated("the token keys (JWKS) cannot be read") from exc
                    return self._keys
                self._stamp = stamp
            return self._keys

    def key(self, kid: str | None) -> jwt.PyJWK:
        keys = self.keys()
        if kid is None:
            if len(keys.keys) == 1:
                return keys.keys[0]
            raise Unauthenticated("the token names no key (kid) and the JWKS holds several")
        try:
            return keys[kid]
        except KeyError:
            raise Unauthenticated(
                "the token is signed by a key this platform does not know"
            ) from None


class _JwksUrl:
    """A JWKS at a URL: the set is cached 5 minutes, and an unknown kid refetches it at most
    once per 30 s (so tokens with made-up kids cannot make us hammer the provider). Keys are
    not cached apart from the set, so a key dropped from the JWKS stops working within 5
    minutes. The fetch blocks the caller's thread (urllib) for at most 5 s, at most once per
    cooldown; `warm()` does the first one before serving."""

    def __init__(self, url: str) -> None:
        self.client = jwt.PyJWKClient(
            url, cache_keys=False, lifespan=300, timeout=5, cooldown_duration=30
        )

    def warm(self) -> None:
        try:
            self.client.get_jwk_set()
        except jwt.PyJWKClientError as exc:
            raise ValueError(f"the JWKS cannot be fetched: {exc}") from exc

    def key(self, kid: str | None) -> jwt.PyJWK:
        try:
            if kid is None:
                keys = self.client.get_signing_keys()
                if len(keys) == 1:
                    return keys[0]
                raise Unauthenticated("the token names no key (kid) and the JWKS holds several")
            return self.client.get_signing_key(kid)
        except jwt.PyJWKClientError as exc:
            raise Unauthenticated(f"the token's key cannot be found: {exc}") from exc


class TokenVerifier:
    """Verifies bearer JWTs against a JWKS, an issuer and an audience."""

    def __init__(
        self, jwks: str | Path, issuer: str, audience: str, leeway_seconds: float = 5.0
    ) -> None:
        location = str(jwks)
        if not location:
            raise ValueError("no JWKS configured (BOULEVARD_AUTH_JWKS: a file path or https URL)")
        self._source: _JwksFile | _JwksUrl
        if location.startswith("http://"):
            host = urlsplit(location).hostname or ""
            if host not in LOOPBACK:
                # Keys fetched in the clear could be swapped by anyone on the path.
                raise ValueError("a JWKS URL must be https (plain http only on loopback)")
            self._source = _JwksUrl(location)
        elif location.startswith("https://"):
            self._source = _JwksUrl(location)
        else:
            self._source = _JwksFile(Path(location))
        self.issuer = issuer
        self.audience = audience
        self.leeway = leeway_seconds

    def warm(self) -> None:
        """Load the keys now (a service calls this before it serves): a missing or
        unreadable JWKS fails the start, not the first call."""
        if isinstance(self._source, _JwksUrl):
            self._source.warm()
        else:
            try:
                self._source.keys()
            except Unauthenticated as exc:
                raise ValueError(f"the JWKS {self._source.path} cannot be read: {exc}") from exc

    @classmethod
    def from_settings(cls, settings: Any) -> TokenVerifier:
        return cls(
            settings.auth_jwks,
            settings.auth_issuer,
            settings.auth_audience,
            settings.auth_leeway_seconds,
        )

    def verify(self, token: str) -> Principal:
        """The principal of a genuine, current token; Unauthenticated says what is wrong."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise Unauthenticated("malformed bearer token") from exc
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise Unauthenticated(f"bearer tokens must be signed with {' or '.join(ALGORITHMS)}")
        kid = header.get("kid")
        key = self._source.key(kid if isinstance(kid, str) else None)
        if key.algorithm_name != alg:
            raise Unauthenticated("the token's algorithm does not match its key")
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iat", "sub", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError as exc:
            raise Unauthenticated("the bearer token has expired; log in again") from exc
        except jwt.InvalidAudienceError as exc:
            raise Unauthenticated("the bearer token is for another audience") from exc
        except jwt.InvalidIssuerError as exc:
            raise Unauthenticated("the bearer token is from another issuer") from exc
        except jwt.InvalidSignatureError as exc:
            raise Unauthenticated("the bearer token's signature is not valid") from exc
        except jwt.PyJWTError as exc:
            raise Unauthenticated(f"invalid bearer token: {str(exc)[:80]}") from exc
        subject = claims["sub"]
        if not isinstance(subject, str):
            raise Unauthenticated("the token's sub must be a string")
        check_subject(subject)
        roles = claims.get("roles", [PLAYER])
        if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
            raise Unauthenticated("the token's roles must be a list of names")
        return Principal(subject, frozenset(roles) & ROLES, int(claims["exp"]))

    def principal(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> Principal | None:
        """The caller, or None when the call carries no authorization header."""
        token = bearer_of(metadata)
        return None if token is None else self.verify(token)

    def require(
        self, metadata: Iterable[tuple[str, str | bytes]] | None, role: str, what: str
    ) -> Principal:
        """The caller, who must hold `role`: Unauthenticated without a token,
        PermissionDenied with one that lacks the role."""
        principal = self.principal(metadata)
        if principal is None:
            raise Unauthenticated(f"{what} needs 'authorization: Bearer <token>' ({role})")
        if not principal.has(role):
            raise PermissionDenied(f"{what} is for the {role} role")
        return principal


# ---- the local (development) issuer ------------------------------------------------------

DEFAULT_ISSUER = "boulevard-local"
DEFAULT_AUDIENCE = "boulevard"


class LocalIssuer:
    """An Ed25519 JWT issuer kept in a folder: `keys/<kid>.pem` (0600) for each key and
    `jwks.json` with their public halves. The newest key signs."""

    def __init__(
        self, folder: Path, issuer: str = DEFAULT_ISSUER, audience: str = DEFAULT_AUDIENCE
    ) -> None:
        self.folder = folder
        self.issuer = issuer
        self.audience = audience

    @property
    def jwks_path(self) -> Path:
        return self.folder / "jwks.json"

    @property
    def _keys_dir(self) -> Path:
        return self.folder / "keys"

    def _kids(self) -> list[str]:
        if not self._keys_dir.exists():
            return []
        return sorted(p.stem for p in self._keys_dir.glob("*.pem"))

    @classmethod
    def ensure(
        cls, folder: Path, issuer: str = DEFAULT_ISSUER, audience: str = DEFAULT_AUDIENCE
    ) -> LocalIssuer:
        """The issuer in `folder`, made (one key) the first time."""
        found = cls(folder, issuer, audience)
        if not found._kids():
            found.rotate()
        elif not found.jwks_path.exists():
            found._write_jwks()
        return found

    def rotate(self, keep: int = 2) -> str:
        """Make a new signing key; the JWKS keeps the newest `keep` keys (old tokens stay
        valid until they expire). Returns the new key id."""
        self._keys_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)
        os.chmod(self._keys_dir, 0o700)
        kid = f"{self._next_stamp():013d}-{secrets.token_hex(4)}"
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        fd = os.open(self._keys_dir / f"{kid}.pem", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        for old in self._kids()[:-keep]:
            (self._keys_dir / f"{old}.pem").unlink()
        self._write_jwks()
        return kid

    def _next_stamp(self) -> int:
        """The new key's time stamp in ms, later than every key's here: the newest key is the
        last in sorted order and signs, so two rotations in one millisecond must not tie on
        the stamp and leave the order to their random suffixes (which once kept the old key
        signing after a rotation)."""
        stamp = int(time.time() * 1000)
        for kid in self._kids():
            head = kid.partition("-")[0]
            if head.isdigit():
                stamp = max(stamp, int(head) + 1)
        return stamp

    def _private(self, kid: str) -> Ed25519PrivateKey:
        key = serialization.load_pem_private_key(
            (self._keys_dir / f"{kid}.pem").read_bytes(), password=None
        )
        assert isinstance(key, Ed25519PrivateKey)
        return key

    def _write_jwks(self) -> None:
        keys = []
        for kid in self._kids():
            jwk = OKPAlgorithm.to_jwk(self._private(kid).public_key(), as_dict=True)
            keys.append({**jwk, "kid": kid, "alg": "EdDSA", "use": "sig"})
        # Written beside and renamed, so a service never reads half a file.
        tmp = self.jwks_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"keys": keys}, indent=2))
        os.replace(tmp, self.jwks_path)

    def mint(
        self,
        subject: str,
        roles: Sequence[str] = (PLAYER,),
        ttl_seconds: float = 3600.0,
        **extra: Any,
    ) -> str:
        """A signed token for `subject` with these roles, valid for `ttl_seconds`."""
        kids = self._kids()
        if not kids:
            raise ValueError(f"no issuer key in {self.folder}; run `boulevard up` first")
        unknown = set(roles) - ROLES
        if unknown:
            raise ValueError(f"unknown role(s) {sorted(unknown)}; known: {sorted(ROLES)}")
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": subject,
            "roles": list(roles),
            "iat": now,
            "exp": now + int(ttl_seconds),
            "jti": secrets.token_hex(8),
            **extra,
        }
        return jwt.encode(
            claims, self._private(kids[-1]), algorithm="EdDSA", headers={"kid": kids[-1]}
        )


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    """gRPC call metadata carrying a bearer token."""
    return (("authorization", f"{SCHEME}{token}"),)
