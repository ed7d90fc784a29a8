"""`boulevard audit dice|ledger … --html FILE` write a report a person reads; a real browser
(headless Chromium) opens it offline and shows the verdict and the charts.

A missing Chromium skips only the browser test, naming it (`apt-get install chromium`);
.ci/run installs it. With BOULEVARD_UPDATE_SCREENSHOTS=1 the browser's picture of the
report is kept in docs/screenshots/.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import zlib
from dataclasses import replace
from pathlib import Path

import grpc
import pytest

from boulevard.api.v1 import engine_pb2_grpc
from boulevard.cli.report import Failure, GameLogAudit, write_report
from boulevard.cli.report_data import dice_game, write_audit_report
from boulevard.seats.player import play_game
from tests.e2e.conftest import Platform
from tests.e2e.test_games import create, wait_reconciled
from tests.support.keys import seat_key

pytestmark = pytest.mark.e2e

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
PASS_GREEN = (0xDC, 0xFC, 0xE7)  # .verdict.pass background
FAIL_RED = (0xFE, 0xE2, 0xE2)  # .verdict.fail background
BAR_BLUE = (0x25, 0x63, 0xEB)  # histogram bars and the first balance line


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def audit(platform: Platform, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(platform.env)
    for name in ("dice", "engine", "ledger"):
        host, _, port = platform.address(name).rpartition(":")
        env["BOULEVARD_GRPC_HOST"] = host
        env[f"BOULEVARD_{name.upper()}_PORT"] = port
    for _ in range(40):  # exit 2 right after the end: the seed is revealed a moment later
        done = subprocess.run(
            [sys.executable, "-m", "boulevard.cli.main", "audit", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
        if done.returncode != 2:
            return done
        time.sleep(0.5)
    return done


def browse(browser: str, page: Path, tmp: Path, shot: Path) -> str:
    """Open `page` in headless Chromium, offline: its DOM as rendered, and a PNG of it."""
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp / 'chromium-profile'}",
    ]
    url = page.resolve().as_uri()
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=90, check=True
    ).stdout
    subprocess.run(
        [browser, *flags, "--window-size=1200,1600", f"--screenshot={shot}", url],
        capture_output=True,
        timeout=90,
        check=True,
    )
    return dom


def png_pixels(path: Path) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Decode an 8-bit RGB/RGBA PNG (what Chromium writes): width, height, RGB pixels."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 3
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6)
            channels = 4 if colour == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytearray] = []
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(line)
        prev = line
    pixels = [
        (row[x * channels], row[x * channels + 1], row[x * channels + 2])
        for row in rows
        for x in range(width)
    ]
    return width, height, pixels


@pytest.mark.timeout(400)
def test_audit_reports_of_a_real_game_open_in_a_browser(platform: Platform, tmp_path: Path) -> None:
    async def game() -> str:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "lords_of_vegas", 3)
            await play_game(
                channel,
                created.game_id,
                "lords_of_vegas",
                list(created.player_tokens),
                [seat_key(i) for i in range(3)],
            )
            game_id: str = created.game_id
            return game_id

    # `audit all` below takes the games that ended since this one started: other tests on
    # this platform leave forged games behind (test_fair_dice burns an outcome), which fail.
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    game_id = asyncio.run(game())
    asyncio.run(wait_reconciled(platform, game_id))

    dice_html, ledger_html = tmp_path / "dice.html", tmp_path / "ledger.html"
    dice = audit(platform, "dice", game_id, "--html", str(dice_html))
    assert dice.returncode == 0, dice.stdout + dice.stderr
    assert f"report: {dice_html}" in dice.stdout
    ledger = audit(platform, "ledger", "--game", game_id, "--quiet", "--html", str(ledger_html))
    assert ledger.returncode == 0, ledger.stdout + ledger.stderr
    assert f"report: {ledger_html}" in ledger.stdout

    game_html, all_html = tmp_path / "game.html", tmp_path / "all.html"
    game = audit(platform, "game", game_id, "--html", str(game_html))
    assert game.returncode == 0, game.stdout + game.stderr
    everything = audit(platform, "all", "--limit", "3", "--since", started, "--html", str(all_html))
    assert everything.returncode == 0, everything.stdout + everything.stderr
    audited = int(re.search(r"PASS: (\d+) games audited", everything.stdout).group(1))  # type: ignore[union-attr]
    assert 1 <= audited <= 3
    for page, games in ((game_html, 1), (all_html, audited)):
        text = page.read_text(encoding="utf-8")
        assert f"Game logs ({games}/{games} pass)" in text
        assert 'class="chart histogram"' in text and 'class="chart balances"' in text
    assert text.count('<h3 id="dice-') == audited  # every audited game's dice

    for page in (dice_html, ledger_html, game_html, all_html):
        text = page.read_text(encoding="utf-8")
        assert "<script" not in text and "http://" not in text.replace(
            'xmlns="http://www.w3.org/2000/svg"', ""
        )  # nothing to run, nothing to fetch
        assert 'id="verdict" class="verdict pass"' in text
        assert 'id="failures"' not in text
    dice_text = dice_html.read_text(encoding="utf-8")
    assert dice_text.count('class="chart histogram"') >= 1
    assert "χ² = " in dice_text and "revealed server seed" in dice_text
    assert 'class="chart balances"' in ledger_html.read_text(encoding="utf-8")

    # A game whose log audit failed gets no dice section that vouches for it, though its
    # outcomes re-derive: its dice are only as good as the log that cites them.
    failed_log = GameLogAudit(game_id, ok=False, verdict="forged at version 5", version=5)
    failed_page = asyncio.run(
        write_audit_report(
            str(tmp_path / "failed-game.html"), "Audit", [failed_log],
            dice=platform.address("dice"), engine=platform.address("engine"), ledger=None,
        )
    ).read_text(encoding="utf-8")  # fmt: skip
    heading = failed_page.split(f'<h3 id="dice-{game_id}">', 1)[1].split("</h3>", 1)[0]
    assert 'class="bad"' in heading and 'class="ok"' not in heading, heading
    assert "the game&#x27;s audit failed: forged at version 5" in failed_page  # html-escaped

    browser = chromium()
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install chromium): browser check skipped")
    for page, charts in ((dice_html, "chart histogram"), (ledger_html, "chart balances")):
        shot = tmp_path / f"{page.stem}.png"
        dom = browse(browser, page, tmp_path, shot)
        assert 'id="verdict"' in dom and ">PASS — " in dom
        assert f'class="{charts}"' in dom
        _, _, pixels = png_pixels(shot)
        colours = set(pixels)
        assert PASS_GREEN in colours, "the verdict's banner is drawn"
        assert FAIL_RED not in colours
        bars = sum(1 for p in pixels if p == BAR_BLUE)
        assert bars > 200, f"the charts are drawn ({bars} pixels of bar colour)"
        if os.environ.get("BOULEVARD_UPDATE_SCREENSHOTS"):
            shutil.copy(shot, SCREENSHOTS / f"audit-{page.stem}-report.png")

    # The same game's dice with one outcome forged: the page turns red and leads with it.
    real = asyncio.run(
        dice_game(platform.address("dice"), game_id, engine=None, audit_ok=True, audit_said="")
    )
    forged_row = replace(real.outcomes[1], values=(6,) * real.outcomes[1].count, status="fail")
    forged = replace(
        real,
        ok=False,
        outcomes=(real.outcomes[0], forged_row, *real.outcomes[2:]),
        failures=(Failure(f"game {game_id}, nonce 1", "values_mismatch", {"nonce": 1}),),
    )
    failed_html = write_report(tmp_path / "failed.html", "Dice audit", dice=[forged])
    shot = tmp_path / "failed.png"
    dom = browse(browser, failed_html, tmp_path, shot)
    assert ">FAIL — " in dom
    assert dom.index('id="failures"') < dom.index("<h2>Dice</h2>")
    assert FAIL_RED in set(png_pixels(shot)[2])
