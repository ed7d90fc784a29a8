"""A draw is answered once its outcome leaf is stored; its signed head is stored right after,
off the engine's path (issue 28). Against a real nats-server, with the dice log's head
appends held back at will, so what is stored when the draw returns is counted, not timed:

- when a draw returns, exactly one record more is on the game's subject: its leaf;
- nothing of the game moves past a pending head: the next draw, and this process's reads,
  wait for it, so the log stays leaf, head, leaf, head (what auditors read);
- a head that is never stored (the process dies after the reply, or NATS fails the head)
  leaves the newest leaf unsigned, which the next load signs: the outcome the engine got
  is the one audited, and the nonces go on without a gap or a re-roll.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import dice_pb2
from boulevard.client.dice import DiceReader
from boulevard.messaging.streams import ensure_stream, platform_streams
from services.dice.dealer import Dealer
from services.dice.queries import DiceQueries
from services.dice.sealing import SeedSealer
from services.dice.settings import DiceSettings
from services.dice.store import DiceLog, GamesLog, SeedVault
from services.engine.dice_client import DiceClient
from tests.integration.dice.support import (
    channel_to,
    commitments,
    dice_settings,
    finish_and_reveal,
    new_game_id,
    running_dice,
)
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration

SEEDS = ["ann-seed", "bob-seed"]
WAIT = 10.0  # bounds a wait that would never end if the dealer broke its contract


class HeldHeads(DiceLog):
    """The real dice log, except that while `held` a head append waits for `release`
    (a leaf is never held): the state between a draw's leaf and its head, kept open."""

    def __init__(self, nc: NATS, stream: str, prefix: str) -> None:
        super().__init__(nc, stream, prefix)
        self.held = False
        self.release = asyncio.Event()
        self.waiting = asyncio.Event()  # a head append is being held now
        self.fail_heads = 0  # this many head appends fail as NATS not answering would

    async def append(
        self, game_id: str, record: dice_pb2.DiceRecord, msg_id: str, expected_last_seq: int
    ) -> int:
        if record.HasField("head"):
            if self.fail_heads:
                self.fail_heads -= 1
                raise TimeoutError("NATS did not answer")
            if self.held:
                self.waiting.set()
                await self.release.wait()
        return await super().append(game_id, record, msg_id, expected_last_seq)


