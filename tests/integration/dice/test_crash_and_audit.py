"""The dice service as its own process: SIGKILL mid-game and restart keeps the seed and the
nonce sequence; `boulevard audit dice` passes an honest game and names a forged nonce."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import dice_pb2
from boulevard.cli import audit_dice
from boulevard.cli.up import wait_serving
from boulevard.client.dice import DiceClient
from tests.integration.dice.support import TEST_KEY, forge_outcome, new_game_id, wrong_roll
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
    opened = await client.open_game(game_id, SEEDS)
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
    assert (await client.open_game(game_id, SEEDS)) == opened  # the same seed
    assert await client.roll(game_id, "r2", 2, 6) == before[2]  # retries still identical
    assert await client.roll(game_id, "r20", 2, 6) == done[15]
    assert (await client.shuffle(game_id, "deck", 49)).nonce == 40

    reveal = await client.reveal(game_id)
    assert reveal.outcome_count == 41
    code, out = await run_audit(dice_process.address, game_id)
    assert code == 0, out
    assert "PASS: 41 outcomes" in out


async def test_audit_cli_names_the_forged_nonce_and_exits_non_zero(
    dice_process: ServiceProcess, nc: NATS
) -> None:
    await start(dice_process)
    client = DiceClient(nc)
    game_id = new_game_id()
    await client.open_game(game_id, SEEDS)
    code, out = await run_audit(dice_process.address, game_id)
    assert code == 2 and "not revealed" in out  # nothing to verify yet

    for i in range(4):
        await client.roll(game_id, f"r{i}", 1, 6)
    forged = await wrong_roll(nc, game_id, SEEDS, 4, 2, 6)
    await forge_outcome(nc, game_id, 4, forged, count=2)
    await client.reveal(game_id)

    code, out = await run_audit(dice_process.address, game_id)
    assert code == 1, out
    assert "FAIL at nonce 4 (values_mismatch)" in out
    code, out = await run_audit(dice_process.address, game_id, "--json")
    assert code == 1 and '"nonce": 4' in out and f'"recorded": {forged}' in out

    code, out = await run_audit(dice_process.address, "unknown-game")
    assert code == 2 and "NOT_FOUND" in out


@pytest.mark.parametrize("ledger_first", [False, True])
def test_add_parser_shares_the_audit_command(ledger_first: bool) -> None:
    parser = argparse.ArgumentParser(prog="boulevard")
    sub = parser.add_subparsers(dest="command", required=True)

    def add_ledger() -> None:  # what another `audit` module may do
        audit = sub.choices.get("audit") or sub.add_parser("audit")
        inner = next(
            (a for a in audit._actions if isinstance(a, argparse._SubParsersAction)), None
        ) or audit.add_subparsers(dest="audit_command", required=True)
        inner.add_parser("ledger").set_defaults(func=lambda args: 0)

    if ledger_first:
        add_ledger()
    audit_dice.add_parser(sub)
    if not ledger_first:
        add_ledger()
    args = parser.parse_args(["audit", "dice", "g-1", "--dice", "127.0.0.1:1", "--json"])
    assert (args.game_id, args.dice, args.json, args.func) == (
        "g-1",
        "127.0.0.1:1",
        True,
        audit_dice.run,
    )
    assert parser.parse_args(["audit", "ledger"]).func(None) == 0
