"""A game log with a clock, written in memory as the engine writes one (pure functions,
signed commands, chosen envelope times): what the clock rules of `audit game` are tested
on, honest and forged."""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from typing import Any

from boulevard.api.v1 import events_pb2
from boulevard.audit.signing import (
    ZERO_HASH,
    SigningKey,
    chain_hash,
    reclaim_signing_bytes,
)
from boulevard.contract.mapping import command_to_action
from boulevard.games import REGISTRY, clock
from boulevard.games.base import (
    PLATFORM_EVENTS,
    ClientSeedsFixed,
    CommandAccepted,
    GameConfig,
    GameCreated,
    PlayerSeat,
    SeatReclaimed,
    SeatTimedOut,
    transfers_of,
)
from boulevard.games.clock import TimeControl
from boulevard.games.codec import Codec
from boulevard.games.playout import resolve_locally
from boulevard.games.upcasting import SCHEMA_VERSION

SEAT_KEYS = [SigningKey(bytes([i + 1]) * 32) for i in range(8)]
STAND_IN_KEY = SigningKey(b"\x77" * 32)
GAME_ID = "gtimed"


class TimedLog:
    """Appends envelopes at times the test chooses, folding the game and its clocks as the
    engine does, so a test can ask where a seat's deadline is."""

    def __init__(self, game_name: str, players: int, control: TimeControl, t0: int = 10_000):
        self.game = REGISTRY[game_name]
        self.codec = Codec((*self.game.event_types, *self.game.command_types))
        self.rng = random.Random(5)
        self.envs: list[events_pb2.EventEnvelope] = []
        self.state: Any = self.game.initial_state()
        self.time = t0
        config = GameConfig(players)
        self.created = GameCreated(
            game_name,
            config,
            tuple(
                PlayerSeat(i, f"p{i}", public_key=SEAT_KEYS[i].public_hex) for i in range(players)
            ),
            "0" * 64,
            time_control=control,
        )
        self.clocks = clock.start(control, players, t0)
        self.absent: set[int] = set()
        self.append([self.created, *self.game.new_game(config)])
        self.append([ClientSeedsFixed(("",) * players)])
        self.settle()

    @property
    def version(self) -> int:
        return len(self.envs)

    def asked(self) -> frozenset[int]:
        return clock.asked_to_act(self.game, self.state, len(self.created.seats))

    def append(self, events: Sequence[Any], at: int | None = None) -> None:
        """One append: every event at time `at` (default: the last time)."""
        if at is not None:
            if at > self.time:
                self.clocks = clock.elapse(self.clocks, at, self.asked())
            self.time = at
        for event in events:
            self.envs.append(
                events_pb2.EventEnvelope(
                    event_id=uuid.uuid4().hex,
                    type=type(event).__name__,
                    game_id=GAME_ID,
                    game=self.game.name,
                    version=self.version + 1,
                    time_unix_ms=self.time,
                    payload=self.codec.dumps(event),
                    schema_version=SCHEMA_VERSION,  # as today's engine writes it
                    transfers=[
                        events_pb2.Transfer(
                            source=t.source, target=t.target, amount=t.amount, reason=t.reason
                        )
                        for t in transfers_of(event)
                    ],
                )
            )
            if not isinstance(event, PLATFORM_EVENTS):
                self.state = self.game.evolve(self.state, event)

    def settle(self) -> None:
        while (request := self.game.chance(self.state)) is not None:
            self.append([resolve_locally(request, self.rng)])

    def move(
        self,
        seat: int,
        command: Any,
        at: int | None = None,
        *,
        stand_in: bool | None = None,
        key: SigningKey | None = None,
    ) -> None:
        """The seat's command (signed by its key, or the stand-in's for an absent seat)."""
        stand_in = seat in self.absent if stand_in is None else stand_in
        key = key or (STAND_IN_KEY if stand_in else SEAT_KEYS[seat])
        action = command_to_action(self.game, command).SerializeToString(deterministic=True)
        idem = uuid.uuid4().hex
        signature = key.sign_command(GAME_ID, seat, self.version, idem, action)
        accepted = CommandAccepted(
            seat, f"p{seat}", idem, self.version, action.hex(), signature.hex(), stand_in
        )
        if at is not None and at > self.time:
            self.clocks = clock.elapse(self.clocks, at, self.asked())
            self.time = at
        events = self.game.decide(command, self.state)
        self.clocks = clock.moved(self.clocks, seat)
        self.append([accepted, *events])
        self.settle()

    def bot_move(self, seat: int, at: int | None = None, **kw: Any) -> None:
        legal = self.game.legal_commands(self.state, seat)
        command = self.game.bots["random"](self.game.view(self.state, seat), legal, seat, self.rng)
        self.move(seat, command, at, **kw)

    def deadline(self, seat: int) -> int:
        due = clock.deadline(self.clocks, seat, self.asked())
        assert due is not None, f"seat {seat}'s clock is not running"
        return due

    def time_out(self, seat: int, at: int, deadline: int | None = None) -> None:
        if at > self.time:
            self.clocks = clock.elapse(self.clocks, at, self.asked())
            self.time = at
        due = self.clocks.seats[seat].ran_out_ms if deadline is None else deadline
        self.append([SeatTimedOut(seat, due, STAND_IN_KEY.public_hex)])
        self.clocks = clock.timed_out(self.clocks, seat)
        self.absent.add(seat)

    def reclaim(self, seat: int, at: int, key: SigningKey | None = None) -> None:
        signature = (key or SEAT_KEYS[seat]).sign(
            reclaim_signing_bytes(GAME_ID, seat, self.version)
        )
        self.append([SeatReclaimed(seat, f"p{seat}", self.version, signature.hex())], at)
        self.clocks = clock.reclaimed(self.clocks, seat)
        self.absent.discard(seat)

    def play_out(self, step_ms: int = 100) -> None:
        """Every seat asked plays its random bot's move, `step_ms` apart, to the end."""
        for _ in range(20_000):
            asked = sorted(self.asked())
            if not asked:
                break
            self.bot_move(asked[0], self.time + step_ms)
        outcome = self.game.outcome(self.state)
        assert outcome.finished
        from boulevard.games.base import GameFinished

        self.append(
            [
                GameFinished(
                    outcome.ranking,
                    outcome.scores,
                    tuple(s.player_id for s in self.created.seats),
                    outcome.reason,
                )
            ]
        )

    def log(self, envs: Sequence[events_pb2.EventEnvelope] | None = None) -> list[bytes]:
        """The envelopes as stored, chained."""
        out, prev = [], ZERO_HASH
        for e in envs if envs is not None else self.envs:
            e = events_pb2.EventEnvelope.FromString(e.SerializeToString())
            e.prev_hash = prev
            data = e.SerializeToString()
            out.append(data)
            prev = chain_hash(data)
        return out