class WatchedDealer(Dealer):
    """The dealer, noting each time something waits for a game's pending head."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settling: list[str] = []
        self.one_more = asyncio.Event()

    async def settle(self, game_id: str) -> None:
        self.settling.append(game_id)
        self.one_more.set()
        await super().settle(game_id)


@asynccontextmanager
async def dealer_on(
    nc: NATS, settings: DiceSettings
) -> AsyncIterator[tuple[WatchedDealer, HeldHeads, DiceQueries]]:
    """A dealer as the dice app wires it, on a dice log whose heads can be held."""
    js = nc.jetstream()
    await ensure_stream(js, platform_streams(settings)["dice"])
    vault = await SeedVault.open(js, settings.dice_seeds_bucket, SeedSealer(settings.seed_key()))
    dice_log = HeldHeads(nc, settings.dice_stream, settings.dice_subject_prefix)
    games = GamesLog(nc, settings.games_stream, settings.games_subject_prefix)
    dealer = WatchedDealer(dice_log, vault, settings.signer(), games.ended)
    yield dealer, dice_log, DiceQueries(dice_log, dealer.public_key, dealer.settle)


def kinds(records: list[dice_pb2.DiceRecord]) -> list[str]:
    return [r.WhichOneof("record") or "" for r in records]


async def stored(dice_log: DiceLog, game_id: str) -> list[dice_pb2.DiceRecord]:
    return [r.record for r in (await dice_log.read(game_id))[0]]


async def test_a_draw_is_answered_after_its_leaf_and_nothing_passes_its_head(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    async with dealer_on(nc, dice_settings(nats_server.url, tmp_path)) as (dealer, log, reads):
        game_id = new_game_id()
        await dealer.open_game(game_id, commitments(SEEDS))
        await dealer.fix_seeds(game_id, SEEDS)
        opening = ["opened", "head", "seeds", "head"]
        assert kinds(await stored(log, game_id)) == opening

        log.held = True
        # Returns with its head held (bounded: a reply that waited for it would never come).
        first = await asyncio.wait_for(dealer.roll(game_id, "r0", 2, 6), WAIT)
        after_reply = await stored(log, game_id)
        assert kinds(after_reply) == [*opening, "outcome"]  # one write before the reply
        assert after_reply[-1].outcome == first
        await asyncio.wait_for(log.waiting.wait(), WAIT)

        # The next draw and a read of the game wait for the head (a retry of this draw
        # queues behind the next draw, on the game's lock).
        dealer.settling.clear()
        second = asyncio.create_task(dealer.roll(game_id, "r1", 1, 6))
        retry = asyncio.create_task(dealer.roll(game_id, "r0", 2, 6))
        listed = asyncio.create_task(reads.list_outcomes(game_id, 10, ""))
        while len(dealer.settling) < 2:  # the next draw and the read are behind the head
            dealer.one_more.clear()
            await asyncio.wait_for(dealer.one_more.wait(), WAIT)
        assert kinds(await stored(log, game_id)) == [*opening, "outcome"]
        assert not (second.done() or retry.done() or listed.done())

        log.release.set()
        assert (await second).nonce == 1
        assert await retry == first
        outcomes = (await listed).outcomes
        assert [o.nonce for o in outcomes][:1] == [0]  # the held draw is served
        await dealer.drain()
        records = await stored(log, game_id)
        assert kinds(records) == [*opening, "outcome", "head", "outcome", "head"]
        assert [r.head.tree_size for r in records if r.HasField("head")] == [1, 2, 3, 4]


async def test_a_head_lost_after_the_reply_is_signed_on_the_next_load(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    """The process dies after answering a draw and before its head is stored: the engine
    holds an outcome whose leaf has no head. A fresh service signs the head on load, draws
    on from the next nonce, and the game audits with the outcome the engine got."""
    settings = dice_settings(nats_server.url, tmp_path)
    game_id = new_game_id()
    async with dealer_on(nc, settings) as (dealer, log, _):
        await dealer.open_game(game_id, commitments(SEEDS))
        await dealer.fix_seeds(game_id, SEEDS)
        log.held = True
        answered = await asyncio.wait_for(dealer.roll(game_id, "r0", 3, 6), WAIT)
        await asyncio.wait_for(log.waiting.wait(), WAIT)
        pending = dealer._pending[game_id]
        pending.cancel()  # the process is gone: its head is never stored
        with pytest.raises(asyncio.CancelledError):
            await pending
    assert kinds(await stored(DiceLog(nc, "DICE", "dice"), game_id))[-2:] == ["head", "outcome"]

    async with running_dice(settings) as service, channel_to(service.address) as channel:
        client = DiceClient(nc)
        head = await client.head(game_id)
        assert head.tree_size == 3  # opening, seeds, the answered draw
        assert await client.roll(game_id, "r0", 3, 6) == answered  # no re-roll
        assert (await client.roll(game_id, "r1", 1, 6)).nonce == 1
        await finish_and_reveal(nc, client, game_id)
        reader = DiceReader(channel)
        report = await reader.audit_game(game_id)
        assert report.ok and report.checked == 2, report.describe()
        listed = [o async for o in reader.outcomes(game_id)]
        assert listed[0].values == answered.values and listed[0].nonce == 0


async def test_a_head_nats_refused_is_signed_before_the_next_draw(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    """The process lives but the head's append fails (NATS unreachable for it): the game
    is re-read at its next use, which signs the missing head before anything follows."""
    async with dealer_on(nc, dice_settings(nats_server.url, tmp_path)) as (dealer, log, _):
        game_id = new_game_id()
        await dealer.open_game(game_id, commitments(SEEDS))
        await dealer.fix_seeds(game_id, SEEDS)
        log.fail_heads = 1
        await dealer.roll(game_id, "r0", 1, 6)
        await dealer.settle(game_id)
        assert log.fail_heads == 0
        assert kinds(await stored(log, game_id))[-1] == "outcome"  # no head yet
        assert (await dealer.roll(game_id, "r1", 1, 6)).nonce == 1
        await dealer.drain()
        records = await stored(log, game_id)
        assert kinds(records)[4:] == ["outcome", "head", "outcome", "head"]
        assert [r.head.tree_size for r in records if r.HasField("head")] == [1, 2, 3, 4]
