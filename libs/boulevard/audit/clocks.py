"""The clock rules an auditor applies (docs/auditing.md, "Clocks"): the audit of a game's
log re-derives every seat's clock from the envelopes' times and the replayed state
(boulevard.games.clock) and fails, at its version:

- envelope times that run backwards (in a game with a clock);
- a `SeatTimedOut` in a game without a clock, for a seat whose clock was not running, or
  recorded before the deadline the log gives (or naming another deadline);
- a seat's own move after its deadline, or while it is absent (it must reclaim first);
- a move marked as played for an absent seat (`stand_in`) for a seat that had not timed out,
  or not signed with the stand-in key its `SeatTimedOut` named;
- a `SeatReclaimed` outside a turn-based game, for a seat that is not absent, for another
  version, or not signed with the seat's own key.

Pure: the caller hands in the state as it stood before each envelope.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from boulevard.audit.signing import parse_public_key, reclaim_signing_bytes, verify
from boulevard.games import clock
from boulevard.games.base import (
    CommandAccepted,
    GameCreated,
    GameDefinition,
    SeatReclaimed,
    SeatTimedOut,
)
from boulevard.games.clock import ClockError, ClockKind


class ClockAuditFailed(Exception):
    """A clock rule broken at `version` (game_log turns it into GameAuditFailed)."""

    def __init__(self, version: int, message: str) -> None:
        super().__init__(f"version {version}: {message}")
        self.version = version
        self.message = message


@dataclass
class ClockAudit:
    """The clocks of one game as the audit folds its log. `clocks` is None for a game
    created without a time control (no clock rule applies, and no clock event may occur)."""

    game_id: str
    game: GameDefinition[Any, Any, Any, Any]
    created: GameCreated
    clocks: clock.Clocks | None
    stand_in_keys: dict[int, str] = field(default_factory=dict)  # absent seat -> its key
    timeouts: int = 0
    stand_in_moves: int = 0
    reclaims: int = 0

    @classmethod
    def open(
        cls,
        game_id: str,
        game: GameDefinition[Any, Any, Any, Any],
        created: GameCreated,
        time_unix_ms: int,
    ) -> ClockAudit:
        control = created.time_control
        clocks = None if control is None else clock.start(control, len(created.seats), time_unix_ms)
        return cls(game_id, game, created, clocks)

    def elapse(self, version: int, time_unix_ms: int, state_before: Callable[[], Any]) -> None:
        """Move the clocks to the envelope at `version`: the time since the one before is
        charged to the seats the state before it asked to act."""
        clocks = self.clocks
        if clocks is None or time_unix_ms == clocks.time_ms:
            return
        asked = (
            clock.asked_to_act(self.game, state_before(), len(self.created.seats))
            if time_unix_ms > clocks.time_ms
            else frozenset()
        )
        try:
            self.clocks = clock.elapse(clocks, time_unix_ms, asked)
        except ClockError as err:
            raise ClockAuditFailed(version, f"time runs backwards: {err}") from None

    def signing_key(self, version: int, accepted: CommandAccepted, own_key: str) -> str:
        """The key that must have signed this command, after the clock rules for it."""
        seat = accepted.seat
        absent = seat in self.stand_in_keys
        if accepted.stand_in:
            if not absent:
                raise ClockAuditFailed(
                    version,
                    f"a move played by the platform's bot for seat {seat}, which had not timed out",
                )
            self.stand_in_moves += 1
            return self.stand_in_keys[seat]
        if absent:
            raise ClockAuditFailed(
                version,
                f"seat {seat} timed out and its player had not taken it back, yet the log "
                "records its own move",
            )
        clocks = self.clocks
        if clocks is not None and clocks.seats[seat].remaining_ms <= 0:
            raise ClockAuditFailed(
                version, f"seat {seat} moved after its time had run out (no time left)"
            )
        return own_key

    def moved(self, accepted: CommandAccepted) -> None:
        if self.clocks is not None:
            self.clocks = clock.moved(self.clocks, accepted.seat)

    def timed_out(self, version: int, event: SeatTimedOut, state: Any) -> None:
        clocks = self.clocks
        if clocks is None:
            raise ClockAuditFailed(version, "a SeatTimedOut in a game without a clock")
        seats = len(self.created.seats)
        if not 0 <= event.seat < seats:
            raise ClockAuditFailed(version, f"a timeout for seat {event.seat}, not in the game")
        # The clocks stand at this envelope's time, charged up to it; a seat whose time ran
        # out remembers when it did (its deadline), however many envelopes came since.
        asked = clock.asked_to_act(self.game, state, seats)
        if event.seat not in clock.running(clocks, asked):
            raise ClockAuditFailed(
                version,
                f"seat {event.seat} timed out, but its clock was not running (it was not "
                "asked to act, or had already timed out)",
            )
        seat_clock = clocks.seats[event.seat]
        if seat_clock.remaining_ms > 0:
            due = seat_clock.deadline_from(clocks.time_ms)
            raise ClockAuditFailed(
                version,
                f"seat {event.seat} timed out at {clocks.time_ms} with "
                f"{seat_clock.remaining_ms} ms left: its deadline is {due} (a timeout "
                "recorded before its deadline)",
            )
        if event.deadline_unix_ms != seat_clock.ran_out_ms:
            raise ClockAuditFailed(
                version,
                f"SeatTimedOut names the deadline {event.deadline_unix_ms}; the log's clock "
                f"ran out at {seat_clock.ran_out_ms}",
            )
        try:
            parse_public_key(event.stand_in_key)
        except ValueError as err:
            raise ClockAuditFailed(version, f"the stand-in key is not a key: {err}") from None
        self.clocks = clock.timed_out(clocks, event.seat)
        self.stand_in_keys[event.seat] = event.stand_in_key
        self.timeouts += 1

    def reclaimed(self, version: int, event: SeatReclaimed) -> None:
        clocks = self.clocks
        control = None if clocks is None else clocks.control
        if clocks is None or control is None or control.kind is not ClockKind.TURN_BASED:
            raise ClockAuditFailed(version, "a SeatReclaimed outside a turn-based game")
        key = self.stand_in_keys.get(event.seat)
        if key is None:
            raise ClockAuditFailed(
                version, f"seat {event.seat} takes its place back, but it had not timed out"
            )
        seat = self.created.seats[event.seat]
        if event.player_id != seat.player_id:
            raise ClockAuditFailed(
                version, f"seat {seat.seat} is {seat.player_id!r}, not {event.player_id!r}"
            )
        if event.expected_version != version - 1:
            raise ClockAuditFailed(
                version,
                f"the reclaim was signed for version {event.expected_version}, but follows "
                f"version {version - 1}",
            )
        try:
            signature = bytes.fromhex(event.signature)
        except ValueError:
            raise ClockAuditFailed(version, "the reclaim's signature is not hex") from None
        message = reclaim_signing_bytes(self.game_id, event.seat, event.expected_version)
        if signature.hex() != event.signature or not verify(
            bytes.fromhex(seat.public_key), signature, message
        ):
            raise ClockAuditFailed(
                version, f"the reclaim's signature does not verify under seat {seat.seat}'s key"
            )
        del self.stand_in_keys[event.seat]
        self.clocks = clock.reclaimed(clocks, event.seat)
        self.reclaims += 1
