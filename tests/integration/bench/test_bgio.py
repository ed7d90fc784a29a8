"""The boardgame.io side-by-side bench (bench/bgio.py) still compares the same game, and
still runs.

- bench/bgio/las_vegas.js (Las Vegas for boardgame.io, written from our rules) is replayed
  move for move through `boulevard.games.las_vegas` over random games of every player count:
  the same rolls asked, the same legal moves, the same scores and ranking (bench/bgio_check.py).
  A rules change on either side fails here, not silently in a benchmark's ratios.
- The check can fail: the same replay of a game whose recorded score was altered is refused.
- A smoke run of boardgame.io's server and the Node load client (one table, one second):
  moves were made and no client saw an error. Nothing is timed.

Needs node and npm (installed by .ci/run); `npm ci` into bench/bgio as on a fresh clone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BGIO = ROOT / "bench" / "bgio"
sys.path.insert(0, str(ROOT / "bench"))

import bgio_check  # noqa: E402


@pytest.fixture(scope="module")
def installed() -> None:
    """`npm ci` in bench/bgio, pinned by its committed package-lock.json."""
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node and npm are missing in CI (.ci/run installs them)")
        pytest.skip("node or npm is not installed")
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=BGIO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_boardgame_io_plays_our_rules(installed: None, players: int) -> None:
    games, moves = bgio_check.check(10, players)
    assert games == 10 and moves >= 10 * 4 * players  # every seat places every round


def test_a_different_outcome_is_caught(installed: None) -> None:
    out = subprocess.run(
        ["node", str(BGIO / "check.js"), "1", "4"], check=True, capture_output=True, text=True
    ).stdout
    trace = json.loads(out)
    assert bgio_check.replay(trace, 0) == len(trace["steps"])
    trace["money"][0] += 10_000
    with pytest.raises(bgio_check.Mismatch, match="scores"):
        bgio_check.replay(trace, 0)
    trace = json.loads(out)
    trace["steps"][5]["legal"] = trace["steps"][5]["legal"][:-1] or [7]
    with pytest.raises(bgio_check.Mismatch, match="may play"):
        bgio_check.replay(trace, 0)


def test_the_load_runs(installed: None, tmp_path: Path) -> None:
    import bgio  # the bench module: imports the engine bench (grpc, nats) too

    from boulevard.messaging.server import free_port

    port = free_port()
    server = bgio.bgio_server(port, "file", tmp_path / "store")
    try:
        result = bgio.measure_bgio(port, server.pid, games=1, seconds=1.0, procs=1)
    finally:
        server.terminate()
        server.wait()
    assert result["calls"] > 0
    assert result["server_cpu"]["bgio"] > 0
    assert any((tmp_path / "store").iterdir())  # the file storage wrote the match
