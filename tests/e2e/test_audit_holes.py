"""Holes a dishonest operator (every service's identity and key, no player's) had in the
audits (issue 25), tried on the whole platform: each test fails on the code before the fix."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.audit.signing import chain_hash
from boulevard.eventlog.jetstream import EXPECTED_LAST_SUBJECT_SEQ, MSG_ID
from boulevard.fairness import client_seed_commitment
from tests.e2e.conftest import Platform
from tests.e2e.test_game_audit import play, stored_log
from tests.e2e.test_games import OPERATOR_MD, create
from tests.support.keys import seat_key

pytestmark = pytest.mark.e2e


def test_an_operator_cannot_name_a_seat_bot_n(platform: Platform) -> None:
    """CreateGame took `bot-1` as a human seat (bot: false) with a key the operator chose and
    handed the operator its token, though `bot-<n>` seats are the platform's bots."""

    async def run() -> None:
        seats = [
            engine_pb2.SeatAssignment(
                seat=i,
                player_id=name,
                client_seed_commitment=client_seed_commitment(f"s{i}"),
                public_key=seat_key(i).public_hex,
            )
            for i, name in enumerate(["ann", "bot-1"])
        ]
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.CreateGame(
                    engine_pb2.CreateGameRequest(
                        request_id="reserved-bot", game="las_vegas", seats=seats
                    ),
                    metadata=OPERATOR_MD,
                )
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "reserved for the platform's bots" in (err.value.details() or "")

    asyncio.run(run())


async def append_as_engine(
    platform: Platform, game_id: str, envelope: events_pb2.EventEnvelope
) -> None:
    """Publish `envelope` as the game's next commit with the engine's own NATS identity,
    chained correctly: what an operator holding the engine's credentials can write."""
    nc = await platform.nats.connect("engine")
    try:
        js = nc.jetstream()
        last = await js.get_last_msg("GAMES", f"game.{game_id}")
        commit = events_pb2.EventCommit(
            first_version=envelope.version,
            events=[
                events_pb2.StoredEvent(
                    event_id=envelope.event_id,
                    type=envelope.type,
                    data=envelope.SerializeToString(),
                )
            ],
        )
        await js.publish(
            f"game.{game_id}",
            commit.SerializeToString(),
            headers={MSG_ID: envelope.event_id, EXPECTED_LAST_SUBJECT_SEQ: str(last.seq)},
        )
    finally:
        await nc.close()


def cli(platform: Platform, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def addresses(platform: Platform, *names: str) -> list[str]:
    return [a for n in names for a in (f"--{n}", platform.address(n))]


def test_audit_all_covers_running_games_and_its_ledger_step_is_the_whole_ledger_audit(
    platform: Platform,
) -> None:
    """`audit all` audited finished games only, and its ledger step skipped reconciliation:
    after a money event forged with the engine's identity (its envelope moves money its
    payload does not), `audit ledger` failed while `audit all` said `PASS ledger: ok`."""
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))

    async def run() -> tuple[str, str, int]:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            running = await create(stub, "las_vegas", 2)
        game_id, _ = await play(platform, "las_vegas", 2)
        log = await stored_log(platform, game_id)
        money = next(
            events_pb2.EventEnvelope.FromString(d)
            for d in log
            if events_pb2.EventEnvelope.FromString(d).transfers
        )
        forged = events_pb2.EventEnvelope()
        forged.CopyFrom(money)
        forged.event_id = uuid.uuid4().hex
        forged.version = len(log) + 1
        forged.prev_hash = chain_hash(log[-1])
        for t in forged.transfers:  # the ledger posts these; the rules move half
            t.amount *= 2
        await append_as_engine(platform, game_id, forged)
        return running.game_id, game_id, forged.version

    running, forged_game, version = asyncio.run(run())
    ledger = cli(platform, "audit", "ledger", "--quiet", "--address", platform.address("ledger"))
    assert ledger.returncode == 1, ledger.stdout + ledger.stderr
    everything = cli(
        platform, "audit", "all", "--game-name", "las_vegas", "--since", started, "--json",
        *addresses(platform, "engine", "dice", "ledger"),
    )  # fmt: skip
    assert everything.returncode == 1, everything.stdout + everything.stderr
    result = json.loads(everything.stdout)
    verdicts = {g["game_id"]: g for g in result["games"]}
    assert verdicts[running]["ok"], verdicts[running]
    assert "running: its log audited to version" in verdicts[running]["verdict"]
    assert not verdicts[forged_game]["ok"] and verdicts[forged_game]["failed_at"] == version
    assert not result["ledger"]["ok"], result["ledger"]
    assert result["ledger"]["verdict"] == ledger.stdout.strip().replace("FAIL ", "FAIL ledger: ")
