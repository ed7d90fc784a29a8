"""No single message wedges the dice service: garbage requests on `dice.rpc.*` get an error
reply, garbage and out-of-sequence records on a game's DICE subject are skipped (logged,
counted), and the game goes on drawing consecutive nonces, also after a restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import dice_pb2
from boulevard.client.dice import DiceReader
from boulevard.messaging.poison import POISONED
from services.engine.dice_client import DiceClient
from tests.integration.dice.support import (
    channel_to,
    dice_settings,
    finish_and_reveal,
    forge_outcome,
    new_game_id,
    open_with_seeds,
    running_dice,
)
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration

SEEDS = ["alice-seed", "bob-seed"]
GARBAGE = b"\xff\xfe\x00garbage\x80"


async def test_garbage_requests_and_records_do_not_wedge_dice(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    settings = dice_settings(nats_server.url, tmp_path)
    client = DiceClient(nc)
    garbled, skipped = new_game_id(), new_game_id()
    async with running_dice(settings) as service:
        for game_id in (garbled, skipped):
            await open_with_seeds(client, game_id, SEEDS)
            for i in range(2):
                await client.roll(game_id, f"r{i}", 2, 6)

        # Requests: an error reply each, and the service keeps answering.
        for subject in ("dice.rpc.roll", "dice.rpc.open", "dice.rpc.nonsense"):
            msg = await nc.request(subject, GARBAGE, timeout=5)
            reply = dice_pb2.DiceRpcReply.FromString(msg.data)
            assert reply.error.code == "invalid_argument", subject

        # Records the service never wrote, on the games' own subjects.
        before = sum(POISONED.values())
        await nc.jetstream().publish(f"dice.{garbled}", GARBAGE)
        await forge_outcome(nc, skipped, 50, [6])
        for game_id in (garbled, skipped):
            outcome = await client.roll(game_id, "after", 2, 6)
            assert outcome.nonce == 2  # the next consecutive nonce, not 51
        assert sum(POISONED.values()) > before

    # A restart reads the same logs and goes on.
    async with running_dice(settings) as service:
        for game_id in (garbled, skipped):
            assert (await client.roll(game_id, "restarted", 1, 6)).nonce == 3
            assert (await client.roll(game_id, "after", 2, 6)).nonce == 2  # idempotent
        await finish_and_reveal(nc, client, garbled)
        async with channel_to(service.address) as channel:
            report = await DiceReader(channel).verify_remote(garbled)
            assert report.ok, report.summary
