"""The demo game `boulevard up` plays once the platform is healthy: bots play a game through
the public gRPC API while a spectator shows it as `boulevard watch` would (the same table,
`boulevard.client.table`), then the three audits run and print their verdicts."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.audit.signing import SigningKey
from boulevard.client.table import Table
from boulevard.fairness import client_seed_commitment
from boulevard.games import get_game
from boulevard.platform import tls
from boulevard.platform.identity import bearer
from boulevard.seats.player import new_client_seed, play_game


async def watch(stub: engine_pb2_grpc.EngineServiceStub, game_id: str, table: Table) -> None:
    async for update in stub.WatchGame(engine_pb2.WatchGameRequest(game_id=game_id)):
        # Printing (and the pause between frames on a terminal) must not hold the loop the
        # bots play on: the table runs in a worker thread, one update at a time.
        await asyncio.to_thread(table.feed, update)


async def demo(
    engine_address: str,
    operator_token: str,
    game: str,
    players: int,
    table: Table,
    say: Callable[[str], None],
) -> str:
    """Play one game with bots while the table shows it; returns the game id."""
    metadata = bearer(operator_token)
    async with tls.channel(engine_address) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        # Each seat commits to a seed of its own now and reveals it once the game exists.
        seeds = [new_client_seed() for _ in range(players)]
        keys = [SigningKey.generate() for _ in range(players)]  # each seat signs its moves
        created = await stub.CreateGame(
            engine_pb2.CreateGameRequest(
                request_id=f"demo-{uuid.uuid4().hex[:12]}",
                game=game,
                seats=[
                    engine_pb2.SeatAssignment(
                        seat=i,
                        player_id=f"demo-{i + 1}",  # `bot-<n>` is the matchmaker's bots'
                        client_seed_commitment=client_seed_commitment(seeds[i]),
                        public_key=keys[i].public_hex,
                    )
                    for i in range(players)
                ],
            ),
            metadata=metadata,
        )
        say(
            f"demo: {get_game(game).title}, {players} bots, game {created.game_id}; "
            f"dice commitment {created.seed_commitment[:16]}… (published before any roll)"
        )
        watcher = asyncio.create_task(watch(stub, created.game_id, table))
        await play_game(
            channel, created.game_id, game, list(created.player_tokens), keys, client_seeds=seeds
        )
        await watcher
        game_id: str = created.game_id
        return game_id


def run_audit(args: list[str], env: dict[str, str]) -> tuple[bool, str]:
    """One audit command as a user would run it; (passed, its verdict line). Exit code 2
    ("could not audit yet", e.g. the seed is revealed a moment after the last event) is
    retried for a few seconds."""
    for _ in range(20):
        done = subprocess.run(
            [sys.executable, "-m", "boulevard.cli.main", "audit", *args],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            check=False,
        )
        if done.returncode != 2:
            break
        time.sleep(0.5)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    verdict = lines[-1] if lines else f"exit code {done.returncode}"
    return done.returncode == 0, verdict


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def play_demo(
    addresses: dict[str, str],
    operator_token: str,
    game: str = "lords_of_vegas",
    players: int | None = None,
    *,
    terminal: bool = False,
    speed: float = 2.0,
    env: dict[str, str] | None = None,
    say: Callable[[str], None] = print,
) -> bool:
    """Play the demo and audit it; True when all three audits pass."""
    definition = get_game(game)
    seats = players or min(4, definition.max_players)
    table = Table(game, out=say, terminal=terminal, speed=speed)
    game_id = asyncio.run(demo(addresses["engine"], operator_token, game, seats, table, say))
    say(f"demo: game over — {table.ranking() or 'no ranking recorded'}")
    say("demo: auditing it as an outsider would (public APIs only):")
    host, _, dice_port = addresses["dice"].rpartition(":")
    audit_env = dict(env or os.environ)
    audit_env.update(
        BOULEVARD_GRPC_HOST=host,
        BOULEVARD_DICE_PORT=dice_port,
        BOULEVARD_ENGINE_PORT=addresses["engine"].rpartition(":")[2],
        BOULEVARD_LEDGER_PORT=addresses["ledger"].rpartition(":")[2],
    )
    dice_ok, dice = run_audit(["dice", game_id], audit_env)
    say(f"  boulevard audit dice {game_id}")
    say(f"    {_verdict(dice_ok)}  every roll and shuffle re-derived from the revealed seed")
    say(f"          {dice}")
    ledger_ok, ledger = run_audit(["ledger", "--game", game_id, "--quiet"], audit_env)
    say(f"  boulevard audit ledger --game {game_id}")
    say(f"    {_verdict(ledger_ok)}  every dollar balanced, hash-chained, signed and reconciled")
    say(f"          {ledger}")
    game_ok, replay = run_audit(["game", game_id], audit_env)
    say(f"  boulevard audit game {game_id}")
    say(f"    {_verdict(game_ok)}  every event re-decided from a signed move or a recorded roll")
    say(f"          {replay}")
    return dice_ok and ledger_ok and game_ok
