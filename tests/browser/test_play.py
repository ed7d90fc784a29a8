"""The web app in a real Chromium (playwright-core from web/'s lockfile, Debian's chromium),
against `boulevard up` with its browser gateway: a player logs in with a token from the
platform's issuer, queues with bot fill, plays a whole game of each of the four games
through the page, and the page's own audit says PASS; a doctored log (one forged event)
makes it say FAIL at that event's version.

The driver is web/test/drive.mjs. A missing node, npm or chromium skips these tests locally,
naming it; CI installs all three (.ci/run). With BOULEVARD_UPDATE_SCREENSHOTS=1 the pictures
of the lobby, a game of each kind, a replay and the audit pages go to docs/screenshots/.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.messaging.server import free_port
from tests.browser.conftest import ROOT, WebBuild, require_tool
from tests.support.processes import address, lines_until, service_env, stop_up

pytestmark = pytest.mark.e2e

GAMES = ("las_vegas", "long_shot", "lords_of_vegas", "vegas_showdown")
SHOTS = ROOT / "docs" / "screenshots"
# What drive.mjs doctors: the first d6 roll's first value, in the stored bytes.
FORGED_ROLL = re.compile(
    rb'"kind":"roll","nonce":\d+,"purpose":"[a-z_]+","sides":6,"type":"ChanceResolved","values":\[[1-6]'
)


class Web:
    def __init__(self, env: dict[str, str], url: str) -> None:
        self.env, self.url = env, url

    def login(self, name: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "boulevard.cli.main", "login", name],
            env=self.env, capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return done.stdout.strip()


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    """`boulevard up --no-demo` on free ports, its gateway serving the committed web app."""
    env = service_env(None, tmp_path_factory.mktemp("web-up") / "data")
    env["BOULEVARD_EMBEDDED_NATS_PORT"] = str(free_port())
    env["BOULEVARD_GATEWAY_PORT"] = str(free_port())
    proc = subprocess.Popen(
        [sys.executable, "-m", "boulevard.cli.main", "up", "--no-demo"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        lines = lines_until(proc, "platform up", 90)
        assert any("platform up" in line for line in lines), "".join(lines)
        yield Web(env, f"http://127.0.0.1:{env['BOULEVARD_GATEWAY_PORT']}")
    finally:
        stop_up(proc)


def drive(
    web_build: WebBuild,
    web: Web,
    player: str,
    games: tuple[str, ...],
    *,
    doctor: bool,
    shots: Path | None,
    **more: Any,
) -> list[dict[str, Any]]:
    """Run drive.mjs (its options: the `more` keyword arguments too) and return its lines,
    failing on any error it reports."""
    chromium = require_tool("chromium")
    # drive.mjs resolves playwright-core from the build's node_modules (web/'s lockfile).
    script = web_build.web / "test" / "drive.mjs"
    opts = {
        "url": web.url,
        "token": web.login(player),
        "chromium": chromium,
        "games": list(games),
        "shots": str(shots) if shots else None,
        "doctor": doctor,
        **more,
    }
    done = subprocess.run(
        [web_build.node, str(script), json.dumps(opts)],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    errors = [line for line in lines if line["event"] in ("error", "page-errors")]
    assert not errors, errors
    return lines


def shots_dir(tmp_path: Path) -> Path:
    if os.environ.get("BOULEVARD_UPDATE_SCREENSHOTS"):
        return SHOTS
    return tmp_path


# Four whole games through a browser: about two minutes on two shared cores.
@pytest.mark.timeout(600)
def test_a_player_plays_each_game_to_the_end_in_the_browser_and_its_audit_passes(
    web_build: WebBuild, web: Web, tmp_path: Path
) -> None:
    shots = shots_dir(tmp_path)
    lines = drive(web_build, web, "web-alice", GAMES, doctor=False, shots=shots)
    finished = {line["game"]: line for line in lines if line["event"] == "finished"}
    audits = {line["game"]: line for line in lines if line["event"] == "audit"}
    assert set(finished) == set(GAMES) == set(audits)
    for game in GAMES:
        assert finished[game]["moves"] > 0
        assert audits[game]["verdict"].startswith("PASS"), audits[game]
    # Each seat's key was made in the page, signed there and could not leave it: WebCrypto
    # holds it non-extractable mid-game, and it is gone once the game is over. The page
    # kept the engine's receipt of every move the log accepted from the player.
    keys = {line["game"]: line for line in lines if line["event"] == "key"}
    kept = {line["game"]: line for line in lines if line["event"] == "keys"}
    for game in GAMES:
        assert keys[game] == {
            **keys[game],
            "present": True,
            "extractable": False,
            "exported": False,
            "algorithm": "Ed25519",
        }
        accepted = [
            e
            for e in map(
                events_pb2.EventEnvelope.FromString,
                (x.envelope for x in game_log(web, finished[game]["gameId"]).envelopes),
            )
            if e.type == "CommandAccepted" and json.loads(e.payload)["player_id"] == "web-alice"
        ]
        assert kept[game]["dropped"] is True
        assert kept[game]["receipts"] == len(accepted) > 0, (kept[game], len(accepted))
    # The page told each game in the terminal's words (tests/browser/test_story.py holds
    # the two to the same lines): the first events of a Las Vegas game, oldest first.
    told = {line["game"]: line["lines"][::-1] for line in lines if line["event"] == "story"}
    assert set(told) == set(GAMES)
    assert re.fullmatch(
        r"v1 game created for .*web-alice \(seat \d\).*; dice commitment [0-9a-f]{16}…",
        told["las_vegas"][0],
    ), told["las_vegas"][:3]
    assert any(re.search(r"places \d dice.* on casino \d", t) for t in told["las_vegas"])
    # Some moves were played from the keyboard (keys 1–9), the rest by click.
    assert sum(line["keys"] for line in finished.values()) > 0
    # Readable on a phone: at 390 px wide the page scrolls down, never sideways.
    (phone,) = [line for line in lines if line["event"] == "phone"]
    assert phone["scrollWidth"] <= 390, phone
    for name in [
        "web-lobby.png",
        "web-audit.png",
        "web-replay.png",
        *(f"web-play-{g}.png" for g in GAMES),
    ]:
        assert (shots / name).stat().st_size > 10_000, name
    # The game the page played is one the engine itself calls finished, with the player.
    game_id = finished["las_vegas"]["gameId"]
    log = game_log(web, game_id)
    assert log.finished
    created = json.loads(events_pb2.EventEnvelope.FromString(log.envelopes[0].envelope).payload)
    seats = {s["player_id"]: s for s in created["seats"]}
    # The key the game binds to the seat is the one the page made.
    assert seats["web-alice"]["public_key"] == kept["las_vegas"]["publicKey"]


def game_log(web: Web, game_id: str) -> engine_pb2.GetGameLogResponse:
    with grpc.insecure_channel(address(web.env, "engine")) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        return stub.GetGameLog(engine_pb2.GetGameLogRequest(game_id=game_id, page_size=1000))


@pytest.mark.timeout(300)
def test_the_audit_page_fails_a_doctored_log_at_the_forged_event(
    web_build: WebBuild, web: Web, tmp_path: Path
) -> None:
    lines = drive(
        web_build, web, "web-mallory", ("las_vegas",), doctor=True, shots=shots_dir(tmp_path)
    )
    (honest,) = [line for line in lines if line["event"] == "audit"]
    (doctored,) = [line for line in lines if line["event"] == "doctored"]
    assert honest["verdict"].startswith("PASS"), honest
    # The page checked the dice head GameFinished anchors against the dice log it fetched.
    assert any("GameFinished's dice head anchors its" in p for p in honest["passed"]), honest
    # Spectators: another browser, with no seat in the game, watches it to its end without
    # controls, and replays it with one position per event.
    (spectator,) = [line for line in lines if line["event"] == "spectator"]
    assert spectator["spectator"] and spectator["noControls"] and spectator["boards"] == 1
    assert spectator["positions"] == len(game_log(web, spectator["gameId"]).envelopes)
    assert doctored["forged"] == "forged", "no d6 roll to forge in the served log"
    # The version drive.mjs forged: the first envelope whose stored bytes hold a d6 roll.
    log = game_log(web, doctored["gameId"])
    forged = next(e.version for e in log.envelopes if FORGED_ROLL.search(e.envelope))
    assert doctored["verdict"].startswith("FAIL"), doctored
    assert doctored["failedAt"] == f"log at game log version {forged}", doctored
    assert "the envelope was changed" in doctored["message"], doctored
