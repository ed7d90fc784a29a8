"""`boulevard login NAME --web`: the web app's address with the token in the fragment, which
browsers never send to a server; nothing serves tokens over HTTP."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jwt

from boulevard.cli.login import web_login_url
from boulevard.platform.identity import LocalIssuer


def login(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", "login", *args, "--data-dir", str(data_dir)],
        capture_output=True, text=True, timeout=60, check=True, env=env,
    )  # fmt: skip
    return done.stdout.strip()


def test_login_web_prints_the_gateway_with_the_token_in_the_fragment(tmp_path: Path) -> None:
    LocalIssuer.ensure((tmp_path / "issuer").resolve())
    env = {"PATH": "/usr/bin:/bin", "BOULEVARD_GATEWAY_PORT": "8123"}
    url = login(tmp_path, "alice", "--web", env=env)
    base, _, fragment = url.partition("#")
    assert base == "http://127.0.0.1:8123/"
    assert fragment.startswith("token=")
    claims = jwt.decode(fragment.removeprefix("token="), options={"verify_signature": False})
    assert claims["sub"] == "alice" and claims["roles"] == ["player"]
    given = login(tmp_path, "bob", "--web", "--web-url", "https://play.example/lobby", env=env)
    assert given.startswith("https://play.example/lobby#token=")


def test_the_fragment_replaces_any_other() -> None:
    assert web_login_url("http://h/#old", "t") == "http://h/#token=t"
