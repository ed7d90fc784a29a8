"""What WatchGame builds for its watchers at each version of a game, in-process (issue 28).

    .venv/bin/python bench/views.py [--game las_vegas] [--spectators 0] [--moves 120]

Plays a seeded game of each game (or one) through the engine core (in-memory store,
in-process chance), then, at every version it reached, times what the engine's WatchGame
does for one stream per seat (and `--spectators` spectator streams) at the last update of
a burst: the update the servicer itself fills in (`EngineServicer._settle`: the view, the
seats to act, the legal actions) and its serialization, as gRPC would send it. Each
version starts from a fresh copy of the game (nothing memoized), as a live game does after
each move. Rows: the WatchGame request's options (docs/clients.md), so the bots' and the
bench's choice is beside the default.

Then where that time goes, per version (all seats): the game's `view` of each seat, its
text board (`render`), the view's mapping to a `GameView` (`view_to_proto`, later seats
copied from the first: `like=`), every seat's legal commands (`to_act` needs them), the
acting seat's legal actions as `Action` protos (each mapped afresh, and as the engine keeps
them across versions: `server.Actions`, warm after the first sweep, as in a live engine), and
the updates' build and serialization once all of that is memoized (one message per stream,
and as WatchGame now does in a game without clocks: one per distinct update, shared).

In-process CPU time, so machine-dependent in absolute terms: compare rows of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "libs")]

from boulevard.api.v1 import engine_pb2, events_pb2  # noqa: E402
from boulevard.audit.signing import SigningKey  # noqa: E402
from boulevard.contract import mapping  # noqa: E402
from boulevard.eventlog.store import InMemoryEventStore  # noqa: E402
from boulevard.games import REGISTRY  # noqa: E402
from boulevard.platform.auth import verify_token  # noqa: E402
from services.engine.chance import LocalChance  # noqa: E402
from services.engine.engine import Engine, MemoryKeyValue, SeatRequest  # noqa: E402
from services.engine.server import EngineServicer  # noqa: E402
from services.engine.sessions import Session  # noqa: E402

KEY = b"bench-views-key!" * 2
KEYS = [SigningKey(bytes([i + 1]) * 32) for i in range(6)]
ROUNDS = 5  # each figure: the median of this many sweeps over every version

OPTIONS: dict[str, dict[str, bool]] = {
    "default (text board, a view every burst)": {},
    "omit_rendered": {"omit_rendered": True},
    "views_on_turn": {"views_on_turn": True},
    "omit_rendered + views_on_turn (bots, bench)": {"omit_rendered": True, "views_on_turn": True},
}


async def played(name: str, moves: int) -> tuple[EngineServicer, list[Session], int]:
    """A seeded game of `name` (4 seats where the game allows) played by random legal
    moves for at most `moves` moves, its servicer, and a copy of the game at each version
    reached after a move (the versions a seat's stream sends a view at, in settled mode)."""
    game = REGISTRY[name]
    players = max(game.min_players, min(4, game.max_players))
    engine = Engine(
        InMemoryEventStore(), LocalChance(random.Random(7)), MemoryKeyValue(), KEY, clock=lambda: 0
    )
    seats = [SeatRequest(i, f"p{i}", public_key=KEYS[i].public_hex) for i in range(players)]
    created = await engine.create_game(uuid.uuid4().hex, name, seats)
    rng = random.Random(3)
    versions = []
    for _ in range(moves):
        session = await engine.load(created.game_id)
        versions.append(session.fork())
        if session.finished is not None:
            break
        seat = next(s for s in range(players) if session.legal(s))
        legal = session.legal(seat)
        command = legal[rng.randrange(len(legal))]
        action = mapping.command_to_action(game, command).SerializeToString(deterministic=True)
        key = uuid.uuid4().hex
        claims = verify_token(KEY, created.tokens[seat])
        signature = KEYS[seat].sign_command(created.game_id, seat, session.version, key, action)
        await engine.submit(
            created.game_id, claims, command, session.version, key, action, signature
        )
    servicer = EngineServicer(engine, None, None, None)  # type: ignore[arg-type]
    return servicer, versions, players


def fresh(session: Session) -> Session:
    return session.fork()  # a fork memoizes nothing: what a new version costs


def per_version(
    versions: list[Session],
    work: Callable[[Session], None],
    before: Callable[[Session], None] | None = None,
) -> float:
    """µs of CPU a version, `work` on a fresh copy of each (after `before`, untimed): the
    median of ROUNDS sweeps."""
    sweeps = []
    for _ in range(ROUNDS):
        copies = [fresh(v) for v in versions]
        for copy in copies:
            if before is not None:
                before(copy)
        start = time.process_time()
        for copy in copies:
            work(copy)
        sweeps.append((time.process_time() - start) / len(copies) * 1e6)
    return statistics.median(sweeps)


def streams(
    servicer: EngineServicer,
    players: int,
    spectators: int,
    options: dict[str, bool],
    shared: bool = True,
) -> Callable[[Session], None]:
    """What every stream's last update of a burst costs the engine at one version: as
    WatchGame builds it in a game without clocks (streams sent the same update share one
    message: `_shared`), or, not `shared`, one message per stream (as before that)."""
    watchers: list[int | None] = [*range(players), *([None] * spectators)]
    request = engine_pb2.WatchGameRequest(game_id="g", bursts=True, **options)

    def work(session: Session) -> None:
        events = [events_pb2.EventEnvelope(version=session.version)]
        for seat in watchers:
            if shared:
                update = servicer._shared(session, request, seat, events, False, False)
            else:
                update = engine_pb2.WatchGameResponse(events=events)
                servicer._settle(update, request, session, seat, 0, False)
            update.SerializeToString()

    return work


def parts(
    servicer: EngineServicer, players: int, spectators: int
) -> dict[str, tuple[Callable[[Session], None], Callable[[Session], None] | None]]:
    """Each part of the default update's cost at one version, alone."""
    seats = range(players)

    def views(s: Session) -> None:
        for seat in seats:
            s.game.view(s.state, seat)

    def render(s: Session) -> None:
        for seat in seats:
            s.game.render(s.game.view(s.state, seat))

    def mapped(s: Session) -> None:
        first = None
        for seat in seats:
            view = s.game.view(s.state, seat)
            message = mapping.view_to_proto(s.game, view, first, render=False)
            first = first or (view, message)

    def legal(s: Session) -> None:
        for seat in seats:
            s.game.legal_commands(s.state, seat)

    def actions(s: Session) -> None:
        for seat in seats:
            servicer._legal_actions(s, seat)

    def actions_afresh(s: Session) -> None:
        for seat in seats:
            [mapping.command_to_action(s.game, c) for c in s.legal(seat)]

    default = streams(servicer, players, spectators, {})
    unshared = streams(servicer, players, spectators, {}, shared=False)
    return {
        "the game's view, every seat": (views, None),
        "view + render (text board), every seat": (render, None),
        "view + mapping (no text), every seat": (mapped, None),
        "legal commands, every seat (to_act)": (legal, None),
        "legal + Action protos, each mapped afresh": (actions_afresh, None),
        "legal + Action protos, kept (Actions)": (actions, None),
        # The view, its text and the legal actions memoized first: what each stream does.
        "every stream's update built and encoded": (unshared, default),
        "the same, streams sent the same share one": (default, default),
    }


async def main(games: list[str], spectators: int, moves: int) -> None:
    for name in games:
        servicer, versions, players = await played(name, moves)
        watchers = f"{players} seat streams" + (f" + {spectators} spectators" if spectators else "")
        print(f"\n{name}: {len(versions)} versions, {watchers}; µs of CPU a version")
        base = None
        for label, options in OPTIONS.items():
            us = per_version(versions, streams(servicer, players, spectators, options))
            base = base or us
            print(f"  {label:<46} {us:8.1f}  ({us / base:.2f}x)")
        print("  where the default's time goes (each alone):")
        for label, (work, before) in parts(servicer, players, spectators).items():
            print(f"    {label:<44} {per_version(versions, work, before):8.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", choices=sorted(REGISTRY), help="one game (default: all four)")
    parser.add_argument("--spectators", type=int, default=0, help="spectator streams too")
    parser.add_argument("--moves", type=int, default=120, help="moves played (at most)")
    args = parser.parse_args()
    asyncio.run(main([args.game] if args.game else sorted(REGISTRY), args.spectators, args.moves))
