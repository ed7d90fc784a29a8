"""One game on a terminal screen (Textual), shared by `boulevard play` and `boulevard watch
--tui`: the board as the game draws it, the seat's money and hand, the moves in words as
they happen, the actions a seat may take as a menu, the dice commitment at the start and
its verification at the end, and the final ranking.

The screen only shows what it is fed (`show(update)` for each WatchGame update, `offer`
for a seat's legal actions); the apps in `play.py` and `watch.py` feed it from the public
gRPC API through the client library.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Sequence
from enum import Enum
from typing import Any, ClassVar

import grpc
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.widgets import Footer, Header, OptionList, RichLog, Static
from textual.widgets.option_list import Option

from boulevard.api.v1 import engine_pb2
from boulevard.cli.output import hint
from boulevard.client.dice import DiceReader
from boulevard.client.table import Table
from boulevard.contract.clocks import clock_line
from boulevard.contract.mapping import proto_to_view
from boulevard.games import REGISTRY
from boulevard.games.base import GameDefinition

REVEAL_WAIT = 20.0  # seconds to wait for the seed reveal that follows a game's end


def _words(name: str) -> str:
    """'BuildCasino' -> 'Build casino'."""
    out = "".join(f" {c.lower()}" if c.isupper() else c for c in name).strip()
    return out[:1].upper() + out[1:]


def _value(value: Any) -> str:
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, tuple | list | frozenset):
        return ", ".join(_value(v) for v in sorted(value, key=str)) if value else "none"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return action_label(value)
    return str(value)


def action_label(command: object) -> str:
    """A command as a menu line, from the command itself: its name in words and its fields
    but the seat (the seat is the person choosing). `PlayCard(seat=0, card=8, horse=2,
    target=None)` -> 'Play card: card 8, horse 2'."""
    name = _words(type(command).__name__)
    if not dataclasses.is_dataclass(command):
        return name
    parts = []
    for f in dataclasses.fields(command):
        value = getattr(command, f.name)
        if f.name == "seat" or value is None or value == ():
            continue
        parts.append(f"{f.name.replace('_', ' ')} {_value(value)}")
    return f"{name}: {', '.join(parts)}" if parts else name


def _card(card: Any) -> str:
    title = getattr(card, "title", None)
    return str(title) if title else _value(card)


def seat_summary(view: Any, seat: int) -> list[str]:
    """What a seat's typed view says about that seat's money and hand, in lines, read from
    the fields views commonly have (`money`/`cash` per seat, `seats[i].cash`, `hand`)."""
    lines: list[str] = []
    for name in ("money", "cash"):
        per_seat = getattr(view, name, None)
        if isinstance(per_seat, tuple) and seat < len(per_seat):
            lines.append(f"money ${per_seat[seat]}")
            break
    else:
        seats = getattr(view, "seats", None)
        if isinstance(seats, tuple) and seat < len(seats):
            mine = seats[seat]
            if hasattr(mine, "cash"):
                lines.append(f"money ${mine.cash}")
            lines.extend(
                f"{name} {getattr(mine, name)}"
                for name in ("fame", "population", "revenue")
                if isinstance(getattr(mine, name, None), int)
            )
    for name in ("points", "fame"):
        per_seat = getattr(view, name, None)
        if isinstance(per_seat, tuple) and seat < len(per_seat):
            lines.append(f"{name} {per_seat[seat]}")
    hand = getattr(view, "hand", None)
    if isinstance(hand, tuple):
        cards = ", ".join(_card(c) for c in hand) if hand else "empty"
        lines.append(f"hand: {cards}")
    return lines


class GameScreen(App[int]):
    """The screen; subclasses start the session that feeds it (`session`)."""

    TITLE = "Boulevard"
    CSS = """
    #main { height: 1fr; }
    #board-box { width: auto; max-width: 62%; border: round $primary; }
    #board { width: auto; }
    #side { width: 1fr; }
    #seat { height: auto; border: round $secondary; padding: 0 1; }
    #dice { height: auto; border: round $secondary; padding: 0 1; }
    #moves { height: 1fr; border: round $secondary; }
    #actions { height: 12; border: round $accent; }
    #status { height: auto; padding: 0 1; background: $boost; }
    #status.over { background: $success 30%; text-style: bold; }
    #status.failed { background: $error 30%; text-style: bold; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("s", "suggest", "Suggest a move"),
    ]

    def __init__(self, game: str = "", seat: int | None = None) -> None:
        super().__init__()
        self.game = game
        self.seat = seat
        self.game_id = ""
        self.table = Table(game)
        self.version = 0
        self.finished = False
        self.ranking = ""
        self.dice_verdict = ""
        self.dice_ok: bool | None = None
        self.updates = 0
        self.last_status = ""
        self.failed = False  # the session stopped on an error
        self._view: Any = None
        self._menu: tuple[int, Sequence[Any], asyncio.Future[Any | None]] | None = None

    @property
    def definition(self) -> GameDefinition[Any, Any, Any, Any] | None:
        return REGISTRY.get(self.game)

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with ScrollableContainer(id="board-box"):
                yield Static("waiting for the game…", id="board", markup=False)
            with Vertical(id="side"):
                yield Static("", id="seat", markup=False)
                yield Static("dice: waiting for the commitment", id="dice", markup=False)
                yield RichLog(id="moves", wrap=True, markup=False, min_width=20)
                yield OptionList(id="actions", markup=False)
        yield Static("", id="status", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#board-box").border_title = "board"
        self.query_one("#seat").border_title = "you" if self.seat is not None else "spectator"
        self.query_one("#dice").border_title = "dice"
        self.query_one("#moves").border_title = "moves"
        self.query_one("#actions").border_title = "your move"
        self.query_one("#actions").display = self.seat is not None
        self.run_worker(self._run(), exclusive=True)

    async def _run(self) -> None:
        try:
            await self.session()
        except grpc.aio.AioRpcError as err:
            self.stop(f"stopped: {err.code().name}: {err.details()}{hint(err.code().name)}")
        except Exception as err:  # told to the person, not a traceback over the screen
            self.stop(f"stopped: {err}")

    def stop(self, reason: str) -> None:
        """The session cannot go on: close the screen; `play.exit_code` prints why."""
        self.say(reason, failed=True)
        if not self.finished:
            self.exit(return_code=2)

    async def session(self) -> None:
        raise NotImplementedError

    # What the session feeds in ----------------------------------------------------------

    def say(self, text: str, *, over: bool = False, failed: bool = False) -> None:
        self.last_status = text
        if failed and not self.finished:
            self.failed = True
        status = self.query_one("#status", Static)
        status.update(text)
        status.set_class(over, "over")
        status.set_class(failed, "failed")

    def begin(self, game: str, game_id: str, headline: str) -> None:
        self.game = game
        self.game_id = game_id
        self.table = Table(game)
        definition = self.definition
        self.title = f"Boulevard — {definition.title if definition else game}"
        self.sub_title = headline

    def show(self, update: engine_pb2.WatchGameResponse) -> None:
        """One WatchGame update: the move in words; the board and the seat on a view."""
        self.updates += 1
        self.version = max(self.version, update.event.version)
        words = self.table.words(update)
        if words:
            self.query_one("#moves", RichLog).write(f"v{update.event.version:<4} {words}")
        if update.event.type == "GameCreated" and self.table.commitment:
            self.query_one("#dice", Static).update(
                f"commitment (SHA-256 of the server seed, published before any roll):\n"
                f"{self.table.commitment}"
            )
        if update.HasField("view"):
            self.query_one("#board", Static).update(update.view.rendered.rstrip())
            self._show_seat(update)
        if self._menu is not None and update.event.version > self._menu[0]:
            self._withdraw()  # the game moved on: the menu was for an older version
        if self.table.finished is not None and not self.finished:
            self.finished = True
            self.ranking = self.table.ranking()
            self.say(f"Game over — {self.ranking}", over=True)
            self.query_one("#actions").display = False

    def _show_seat(self, update: engine_pb2.WatchGameResponse) -> None:
        names = self.table.names
        lines = []
        if self.seat is not None:
            who = names[self.seat] if self.seat < len(names) else f"seat {self.seat}"
            lines.append(f"{who}")
            definition = self.definition
            if definition is not None:
                try:
                    self._view = proto_to_view(definition, update.view)
                    lines.extend(seat_summary(self._view, self.seat))
                except Exception:  # a view this client cannot read: the board still shows
                    pass
        else:
            lines.append("watching: " + ", ".join(names))
        if update.to_act and not self.finished:
            acting = ", ".join(names[s] if s < len(names) else str(s) for s in update.to_act)
            lines.append(f"to act: {acting}")
        if update.clocks and not self.finished:
            lines.append("clocks: " + clock_line(update.clocks, names))
        self.query_one("#seat", Static).update("\n".join(lines))

    async def offer(self, view: Any, commands: Sequence[Any], version: int) -> Any | None:
        """Show the legal commands as a menu and wait for the person's choice; None when
        the game moves past `version` first (a `bots.Chooser`)."""
        if self.finished or version < self.version:
            return None
        self._view = view
        future: asyncio.Future[Any | None] = asyncio.get_running_loop().create_future()
        self._menu = (version, commands, future)
        menu = self.query_one("#actions", OptionList)
        menu.clear_options()
        menu.add_options(Option(action_label(c), id=str(i)) for i, c in enumerate(commands))
        menu.highlighted = 0
        menu.display = True
        choices = "1 choice" if len(commands) == 1 else f"{len(commands)} choices"
        menu.border_title = f"your move — {choices} (enter: play, s: suggest)"
        menu.focus()
        self.say("your move")
        try:
            return await future
        finally:
            if self._menu is not None and self._menu[2] is future:
                self._withdraw()

    def _withdraw(self) -> None:
        if self._menu is None:
            return
        _, _, future = self._menu
        self._menu = None
        if not future.done():
            future.set_result(None)
        menu = self.query_one("#actions", OptionList)
        menu.clear_options()
        menu.border_title = "your move — wait for your turn"
        if not self.finished:
            self.say("waiting for the other players…")

    @property
    def choices(self) -> list[str]:
        """The menu's lines now (empty when it is not this seat's move)."""
        if self._menu is None:
            return []
        return [action_label(c) for c in self._menu[1]]

    def on_option_list_option_selected(self, message: OptionList.OptionSelected) -> None:
        if self._menu is None or message.option.id is None:
            return
        _, commands, future = self._menu
        if not future.done():
            future.set_result(commands[int(message.option.id)])

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A spectator has no moves: `s` is not offered in the footer (it did nothing)."""
        return not (action == "suggest" and self.seat is None)

    def action_suggest(self) -> None:
        """Highlight the move the game's heuristic bot would make from this seat's view."""
        definition = self.definition
        if self._menu is None or definition is None or self.seat is None:
            return
        version, commands, _ = self._menu
        bot = definition.bots.get("heuristic") or next(iter(definition.bots.values()))
        choice = bot(self._view, commands, self.seat, random.Random(version))
        self.query_one("#actions", OptionList).highlighted = list(commands).index(choice)

    async def verify_dice(self, reader: DiceReader) -> None:
        """After the end: ask the dice service to verify the game (VerifyGame), re-derive
        every outcome here too, and check the commitment is the one shown at the start."""
        dice = self.query_one("#dice", Static)
        deadline = asyncio.get_running_loop().time() + REVEAL_WAIT
        while True:
            try:
                remote = await reader.verify_remote(self.game_id)
                local = await reader.audit_game(self.game_id)
                commitment = (await reader.get_commitment(self.game_id)).commitment
                break
            except grpc.aio.AioRpcError as err:
                late = asyncio.get_running_loop().time() > deadline
                if err.code() != grpc.StatusCode.FAILED_PRECONDITION or late:
                    self.dice_ok = False
                    self.dice_verdict = f"cannot verify: {err.code().name}: {err.details()}"
                    dice.update(f"commitment {self.table.commitment}\n{self.dice_verdict}")
                    return
                dice.update(f"commitment {self.table.commitment}\nwaiting for the seed reveal…")
                await asyncio.sleep(0.3)
        same = commitment.commitment == self.table.commitment
        self.dice_ok = remote.ok and local.ok and same
        self.dice_verdict = (
            f"{'VERIFIED' if self.dice_ok else 'FAILED'}: "
            f"dice service VerifyGame {'ok' if remote.ok else 'FAILED'} ({remote.checked} "
            f"outcomes); re-derived here: {local.describe()}; commitment "
            f"{'matches the one shown at the start' if same else 'DIFFERS from the start'}"
        )
        dice.update(f"commitment {commitment.commitment}\n{self.dice_verdict}")
        self.say(
            f"Game over — {self.ranking}   |   dice {'verified' if self.dice_ok else 'FAILED'}",
            over=bool(self.dice_ok),
            failed=not self.dice_ok,
        )
