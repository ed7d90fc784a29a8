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

from boulevard.api.v1 import dice_pb2, events_pb2
from boulevard.fairness import GameSeeds, client_seed_commitment
from boulevard.messaging.streams import ensure_stream, platform_streams
from boulevard.platform.server import RunningService, start_service
from boulevard.platform.settings import Settings
from services.dice.app import DiceApp
from services.dice.sealing import SeedSealer
from services.dice.settings import DiceSettings
from services.engine.dice_client import DiceClient

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


def expand(records: list[dice_pb2.DiceRecord]) -> list[dice_pb2.DiceRecord]:
    """The records in the two-message form: each `signed_leaf` as its leaf, then its head
    (what releases before the one-record form stored; the auditors read both alike)."""
    out: list[dice_pb2.DiceRecord] = []
    for record in records:
        if record.HasField("signed_leaf"):
            out.append(dice_pb2.DiceRecord.FromString(record.signed_leaf.leaf))
            out.append(dice_pb2.DiceRecord(head=record.signed_leaf.head))
        else:
            out.append(record)
    return out


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


def commitments(client_seeds: list[str]) -> list[str]:
    return [client_seed_commitment(s) for s in client_seeds]


async def open_with_seeds(client: DiceClient, game_id: str, client_seeds: list[str]) -> None:
    """The opening as the engine runs it: commitments first, then the revealed seeds."""
    await client.open_game(game_id, commitments(client_seeds))
    await client.fix_seeds(game_id, client_seeds)


async def finish_game(nc: NATS, game_id: str, last_type: str = "GameFinished") -> None:
    """Record on GAMES (as the engine would) that the game's last event is `last_type`: the
    dice service reveals a seed only once the game's log says the game ended."""
    js = nc.jetstream()
    await ensure_stream(js, platform_streams(Settings())["games"])
    commit = events_pb2.EventCommit(
        first_version=1,
        events=[events_pb2.StoredEvent(event_id=secrets.token_hex(8), type=last_type)],
    )
    await js.publish(f"game.{game_id}", commit.SerializeToString())


async def finish_and_reveal(nc: NATS, client: DiceClient, game_id: str) -> dice_pb2.DiceReveal:
    await finish_game(nc, game_id)
    return await client.reveal(game_id)
