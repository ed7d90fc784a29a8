"""Helpers for the dice integration tests: the service in-process or as a process, and a
forger that writes records straight onto the DICE stream (what a dishonest operator or a
bug could do; the verifier must catch it)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
from nats.aio.client import Client as NATS

from boulevard.api.v1 import dice_pb2
from boulevard.fairness import GameSeeds
from boulevard.platform.server import RunningService, start_service
from services.dice.app import DiceApp
from services.dice.sealing import SeedSealer
from services.dice.settings import DiceSettings

TEST_KEY = "11" * 32


def dice_settings(nats_url: str, data_dir: Path, **overrides: Any) -> DiceSettings:
    values: dict[str, Any] = {
        "NATS_URL": nats_url,
        "data_dir": data_dir,
        "dice_seed_key": TEST_KEY,
        "log_format": "console",
        "shutdown_grace_seconds": 1.0,
        **overrides,
    }
    return DiceSettings(**values)


@asynccontextmanager
async def running_dice(settings: DiceSettings) -> AsyncIterator[RunningService]:
    service = await start_service(DiceApp(settings), settings, port=0)
    try:
        yield service
    finally:
        await service.stop()


@asynccontextmanager
async def channel_to(address: str) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(address) as channel:
        yield channel


def new_game_id() -> str:
    return f"g-{secrets.token_hex(6)}"


async def last_subject_seq(nc: NATS, game_id: str) -> int:
    msg = await nc.jetstream().get_last_msg("DICE", f"dice.{game_id}", direct=True)
    assert msg.seq is not None
    return msg.seq


async def forge(nc: NATS, game_id: str, record: dice_pb2.DiceRecord) -> None:
    """Append a record the dice service never made."""
    await nc.jetstream().publish(f"dice.{game_id}", record.SerializeToString())


async def peek_seed(nc: NATS, game_id: str) -> bytes:
    """The game's unrevealed seed, read from the vault with the test key (what only the dice
    service can do) so a test can forge values that are certainly wrong."""
    entry = await (await nc.jetstream().key_value("dice_seeds")).get(game_id)
    assert entry.value is not None
    return SeedSealer(bytes.fromhex(TEST_KEY)).open(game_id, entry.value)


async def wrong_roll(
    nc: NATS, game_id: str, client_seeds: list[str], nonce: int, count: int, sides: int
) -> list[int]:
    """Values for outcome `nonce` that differ from what the seed gives."""
    seeds = GameSeeds.of(await peek_seed(nc, game_id), client_seeds, game_id)
    true = seeds.roll(nonce, count, sides)
    return [true[0] % sides + 1, *true[1:]]


async def forge_outcome(
    nc: NATS, game_id: str, nonce: int, values: list[int], count: int = 1, sides: int = 6
) -> None:
    outcome = dice_pb2.DiceOutcome(
        game_id=game_id,
        nonce=nonce,
        kind=dice_pb2.OUTCOME_KIND_ROLL,
        count=count,
        sides=sides,
        values=values,
        request_id=f"forged-{nonce}",
    )
    await forge(nc, game_id, dice_pb2.DiceRecord(outcome=outcome))
