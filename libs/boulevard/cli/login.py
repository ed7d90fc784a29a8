"""`boulevard login` and `boulevard issuer`: the local development issuer of bearer tokens.

`boulevard up` makes the issuer once per data dir (`<data-dir>/issuer`: Ed25519 keys, mode
0600, and the JWKS file the services read). `boulevard login alice` prints a token for the
player alice; `--role operator` one for an operator. `boulevard issuer rotate` adds a new
signing key; the JWKS keeps the previous one, so tokens already handed out still work until
they expire. A deployment with its own identity provider points BOULEVARD_AUTH_JWKS at that
provider's JWKS instead and never uses these commands.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from boulevard.platform.errors import Unauthenticated
from boulevard.platform.identity import LocalIssuer, check_subject
from boulevard.platform.settings import Settings

MAX_TTL_SECONDS = 7 * 86400


def issuer_folder(data_dir: Path) -> Path:
    return data_dir / "issuer"


def local_issuer(settings: Settings, data_dir: Path) -> LocalIssuer:
    """The data dir's issuer, made the first time."""
    return LocalIssuer.ensure(
        issuer_folder(data_dir).resolve(), settings.auth_issuer, settings.auth_audience
    )


def _existing(settings: Settings, data_dir: Path) -> LocalIssuer | None:
    if not (issuer_folder(data_dir) / "jwks.json").exists():
        print(f"no local issuer in {data_dir}; start the platform with `boulevard up` first")
        return None
    return local_issuer(settings, data_dir)


def login(args: argparse.Namespace) -> int:
    settings = Settings()
    if not 0 < args.ttl <= MAX_TTL_SECONDS:
        print(f"--ttl must be between 1 and {MAX_TTL_SECONDS} seconds")
        return 2
    try:
        check_subject(args.name)
    except Unauthenticated as exc:
        print(str(exc).replace("the token's sub", "the name"))
        return 2
    issuer = _existing(settings, args.data_dir or settings.data_dir)
    if issuer is None:
        return 1
    print(issuer.mint(args.name, (args.role,), args.ttl))
    return 0


def rotate_key(args: argparse.Namespace) -> int:
    settings = Settings()
    issuer = _existing(settings, args.data_dir or settings.data_dir)
    if issuer is None:
        return 1
    print(f"new signing key {issuer.rotate()}; {issuer.jwks_path} lists the previous one too")
    return 0
