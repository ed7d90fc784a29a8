"""The committed web app is its sources' build, and its verifier agrees with the Python
one on the published vectors."""

from __future__ import annotations

import json
import re
import subprocess

from tests.browser.conftest import ROOT, STATIC, WebBuild


def test_the_committed_build_is_what_make_web_makes_from_the_sources(web_build: WebBuild) -> None:
    built = sorted(
        p.relative_to(web_build.static) for p in web_build.static.rglob("*") if p.is_file()
    )
    committed = sorted(p.relative_to(STATIC) for p in STATIC.rglob("*") if p.is_file())
    assert built == committed, "run `make web` and commit libs/boulevard/web/static"
    stale = [
        str(p) for p in built if (web_build.static / p).read_bytes() != (STATIC / p).read_bytes()
    ]
    assert not stale, f"libs/boulevard/web/static drifted from web/ ({stale}): run `make web`"


def test_the_typescript_verifier_passes_the_python_verifiers_vectors(web_build: WebBuild) -> None:
    done = subprocess.run(
        [web_build.node, str(web_build.web / "build" / "vectors.mjs"), str(ROOT / "docs")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["failures"] == []
    # Every vector of both files is checked: commands, chain, receipts, fairness cases,
    # openings and the uniform draws (122 checks over today's files).
    assert report["checked"] >= 122


def test_the_lobby_offers_every_game_of_the_registry_with_its_table_sizes() -> None:
    from boulevard.games import REGISTRY

    source = (ROOT / "web" / "src" / "main.ts").read_text(encoding="utf-8")
    offered = {
        name: (int(lo), int(hi))
        for name, lo, hi in re.findall(r'\["(\w+)", "[^"]+", (\d+), (\d+)\]', source)
    }
    assert offered == {n: (d.min_players, d.max_players) for n, d in REGISTRY.items()}
