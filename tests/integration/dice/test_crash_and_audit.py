"""The dice service as its own process: SIGKILL mid-game and restart keeps the seed and the
nonce sequence; `boulevard audit dice` passes an honest game and names a forged nonce."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import dice_pb2
from boulevard.cli import audit_dice
from boulevard.cli.up import wait_serving
from boulevard.messaging.identities import NOBODY
from services.engine.dice_client import DiceClient
from tests.integration.dice.support import (
    TEST_KEY,
    commitments,
    expand,
    finish_and_reveal,
    forge_outcome,
    new_game_id,
    open_with_seeds,
)
from tests.support.nats import NatsHandle
from tests.support.processes import ServiceProcess, service_env

pytestmark = pytest.mark.integration

SEEDS = ["p1", "p2", "p3", "p4"]


@pytest.fixture
def dice_process(nats_server: NatsHandle, tmp_path: Path) -> Iterator[ServiceProcess]:
    env = service_env(nats_server, tmp_path / "data", {"BOULEVARD_DICE_SEED_KEY": TEST_KEY})
    process = ServiceProcess("dice", env, tmp_path)
    try:
        yield process
    finally:
        process.stop()


async def start(process: ServiceProcess) -> None:
    process.start()
    assert process.process is not None
    await wait_serving(process.address, 30, process.process)


async def run_audit(address: str, game_id: str, *extra: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "boulevard.cli.audit_dice",
        game_id,
        "--dice",
        address,
        "--no-engine",  # these games are drawn by the test, not played through an engine
        *extra,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_sigkill_mid_game_then_restart_continues_the_same_game(
    dice_process: ServiceProcess, nc: NATS
) -> None:
    await start(dice_process)
    client = DiceClient(nc, timeout=1.0, retry_for=60)
    game_id = new_game_id()
    await open_with_seeds(client, game_id, SEEDS)
    opened = await client.open_game(game_id, commitments(SEEDS))
    before = [await client.roll(game_id, f"r{i}", 2, 6) for i in range(5)]

    done: list[dice_pb2.DiceOutcome] = []
    ten_done = asyncio.Event()

    async def keep_playing() -> None:
        for i in range(5, 40):
            done.append(await client.roll(game_id, f"r{i}", 2, 6))
            if len(done) == 10:
                ten_done.set()

    player = asyncio.create_task(keep_playing())
    await ten_done.wait()
    dice_process.kill()  # SIGKILL while the player keeps asking
    await asyncio.sleep(0.5)
    await start(dice_process)
    await asyncio.wait_for(player, 60)

    outcomes = before + done
    assert [o.nonce for o in outcomes] == list(range(40))  # no gap, no repeat
    assert (await client.open_game(game_id, commitments(SEEDS))) == opened  # the same seed
    assert await client.roll(game_id, "r2", 2, 6) == before[2]  # retries still identical
    assert await client.roll(game_id, "r20", 2, 6) == done[15]
    assert (await client.shuffle(game_id, "deck", 49)).nonce == 40

    reveal = await finish_and_reveal(nc, client, game_id)
    assert reveal.outcome_count == 41
    code, out = await run_audit(dice_process.address, game_id)
    assert code == 0, out
    assert "PASS: 41 outcomes" in out


async def honest_game(client: DiceClient, nc: NATS, rolls: int = 4) -> str:
    game_id = new_game_id()
    await open_with_seeds(client, game_id, SEEDS)
    for i in range(rolls):
        await client.roll(game_id, f"r{i}", 1, 6)
    await client.shuffle(game_id, "deck", 12, "deck")
    await finish_and_reveal(nc, client, game_id)
    return game_id


Rewrite = Callable[[list[dice_pb2.DiceRecord]], list[dice_pb2.DiceRecord]]


@contextlib.asynccontextmanager
async def evidence_rules_lifted(server: Any) -> AsyncIterator[NATS]:
    """What only whoever runs the nats-server can do (the store is on their disk): restart it
    without the rules that stop even `admin` deleting streams and messages, act as admin,
    then restart it as it was. Nothing in NATS stops this; the signed heads make it show."""
    strict = server.config_text()
    relaxed = strict
    for i, rule in enumerate(NOBODY):
        relaxed = relaxed.replace(f'"{rule}"', f'"$NOT.USED.{i}"')
    server.config_text = lambda: relaxed
    await asyncio.to_thread(server.restart)
    nc = await server.connect()
    try:
        yield nc
    finally:
        await nc.close()
        del server.config_text
        await asyncio.to_thread(server.restart)


async def admin_rewrite(server: Any, game_id: str, rewrite: Rewrite) -> None:
    """Rewrite one game's DICE records in place: the stream denies deleting messages (and
    that cannot be lifted), so the operator deletes the whole stream and publishes it again
    with the game's records changed."""
    async with evidence_rules_lifted(server) as nc:
        js = nc.jetstream()
        info = await js.stream_info("DICE")
        messages = []
        for seq in range(1, info.state.last_seq + 1):
            msg = await js.get_msg("DICE", seq)
            messages.append((msg.subject, msg.data or b""))
        subject = f"dice.{game_id}"
        # In the two-message form, so a rewrite sees each leaf as a record of its own.
        stored = [dice_pb2.DiceRecord.FromString(d) for subj, d in messages if subj == subject]
        ours = expand(stored)
        changed = rewrite(ours)
        await js.delete_stream("DICE")
        await js.add_stream(info.config)
        done = False
        for subj, data in messages:
            if subj != subject:
                await js.publish(subj, data)
            elif not done:
                for record in changed:
                    await js.publish(subj, record.SerializeToString())
                done = True


