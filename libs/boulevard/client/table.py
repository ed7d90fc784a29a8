"""A game as a person watches it: the board after each turn, the moves in words, the dice.

One renderer for every screen that shows a game to people: the `make run` demo and
`boulevard watch <game_id>`. It reads only what any spectator may read (`WatchGame`
updates), so the demo shows a newcomer exactly what a spectator sees.

Frames are printed when the turn passes (or the game ends), not after every event: a Lords
of Vegas game is ~200 events and a person follows turns. On a terminal each frame replaces
the last (the screen is cleared) and frames come at most `speed` per second; elsewhere
(CI logs, pipes) frames are plain lines, one after another, with no pause.

The web app tells a game in the same words: web/src/story.ts ports `Table.words` and the
games' describers, and tests/browser/test_story.py holds the two to the same lines.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import import_module
from typing import Any

from boulevard.api.v1 import engine_pb2
from boulevard.contract.clocks import clock_line
from boulevard.games import REGISTRY
from boulevard.games.base import GameDefinition

CLEAR = "\x1b[2J\x1b[H"
RULE = "─" * 64


@cache
def describer(game: str) -> Callable[[Any, Sequence[str]], str] | None:
    """The game's words for its events: its definition's `describe`, else the `describe` of
    its package's describe.py. That file is outside the rules hash
    (boulevard.games.versions.NOT_RULES) while the definition is inside it, so a game whose
    definition was recorded before it had words gets them without a new rules version."""
    definition = REGISTRY.get(game)
    if definition is None:
        return None
    if definition.describe is not None:
        return definition.describe
    try:
        module = import_module(f"boulevard.games.{game}.describe")
    except ModuleNotFoundError:
        return None
    found: Callable[[Any, Sequence[str]], str] | None = getattr(module, "describe", None)
    return found


def seat_names(player_ids: Sequence[str]) -> list[str]:
    return [f"{pid} (seat {i})" for i, pid in enumerate(player_ids)]


def _payload(update: engine_pb2.WatchGameResponse) -> dict[str, Any]:
    try:
        data = json.loads(update.event.payload)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _money(update: engine_pb2.WatchGameResponse, names: Sequence[str]) -> str:
    def who(account: str) -> str:
        if account.startswith("seat:"):
            seat = int(account.removeprefix("seat:"))
            return names[seat].split(" ")[0] if seat < len(names) else account
        return account

    return ", ".join(
        f"{who(t.source)} → {who(t.target)} ${t.amount}" for t in update.event.transfers
    )


@dataclass
class Table:
    """Feed it every WatchGame update of one game, in order; it prints what a person needs."""

    game: str
    out: Callable[[str], None] = print
    terminal: bool = False
    speed: float = 2.0  # frames per second on a terminal; 0 = no pause
    names: list[str] = field(default_factory=list)
    moves: list[str] = field(default_factory=list)
    frames: int = 0
    finished: dict[str, Any] | None = None
    commitment: str = ""
    _last_frame: float = 0.0
    _turn_over: bool = False
    _to_act: tuple[int, ...] = ()

    @property
    def definition(self) -> GameDefinition[Any, Any, Any, Any] | None:
        return REGISTRY.get(self.game)

    def feed(self, update: engine_pb2.WatchGameResponse) -> None:
        line = self._describe(update)
        if line:
            self.moves.append(f"v{update.event.version:<4} {line}")
        if not update.HasField("view"):
            return
        to_act = tuple(update.to_act)
        # The turn passed: other seats to act, a turn or round ended, or the game is over.
        if self._turn_over or to_act != self._to_act or self.finished is not None:
            self._to_act = to_act
            self.frame(update)

    def words(self, update: engine_pb2.WatchGameResponse) -> str:
        """One update in words ('' when it says nothing to a person), noting the names, the
        dice commitment and the end it reveals: for screens that draw their own board
        (`boulevard play`, `boulevard watch --tui`) and so do not use `feed`."""
        return self._describe(update)

    def _describe(self, update: engine_pb2.WatchGameResponse) -> str:
        event = update.event
        data = _payload(update)
        money = _money(update, self.names)
        suffix = f"  [{money}]" if money else ""
        if event.type == "GameCreated":
            self.names = seat_names([s.get("player_id", "?") for s in data.get("seats", [])])
            self.commitment = str(data.get("seed_commitment", ""))
            return (
                f"game created for {', '.join(self.names)}; dice commitment {self.commitment[:16]}…"
            )
        if event.type == "GameFinished":
            self.finished = data
            self._turn_over = True
            return "game over" + (f" ({data['reason']})" if data.get("reason") else "")
        if event.type == "ClientSeedRevealed":
            seat = int(data.get("seat", -1))
            who = self.names[seat] if 0 <= seat < len(self.names) else f"seat {seat}"
            return f"{who} reveals the client seed committed to before the dice commitment"
        if event.type == "ClientSeedsFixed":
            missing = data.get("missing_seats") or []
            late = (
                f"; seats {missing} did not reveal and play with an empty seed" if missing else ""
            )
            return f"client seeds fixed: the dice may roll{late}"
        if event.type == "CommandAccepted":
            return ""  # the signed record of the move (for auditors); its events say it
        if event.type == "ChanceResolved":
            values = data.get("values") or []
            nonce = data.get("nonce", "?")
            purpose = str(data.get("purpose", "")).replace("_", " ")
            if data.get("kind") == "shuffle":
                hidden = "" if values else ", order hidden until the game ends"
                return f"dice service shuffles the {purpose} (nonce {nonce}{hidden})"
            rolled = " ".join(str(v) for v in values)
            return f"dice service rolls {rolled} for {purpose} (nonce {nonce})"
        words = self._words(event.type, update)
        if event.type in ("TurnEnded", "RoundStarted"):
            self._turn_over = True
        return words + suffix if words else ""

    def _words(self, type_name: str, update: engine_pb2.WatchGameResponse) -> str:
        definition = self.definition
        describe = describer(self.game)
        if definition is None or describe is None or not self.names:
            return self._plain_words(type_name, _payload(update))
        from boulevard.games.codec import Codec

        try:
            event = Codec((*definition.event_types, *definition.command_types)).loads(
                update.event.payload
            )
            return describe(event, self.names)
        except Exception:  # an event this client does not know: say what it can, go on
            return self._plain_words(type_name, _payload(update))

    def _plain_words(self, type_name: str, data: dict[str, Any]) -> str:
        """For a game without `describe`: the event's name in words and its simple fields,
        seats by name ("horse moved: seat bob (seat 1), horse 5, spaces 3"). A field the
        event leaves unset (null) is left out: "horse None" tells a player nothing."""
        words = re.sub(r"(?<!^)(?=[A-Z])", " ", type_name).lower()
        fields = []
        for name, value in data.items():
            if name in ("type", "transfers") or value is None or isinstance(value, dict | list):
                continue
            # Fields that hold a seat: whose turn follows (Long Shot), who was outbid and who
            # holds the first-player button (Vegas Showdown).
            is_seat = name in ("seat", "next", "outbid", "button")
            if is_seat and isinstance(value, int) and 0 <= value < len(self.names):
                value = self.names[value]
            fields.append(f"{name.replace('_', ' ')} {value}")
        return f"{words}: {', '.join(fields)}" if fields else words

    def frame(self, update: engine_pb2.WatchGameResponse) -> None:
        """Print the board as it stands, the moves since the last frame, and who is next."""
        if self.terminal and self.speed > 0:
            wait = 1.0 / self.speed - (time.monotonic() - self._last_frame)
            if wait > 0:
                time.sleep(wait)
        lines: list[str] = []
        if self.terminal:
            lines.append(CLEAR.rstrip("\n"))
        lines.append(RULE)
        lines.append(update.view.rendered.rstrip())
        lines.append(RULE)
        lines.extend(f"  {m}" for m in self.moves)
        if self.finished is None and update.to_act:
            to_act = ", ".join(
                self.names[s] if s < len(self.names) else str(s) for s in update.to_act
            )
            lines.append(f"  to act: {to_act}")
        if self.finished is None and update.clocks:
            lines.append(f"  clocks: {clock_line(update.clocks, self.names)}")
        self.out("\n".join(lines))
        self.moves.clear()
        self._turn_over = False
        self._last_frame = time.monotonic()
        self.frames += 1

    def ranking(self) -> str:
        """'alice (seat 0) > bob (seat 1) = …' from GameFinished, or '' before the end."""
        if not self.finished:
            return ""
        ids = self.finished.get("player_ids", [])
        scores = self.finished.get("scores", [])
        places = []
        for place, group in enumerate(self.finished.get("ranking", []), start=1):
            who = " = ".join(
                f"{ids[s]} ({scores[s]})" if s < len(scores) else str(ids[s]) for s in group
            )
            places.append(f"{place}. {who}")
        return "   ".join(places)
