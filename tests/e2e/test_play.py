"""A person plays a whole game in the terminal against bots, as a person would: the test
drives `boulevard play`'s screen with Textual's pilot, pressing keys (`s` for the suggested
move, enter to play it) against the real services, and reads what the screen shows at the
end — the ranking and the verified dice. A spectator's `boulevard watch --tui` follows
another game to its end on the same screen.

With BOULEVARD_UPDATE_SCREENSHOTS=1 the screens are saved (SVG) into docs/screenshots/,
which is how the pictures in the README are made.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path

import grpc
import pytest
from textual.widgets import OptionList, RichLog, Static

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.cli.play import PlayApp
from boulevard.cli.screen import GameScreen
from boulevard.cli.watch import WatchApp
from boulevard.games import REGISTRY, get_game
from boulevard.seats.player import play_game
from tests.e2e.conftest import Platform
from tests.e2e.test_games import create
from tests.support.identity import mint
from tests.support.keys import seat_key

pytestmark = pytest.mark.e2e

SIZE = (150, 44)
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def text_of(app: GameScreen, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


def keep(app: GameScreen, name: str, tmp_path: Path) -> Path:
    """Save the screen as SVG (into docs/screenshots when asked to refresh them)."""
    folder = SCREENSHOTS if os.environ.get("BOULEVARD_UPDATE_SCREENSHOTS") else tmp_path
    path = Path(app.save_screenshot(f"{name}.svg", str(folder)))
    assert path.stat().st_size > 1000
    return path


def seats_for(game: str) -> int:
    definition = get_game(game)
    return min(max(3, definition.min_players), definition.max_players)


@pytest.mark.timeout(420)
@pytest.mark.parametrize("game", sorted(REGISTRY))
async def test_a_person_plays_a_whole_game_against_bots(
    platform: Platform, game: str, tmp_path: Path
) -> None:
    # Brackets are Textual markup: a name must show as typed, never restyle the screen.
    player = f"{'[b]' if game == 'las_vegas' else ''}person-{uuid.uuid4().hex[:6]}"
    app = PlayApp(
        game,
        player,
        seats_for(game),
        token=mint(player, ("player",), ttl=3600),
        matchmaking=platform.address("matchmaking"),
        engine=platform.address("engine"),
        dice=platform.address("dice"),
        bot_fill=1,
    )
    moves = 0
    menu_shot = False
    deadline = time.monotonic() + 360
    async with app.run_test(size=SIZE) as pilot:
        while not app.finished:
            assert time.monotonic() < deadline, f"no end; last status: {app.last_status}"
            assert not app.failed, app.last_status
            if app.choices:
                menu = app.query_one("#actions", OptionList)
                assert menu.display and menu.option_count == len(app.choices)
                if not menu_shot and moves >= 3 and len(app.choices) > 1:
                    keep(app, f"play-{game}", tmp_path)  # mid-game, the menu open
                    menu_shot = True
                await pilot.press("s")  # highlight the bot's suggestion
                await pilot.press("enter")  # and play it
                moves += 1
            await pilot.pause(0.02)
        while app.dice_ok is None and time.monotonic() < deadline:
            await pilot.pause(0.1)
        await pilot.pause(0.2)

        status = text_of(app, "#status")
        assert status.startswith("Game over — 1. ")
        assert player in status, status  # the ranking names the person among the bots
        assert "dice verified" in status
        assert app.dice_ok, app.dice_verdict
        assert "matches the one shown at the start" in text_of(app, "#dice")
        assert text_of(app, "#seat").splitlines()[0].startswith(f"{player} (seat {app.seat})")
        assert "money $" in text_of(app, "#seat")
        log = app.query_one("#moves", RichLog)
        written = "\n".join(line.text for line in log.lines)
        assert "game created for" in written and "game over" in written
        assert any(b in written for b in ("bot-", "bot ")), "other players' moves are shown"
        assert not app.query_one("#actions").display  # no menu after the end
        assert player in app.export_screenshot().replace("&#160;", " ")  # drawn as typed
        assert "Suggest" in app.export_screenshot()  # a seat is offered `s` (a spectator not)
        keep(app, f"play-{game}-end", tmp_path)
    assert moves > 0

    # The person's seat played through the engine: the log has their moves.
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        got = await stub.GetGame(engine_pb2.GetGameRequest(game_id=app.game_id))
        assert got.status == engine_pb2.GAME_STATUS_FINISHED


@pytest.mark.timeout(300)
async def test_a_spectator_watches_a_game_on_the_play_screen(
    platform: Platform, tmp_path: Path
) -> None:
    """`boulevard watch <id> --tui`: bots play a Lords of Vegas game; the spectator screen
    follows it live to the ranking and the verified dice, and offers no moves."""
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        created = await create(stub, "lords_of_vegas", 3)
        app = WatchApp(
            created.game_id, engine=platform.address("engine"), dice=platform.address("dice")
        )
        async with app.run_test(size=SIZE) as pilot:
            bots = asyncio.create_task(
                play_game(
                    channel,
                    created.game_id,
                    "lords_of_vegas",
                    list(created.player_tokens),
                    [seat_key(i) for i in range(3)],
                )
            )
            await asyncio.wait_for(bots, 240)
            deadline = time.monotonic() + 60
            while (not app.finished or app.dice_ok is None) and time.monotonic() < deadline:
                await pilot.pause(0.1)
            await pilot.press("s")  # nothing to suggest for a spectator: no effect
            footer = app.export_screenshot()
            assert "Quit" in footer and "Suggest" not in footer  # nor offered in the footer
            assert app.finished and app.dice_ok, app.last_status
            assert not app.query_one("#actions").display
            assert text_of(app, "#status").startswith("Game over — 1. ")
            assert text_of(app, "#seat").startswith("watching: ")
            # The board exactly as the game draws it (its `[R]` is text, not markup).
            final = await stub.GetGame(engine_pb2.GetGameRequest(game_id=created.game_id))
            assert text_of(app, "#board") == final.view.rendered.rstrip()
            assert "[R] = Red's lot" in text_of(app, "#board")
            keep(app, "watch-lords_of_vegas", tmp_path)


async def test_an_unreachable_platform_closes_the_screen_with_the_reason() -> None:
    """Nothing listens on port 1: the screen closes, exit code 2, and says why."""
    app = PlayApp(
        "las_vegas",
        "alice",
        3,
        token=mint("alice", ("player",), ttl=60),
        matchmaking="127.0.0.1:1",
        engine="127.0.0.1:1",
        dice="127.0.0.1:1",
    )
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):
            if app.return_code is not None:
                break
            await pilot.pause(0.05)
    assert app.return_code == 2
    assert app.failed and app.last_status.startswith("stopped: UNAVAILABLE")