def without_nonce(nonce: int) -> Rewrite:
    return lambda rs: [r for r in rs if not (r.HasField("outcome") and r.outcome.nonce == nonce)]


def edit_nonce(nonce: int) -> Rewrite:
    def rewrite(records: list[dice_pb2.DiceRecord]) -> list[dice_pb2.DiceRecord]:
        for r in records:
            if r.HasField("outcome") and r.outcome.nonce == nonce:
                r.outcome.values[0] = r.outcome.values[0] % 6 + 1
        return records

    return rewrite


async def test_audit_cli_fails_on_a_removed_edited_or_injected_record(
    dice_process: ServiceProcess, nc: NATS, nats_server: NatsHandle
) -> None:
    """What an operator could do to the evidence after a game: add a record (as `admin`),
    delete one or replace one with an edited copy (which NATS refuses even to `admin`: the
    operator restarts the server without those rules). Each fails the audit, which names
    the record."""
    await start(dice_process)
    client = DiceClient(nc)
    game_id = new_game_id()
    await open_with_seeds(client, game_id, SEEDS)
    code, out = await run_audit(dice_process.address, game_id)
    assert code == 2 and "not revealed" in out  # nothing to verify yet

    honest = await honest_game(client, nc)
    code, out = await run_audit(dice_process.address, honest)
    assert code == 0 and "PASS: 5 outcomes" in out, out

    # Removed: the outcome with nonce 1 (leaf 3) is left out of the stream.
    removed = await honest_game(client, nc)
    await admin_rewrite(nats_server, removed, without_nonce(1))
    code, out = await run_audit(dice_process.address, removed)
    assert code == 1 and "(record_changed)" in out and "log record 3" in out, out

    # Edited in place: the outcome with nonce 2 (leaf 4) gets another value.
    edited = await honest_game(client, nc)
    await admin_rewrite(nats_server, edited, edit_nonce(2))
    code, out = await run_audit(dice_process.address, edited, "--json")
    assert code == 1 and '"code": "record_changed"' in out and "log record 4" in out, out
    assert "nonce 2" in out

    # Injected: an extra outcome appended after the game.
    injected = await honest_game(client, nc)
    await forge_outcome(nc, injected, 5, [3])
    code, out = await run_audit(dice_process.address, injected)
    assert code == 1 and "(record_unsigned)" in out and "nonce 5" in out, out

    code, out = await run_audit(dice_process.address, "unknown-game")
    assert code == 2 and "NOT_FOUND" in out


def test_audit_dice_and_ledger_are_sub_commands_of_one_audit_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`boulevard audit dice` hands its options to `audit_dice.run`, beside `audit ledger`
    (the typer app in boulevard.cli.app wires both under `audit`)."""
    from boulevard.cli import audit_ledger
    from boulevard.cli.main import main

    seen: dict[str, argparse.Namespace] = {}
    monkeypatch.setattr(audit_dice, "run", lambda args: seen.setdefault("dice", args) and 0)
    monkeypatch.setattr(audit_ledger, "run", lambda args: seen.setdefault("ledger", args) and 0)
    assert main(["audit", "dice", "g-1", "--dice", "127.0.0.1:1", "--json"]) == 0
    args = seen["dice"]
    assert (args.game_id, args.dice, args.json, args.no_engine) == (
        "g-1",
        "127.0.0.1:1",
        True,
        False,
    )
    assert main(["audit", "ledger"]) == 0 and seen["ledger"].game == ""
