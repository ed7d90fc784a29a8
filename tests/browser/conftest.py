"""The web app's build, made once per test session in a temporary copy of web/ and protos/
(as a fresh clone would: `npm ci` from the committed lockfile, then `node build.mjs`).

node and npm are installed by .ci/run; locally a missing one skips these tests, naming it,
and in CI (`CI=true`) it fails them instead."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"
STATIC = ROOT / "libs" / "boulevard" / "web" / "static"


def require_tool(name: str) -> str:
    """The path of `name`; skip (locally) or fail (in CI) without it."""
    found = shutil.which(name)
    if found is None:
        message = f"{name} is not installed (.ci/run installs it with apt)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


@dataclass(frozen=True)
class WebBuild:
    web: Path  # the temporary copy of web/, with node_modules
    static: Path  # what `node build.mjs` wrote
    node: str


@pytest.fixture(scope="session")
def web_build(tmp_path_factory: pytest.TempPathFactory) -> WebBuild:
    node, npm = require_tool("node"), require_tool("npm")
    tmp = tmp_path_factory.mktemp("web")
    shutil.copytree(ROOT / "protos", tmp / "protos")
    shutil.copytree(WEB, tmp / "web", ignore=shutil.ignore_patterns("node_modules", "gen", "build"))
    for argv in (
        [npm, "ci", "--no-audit", "--no-fund"],
        [node, "build.mjs", "--out", str(tmp / "static"), "--node-tests"],
    ):
        done = subprocess.run(
            argv, cwd=tmp / "web", capture_output=True, text=True, timeout=300, check=False
        )
        assert done.returncode == 0, (
            " ".join(argv) + "\n" + done.stdout[-3000:] + done.stderr[-3000:]
        )
    return WebBuild(tmp / "web", tmp / "static", node)
