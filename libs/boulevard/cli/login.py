"""`boulevard login` and `boulevard issuer`: the local development issuer of bearer tokens.

`boulevard up` makes the issuer once per data dir (`<data-dir>/issuer`: Ed25519 keys, mode
0600, and the JWKS file the services read). `boulevard login alice` prints a token for the
player alice; `--role operator` one for an operator; `--web` prints the web app's address
with the token in the URL's fragment (`http://127.0.0.1:8080/#token=…`), which a browser
never sends to any server: the page reads it and forgets the URL (docs/clients.md, "From a
browser"). Nothing serves tokens over HTTP: whoever can run this command can already read
the issuer's keys. `boulevard issuer rotate` adds a new
signing key; the JWKS keeps the previous one, so tokens already handed out still work until
they expire. A deployment with its own identity provider points BOULEVARD_AUTH_JWKS at that
provider's JWKS instead and never uses these commands.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from boulevard.cli.exits import ExitCode
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
        # On stderr: `--token "$(boulevard login alice)"` must not pass this on as a token.
        # The data dir is relative to where the command runs, so name the folder looked in.
        print(
            f"no local issuer in {data_dir.resolve()}: run this in the folder where "
            "`boulevard up` runs, or give --data-dir (or BOULEVARD_DATA_DIR); if the platform "
            "is not running, start it with `boulevard up` first",
            file=sys.stderr,
        )
        return None
    return local_issuer(settings, data_dir)


def login(args: argparse.Namespace) -> int:
    settings = Settings()
    if not 0 < args.ttl <= MAX_TTL_SECONDS:
        print(f"--ttl must be between 1 and {MAX_TTL_SECONDS} seconds", file=sys.stderr)
        return ExitCode.CANNOT
    try:
        check_subject(args.name)
    except Unauthenticated as exc:
        print(str(exc).replace("the token's sub", "the name"), file=sys.stderr)
        return ExitCode.CANNOT
    issuer = _existing(settings, args.data_dir or settings.data_dir)
    if issuer is None:
        return ExitCode.CANNOT
    token = issuer.mint(args.name, (args.role,), args.ttl)
    if args.web:
        print(web_login_url(args.web_url or default_web_url(settings), token))
    else:
        print(token)
    return 0


def default_web_url(settings: Settings) -> str:
    """This machine's gateway, as `boulevard up` serves it (https with `--tls`, which leaves
    its certificate in the data dir)."""
    data_dir = settings.data_dir
    scheme = "https" if (data_dir / "tls" / "server.pem").exists() else "http"
    host = "127.0.0.1" if settings.grpc_host in ("", "0.0.0.0") else settings.grpc_host
    return f"{scheme}://{host}:{settings.gateway_port}/"


def web_login_url(base: str, token: str) -> str:
    """`base` with the token as its fragment: `#token=<jwt>` (a JWT is URL-safe as it is)."""
    return f"{base.split('#', 1)[0]}#token={token}"


def rotate_key(args: argparse.Namespace) -> int:
    settings = Settings()
    issuer = _existing(settings, args.data_dir or settings.data_dir)
    if issuer is None:
        return ExitCode.CANNOT
    print(f"new signing key {issuer.rotate()}; {issuer.jwks_path} lists the previous one too")
    return 0
