"""The dice service against a real nats-server: outcomes recorded before they are returned,
verifiable after the reveal, identical on retry, seeds sealed until the reveal."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import grpc
import pytest
from nats.aio.client import Client as NATS
from nats.js.errors import KeyDeletedError, KeyNotFoundError

from boulevard.accounting.treehead import key_id
from boulevard.api.v1 import dice_pb2, dice_pb2_grpc
from boulevard.audit.dice_anchor import anchor_problem
from boulevard.client.dice import DiceReader
from boulevard.contract.dice_log import head_ref_of
from boulevard.fairness import GameSeeds, commitment
from boulevard.games.base import ChanceKind, ChanceRequest
from boulevard.platform.errors import FailedPrecondition, InvalidArgument, NotFound
from services.dice.app import DiceApp
from services.engine.dice_client import DiceClient
from tests.integration.dice.support import (
    channel_to,
    commitments,
    dice_settings,
    finish_and_reveal,
    finish_game,
    forge,
    forge_outcome,
    new_game_id,
    open_with_seeds,
    running_dice,
    wrong_roll,
)
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration

SEEDS = ["ann-seed", "bob-seed", ""]


async def play(client: DiceClient, game_id: str, rounds: int = 5) -> list[dice_pb2.DiceOutcome]:
    outcomes = []
    for i in range(rounds):
        outcomes.append(await client.roll(game_id, f"r{i}", 2, 6, "turn"))
    outcomes.append(await client.shuffle(game_id, "deck", 49, "deck"))
    outcomes.append(await client.roll(game_id, "d10", 3, 10, "d10"))
    return outcomes


async def test_a_game_verifies_after_its_reveal(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    settings = dice_settings(nats_server.url, tmp_path)
    async with running_dice(settings) as service, channel_to(service.address) as channel:
        client = DiceClient(nc)
        reader = DiceReader(channel)
        game_id = new_game_id()
        opened = await client.open_game(game_id, commitments(SEEDS))
        assert opened.scheme == "boulevard-fairness-v1" and len(opened.commitment) == 64
        assert (await client.open_game(game_id, commitments(SEEDS))) == opened  # idempotent
        # No draw before the seeds the seats committed to are known.
        with pytest.raises(FailedPrecondition, match="not fixed"):
            await client.roll(game_id, "early", 1, 6)
        await client.fix_seeds(game_id, SEEDS)

        outcomes = await play(client, game_id)
        assert [o.nonce for o in outcomes] == list(range(len(outcomes)))
        assert sorted(outcomes[5].values) == list(range(49))

        # Before the reveal: no seed, no verification, draws possible.
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await reader.get_reveal(game_id)
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        status = await reader.get_commitment(game_id)
        assert status.commitment == opened and list(status.seeds.client_seeds) == SEEDS
        # Secret until used: before the reveal the outcomes are listed without values.
        hidden = [o async for o in reader.outcomes(game_id, page_size=3)]
        assert [o.nonce for o in hidden] == list(range(len(outcomes)))
        assert all(not o.values and not o.blinding for o in hidden)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await reader.log_records(game_id)
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert (status.outcome_count, status.revealed) == (len(outcomes), False)

        # No reveal while the game's own log does not record its end.
        with pytest.raises(FailedPrecondition, match="has not ended"):
            await client.reveal(game_id)
        await finish_game(nc, game_id, last_type="ChanceResolved")
        with pytest.raises(FailedPrecondition, match="has not ended"):
            await client.reveal(game_id)
        reveal = await finish_and_reveal(nc, client, game_id)
        assert reveal.outcome_count == len(outcomes)
        assert hashlib.sha256(bytes.fromhex(reveal.server_seed)).hexdigest() == opened.commitment
        assert await client.reveal(game_id) == reveal  # idempotent

        # Each recorded outcome is what the engine got.
        listed = [o async for o in reader.outcomes(game_id, page_size=2)]
        assert listed == outcomes

        report = await reader.audit_game(game_id)
        assert report.ok and report.checked == len(outcomes), report.describe()
        remote = await reader.verify_remote(game_id)
        assert remote.ok and remote.checked == len(outcomes), remote.summary

        # And they are the scheme's outcomes for this seed.
        seeds = GameSeeds.of(bytes.fromhex(reveal.server_seed), SEEDS, game_id)
        assert tuple(outcomes[0].values) == seeds.roll(0, 2, 6)

        with pytest.raises(FailedPrecondition):
            await client.roll(game_id, "after-the-end", 1, 6)


async def test_retries_return_the_recorded_outcome(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    async with running_dice(dice_settings(nats_server.url, tmp_path)):
        client = DiceClient(nc)
        game_id = new_game_id()
        await open_with_seeds(client, game_id, SEEDS)
        first = await client.roll(game_id, "req-1", 3, 6)
        again = await client.roll(game_id, "req-1", 3, 6)
        assert again == first
        # Ten copies of one request in flight at once: one outcome, one nonce.
        burst = await asyncio.gather(*(client.roll(game_id, "req-2", 5, 6) for _ in range(10)))
        assert len({o.SerializeToString() for o in burst}) == 1 and burst[0].nonce == 1
        nxt = await client.roll(game_id, "req-3", 1, 6)
        assert nxt.nonce == 2
        # A request id is bound to its draw: no re-rolling with other parameters.
        with pytest.raises(InvalidArgument):
            await client.roll(game_id, "req-1", 3, 10)
        deck = await client.shuffle(game_id, "deck", 52)
        assert await client.shuffle(game_id, "deck", 52) == deck

        resolved = await client.resolve(game_id, "chance-1", ChanceRequest("x", ChanceKind.ROLL, 2))
        assert resolved.nonce == 4 and len(resolved.values) == 2
        assert resolved == await client.resolve(
            game_id, "chance-1", ChanceRequest("x", ChanceKind.ROLL, 2)
        )


async def test_the_retry_key_is_durable_beyond_a_restart(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    settings = dice_settings(nats_server.url, tmp_path)
    game_id = new_game_id()
    client = DiceClient(nc)
    async with running_dice(settings):
        await open_with_seeds(client, game_id, SEEDS)
        first = await client.roll(game_id, "req-1", 4, 6)
    async with running_dice(settings):  # a fresh process: nothing cached
        assert await client.roll(game_id, "req-1", 4, 6) == first
        assert (await client.roll(game_id, "req-2", 1, 6)).nonce == 1


async def test_the_head_op_signs_what_game_finished_anchors(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    """`dice.rpc.head`: the stored signed head over every leaf so far, the same when asked
    again; after the reveal the served log is exactly those leaves and the reveal, which
    the anchor check accepts. A game never opened, or a bad id, is refused."""
    async with running_dice(dice_settings(nats_server.url, tmp_path)) as service:
        client = DiceClient(nc)
        game_id = new_game_id()
        await open_with_seeds(client, game_id, SEEDS)
        await play(client, game_id, rounds=2)
        head = await client.head(game_id)
        assert head.game_id == game_id and head.tree_size == 2 + 4  # opening, seeds, draws
        assert await client.head(game_id) == head  # the stored one, not a fresh signature
        async with channel_to(service.address) as channel:
            reader = DiceReader(channel)
            served = await reader.log_heads(game_id)
            assert served.heads[-1] == head
            await finish_and_reveal(nc, client, game_id)
            leaves = await reader.log_records(game_id)
        assert len(leaves) == head.tree_size + 1
        keys = {key_id(bytes(served.public_key)): bytes(served.public_key)}
        assert anchor_problem(game_id, head_ref_of(head), leaves, keys) is None
        with pytest.raises(FailedPrecondition, match="no dice game"):
            await client.head(new_game_id())
        with pytest.raises(InvalidArgument):
            await client.head("bad.game.id")


class Crash(Exception):
    """The dice process dying between a leaf and its head."""


@pytest.mark.parametrize("crash_after", ["open", "roll"])
async def test_a_head_is_signed_for_a_leaf_a_crash_left_unsigned(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path, crash_after: str
) -> None:
    """A crash between a leaf and its head stored apart (an older release's log, or one
    written with heads_apart) leaves the newest leaf unsigned: the next `dice.rpc.head` (on
    a restarted service, writing the one-record form) signs one over it, as the audit
    needs."""
    settings = dice_settings(nats_server.url, tmp_path)
    game_id = new_game_id()
    crashed = DiceApp(dice_settings(nats_server.url, tmp_path, dice_heads_apart=True))
    await crashed.start(nc)
    dealer = crashed.dealer
    assert dealer is not None
    try:
        if crash_after == "roll":
            await dealer.open_game(game_id, commitments(SEEDS))
            await dealer.fix_seeds(game_id, SEEDS)

        async def die(table: object) -> None:
            raise Crash

        dealer._sign = die  # type: ignore[method-assign]
        with pytest.raises(Crash):
            if crash_after == "roll":
                await dealer.roll(game_id, "r0", 1, 6)
            else:
                await dealer.open_game(game_id, commitments(SEEDS))
    finally:
        await crashed.stop()
    leaves = 3 if crash_after == "roll" else 1
    async with running_dice(settings) as service, channel_to(service.address) as channel:
        reader = DiceReader(channel)
        if crash_after == "roll":
            before = (await reader.log_heads(game_id)).heads
            assert max(h.tree_size for h in before) == leaves - 1
        head = await DiceClient(nc).head(game_id)
        assert head.tree_size == leaves
        served = await reader.log_heads(game_id)
        assert served.heads[-1] == head and served.tree_size == leaves
        # And the game goes on to a log that audits (the commitment inside the tree).
        client = DiceClient(nc)
        if crash_after == "open":
            await client.open_game(game_id, commitments(SEEDS))
            await client.fix_seeds(game_id, SEEDS)
        await client.roll(game_id, "r1", 1, 6)
        await finish_and_reveal(nc, client, game_id)
        report = await reader.audit_game(game_id)
        assert report.ok, report.describe()


async def test_bad_requests_get_precise_errors(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    async with running_dice(dice_settings(nats_server.url, tmp_path)) as service:
        client = DiceClient(nc)
        with pytest.raises(NotFound):
            await client.roll("no-such-game", "r", 1, 6)
        with pytest.raises(InvalidArgument):
            await client.open_game("bad.game.id", commitments(SEEDS))
        with pytest.raises(InvalidArgument, match="commitment"):
            await client.open_game(new_game_id(), ["not a hash"])
        game_id = new_game_id()
        await client.open_game(game_id, commitments(SEEDS))
        with pytest.raises(FailedPrecondition):
            await client.open_game(game_id, commitments(["someone else"]))
        # Seeds must be the committed ones, one per seat; a missing seat only after the
        # deadline.
        with pytest.raises(InvalidArgument, match="seat 1"):
            await client.fix_seeds(game_id, [SEEDS[0], "eve", SEEDS[2]])
        with pytest.raises(InvalidArgument):
            await client.fix_seeds(game_id, SEEDS[:2])
        with pytest.raises(FailedPrecondition, match="deadline"):
            await client.fix_seeds(game_id, [SEEDS[0], "", SEEDS[2]], [1])
        await client.fix_seeds(game_id, SEEDS)
        with pytest.raises(FailedPrecondition):
            await client.fix_seeds(game_id, [SEEDS[0], SEEDS[1], ""], [2])
        for count, sides in ((0, 6), (1, 0), (20_000, 6)):
            with pytest.raises(InvalidArgument):
                await client.roll(game_id, f"bad-{count}-{sides}", count, sides)
        with pytest.raises(InvalidArgument):
            await client.roll(game_id, "", 1, 6)
        # Nothing bad took a nonce.
        assert (await client.roll(game_id, "good", 1, 6)).nonce == 0
        # An old engine sending plaintext client seeds with the open is refused.
        legacy = dice_pb2.DiceOpenRequest(game_id=new_game_id()).SerializeToString()
        reply = await nc.request("dice.rpc.open", legacy + b"\x12\x04seed", timeout=5)
        error = dice_pb2.DiceRpcReply.FromString(reply.data).error
        assert error.code == "invalid_argument" and "commitments only" in error.message
        reply = await nc.request("dice.rpc.roll", b"\xff\xff not protobuf", timeout=5)
        assert dice_pb2.DiceRpcReply.FromString(reply.data).error.code == "invalid_argument"
        async with channel_to(service.address) as channel:
            reader = DiceReader(channel)
            for call in (reader.get_commitment("missing"), reader.get_reveal("missing")):
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await call
                assert err.value.code() == grpc.StatusCode.NOT_FOUND
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await reader.get_commitment("bad.id")
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            stub = dice_pb2_grpc.DiceServiceStub(channel)
            for page_size, token in ((5000, ""), (10, "not-a-token"), (10, "-1")):
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await stub.ListOutcomes(
                        dice_pb2.ListOutcomesRequest(
                            game_id=game_id, page_size=page_size, page_token=token
                        )
                    )
                assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await reader.verify_remote(game_id)
            assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            # The ledger's codes for the same questions (issue 27: past the tree was
            # INVALID_ARGUMENT with an "out_of_range:" message here, OUT_OF_RANGE there).
            out_of_range = grpc.StatusCode.OUT_OF_RANGE
            bad_proofs = (
                (
                    stub.GetLogInclusionProof(
                        dice_pb2.GetLogInclusionProofRequest(
                            game_id=game_id, tree_size=1, leaf_index=1
                        )
                    ),
                    out_of_range,
                ),
                (
                    stub.GetLogInclusionProof(
                        dice_pb2.GetLogInclusionProofRequest(game_id=game_id, tree_size=99)
                    ),
                    out_of_range,
                ),
                (
                    stub.GetLogInclusionProof(
                        dice_pb2.GetLogInclusionProofRequest(game_id=game_id, tree_size=0)
                    ),
                    grpc.StatusCode.INVALID_ARGUMENT,
                ),
                (
                    stub.GetLogConsistencyProof(
                        dice_pb2.GetLogConsistencyProofRequest(
                            game_id=game_id, first_tree_size=0, second_tree_size=1
                        )
                    ),
                    grpc.StatusCode.INVALID_ARGUMENT,
                ),
                (
                    stub.GetLogConsistencyProof(
                        dice_pb2.GetLogConsistencyProofRequest(
                            game_id=game_id, first_tree_size=1, second_tree_size=99
                        )
                    ),
                    out_of_range,
                ),
            )
            for call, code in bad_proofs:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await call
                assert err.value.code() == code, err.value.details()
                assert not err.value.details().startswith("out_of_range:")
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await reader.log_heads(game_id, tree_size=99)
            assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_seeds_are_sealed_until_the_reveal(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    async with running_dice(dice_settings(nats_server.url, tmp_path)):
        client = DiceClient(nc)
        game_id = new_game_id()
        await open_with_seeds(client, game_id, SEEDS)
        await play(client, game_id, rounds=2)
        js = nc.jetstream()
        vault = await js.key_value("dice_seeds")
        sealed = (await vault.get(game_id)).value
        stream_bytes = b""
        last = (await js.stream_info("DICE")).state.last_seq
        for seq in range(1, last + 1):
            stream_bytes += (await js.get_msg("DICE", seq)).data or b""
        reveal = await finish_and_reveal(nc, client, game_id)
        seed = bytes.fromhex(reveal.server_seed)
        assert (
            sealed is not None and seed not in sealed and reveal.server_seed.encode() not in sealed
        )
        assert seed not in stream_bytes and reveal.server_seed.encode() not in stream_bytes
        assert commitment(seed) == (await client.open_game(game_id, commitments(SEEDS))).commitment


async def test_a_wrong_seed_key_cannot_open_the_vault(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    game_id = new_game_id()
    client = DiceClient(nc, retry_for=1)
    async with running_dice(dice_settings(nats_server.url, tmp_path)):
        await open_with_seeds(client, game_id, SEEDS)
    other_key = dice_settings(nats_server.url, tmp_path, dice_seed_key="22" * 32)
    async with running_dice(other_key):
        with pytest.raises(FailedPrecondition, match="sealed with another key"):
            await client.roll(game_id, "r", 1, 6)


async def test_the_dice_stream_holds_no_rpc_traffic(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    async with running_dice(dice_settings(nats_server.url, tmp_path)):
        client = DiceClient(nc)
        game_id = new_game_id()
        await open_with_seeds(client, game_id, SEEDS)
        await client.roll(game_id, "r", 1, 6)
        info = await nc.jetstream().stream_info("DICE")
        assert info.config.subjects == ["dice.*"]
        # the commitment, the seeds and one outcome, each stored with its signed head
        assert info.state.messages == 3


async def test_forged_records_are_caught_with_their_nonce(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    async with running_dice(dice_settings(nats_server.url, tmp_path)) as service:
        client = DiceClient(nc)
        async with channel_to(service.address) as channel:
            reader = DiceReader(channel)

            # A forged outcome written mid-game: no signed head covers it, so the service
            # leaves it out (the game goes on drawing consecutive nonces, docs/security.md,
            # "Poison messages") and the audit of the raw log names it.
            tampered = new_game_id()
            await open_with_seeds(client, tampered, SEEDS)
            for i in range(3):
                await client.roll(tampered, f"r{i}", 1, 6)
            forged = await wrong_roll(nc, tampered, SEEDS, 3, 1, 6)
            await forge_outcome(nc, tampered, 3, forged)
            assert (await client.roll(tampered, "r3", 1, 6)).nonce == 3
            await finish_and_reveal(nc, client, tampered)
            report = await reader.audit_game(tampered)
            assert report.mismatch is not None and report.mismatch.code == "record_changed"
            assert "record 5 (the outcome with nonce 3)" in report.mismatch.message
            assert (await reader.verify_remote(tampered)).ok  # the service's own view is clean

            # Records added after the reveal: the audit names the first one.
            late = new_game_id()
            await open_with_seeds(client, late, SEEDS)
            await client.roll(late, "a", 1, 6)
            await finish_and_reveal(nc, client, late)
            await forge_outcome(nc, late, 1, [1])
            report = await reader.audit_game(late)
            assert report.mismatch is not None and report.mismatch.code == "record_unsigned"
            assert "record 4" in report.mismatch.message and "nonce 1" in report.mismatch.message

            # A wrong reveal forged in place of the real one.
            wrong = new_game_id()
            await open_with_seeds(client, wrong, SEEDS)
            await client.roll(wrong, "a", 1, 6)
            fake = dice_pb2.DiceReveal(game_id=wrong, server_seed="ab" * 32, outcome_count=1)
            await forge(nc, wrong, dice_pb2.DiceRecord(revealed=fake))
            assert (await client.roll(wrong, "b", 1, 6)).nonce == 1  # the fake is skipped
            await finish_and_reveal(nc, client, wrong)
            report = await reader.audit_game(wrong)
            assert report.mismatch is not None and report.mismatch.code == "record_changed"
            assert "record 3 (the revealed record)" in report.mismatch.message


async def test_two_replicas_share_a_game_without_gaps_or_repeats(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    settings = dice_settings(nats_server.url, tmp_path)
    async with running_dice(settings) as one, running_dice(settings):
        client = DiceClient(nc)
        game_id = new_game_id()
        await open_with_seeds(client, game_id, SEEDS)
        # The queue group spreads these over both replicas; each one's cache goes stale
        # whenever the other appends, and the expected-sequence check makes it re-read.
        outcomes = await asyncio.gather(
            *(client.roll(game_id, f"r{i}", 1, 6) for i in range(60)),
            *(client.roll(game_id, f"r{i}", 1, 6) for i in range(0, 60, 3)),  # retries
        )
        by_request = {f"r{i}": outcomes[i] for i in range(60)}
        for k, i in enumerate(range(0, 60, 3)):
            assert outcomes[60 + k] == by_request[f"r{i}"]
        assert sorted(o.nonce for o in outcomes[:60]) == list(range(60))
        # The head GameFinished records covers every leaf stored, whichever replica drew
        # the last one and whichever is asked (a stale cache would sign short of it).
        for i in range(60, 76):
            await client.roll(game_id, f"r{i}", 1, 6)
            assert (await client.head(game_id)).tree_size == 2 + i + 1
        await finish_and_reveal(nc, client, game_id)
        async with channel_to(one.address) as channel:
            report = await DiceReader(channel).audit_game(game_id)
        assert report.ok and report.checked == 76, report.describe()


async def test_a_seed_purge_that_fails_is_retried_until_the_seed_is_gone(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    """A reveal whose purge of the vaulted seed fails (here: the vault's connection is lost
    just then, as in a failover) still answers the reveal, and the service drops the seed
    once NATS answers again, without anyone calling it."""
    from services.dice.app import DiceApp

    settings = dice_settings(nats_server.url, tmp_path)
    async with running_dice(settings) as service:
        app = service.app
        assert isinstance(app, DiceApp) and app.dealer is not None
        client = DiceClient(nc)
        game_id = new_game_id()
        await open_with_seeds(client, game_id, SEEDS)
        await client.roll(game_id, "r0", 2, 6)
        vault_kv = app.dealer._vault._kv
        lost = await nats_server.connect()  # type: ignore[attr-defined]
        app.dealer._vault._kv = await lost.jetstream().key_value("dice_seeds")
        await lost.close()  # every vault call now fails with a closed connection
        await finish_and_reveal(nc, client, game_id)
        assert app.dealer.unpurged == {game_id}
        seeds = await nc.jetstream().key_value("dice_seeds")
        assert (await seeds.get(game_id)).value  # still sealed in the vault
        app.dealer._vault._kv = vault_kv  # NATS answers again
        for _ in range(100):
            if not app.dealer.unpurged:
                break
            await asyncio.sleep(0.05)
        assert not app.dealer.unpurged, "the failed purge was never retried"
        with pytest.raises((KeyNotFoundError, KeyDeletedError)):
            await seeds.get(game_id)
