"""`audit game` over log bytes: honest games pass; each way an operator could forge a log
(an event no command caused, a forged or missing signature, events `decide` does not
give, a deleted or reordered commit, a rewritten history a receipt contradicts, money the
ledger posted differently) fails at the version where the forgery starts."""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from boulevard.api.v1 import events_pb2
from boulevard.audit.game_log import GameAuditFailed, audit_game_log, expected_postings
from boulevard.audit.signing import ZERO_HASH, Receipt, chain_hash
from boulevard.eventlog.store import InMemoryEventStore
from boulevard.games import REGISTRY
from boulevard.games.base import CommandAccepted
from boulevard.games.codec import Codec
from boulevard.platform.auth import verify_token
from tests.unit.engine.test_engine_core import KEY, make_engine, seats, submit


async def honest_game(
    game_name: str, players: int, seed: int
) -> tuple[list[bytes], list[Receipt], bytes]:
    """A whole game through the engine: its log bytes, a receipt per command, the engine's
    public key."""
    store = InMemoryEventStore()
    engine = make_engine(store, snapshot_every=10)
    created = await engine.create_game(f"g-{game_name}-{seed}", game_name, seats(players))
    gid = created.game_id
    rng = random.Random(seed)
    receipts = []
    session = await engine.load(gid)
    while session.finished is None:
        for seat, token in enumerate(created.tokens):
            legal = session.game.legal_commands(session.state, seat)
            if legal:
                command = session.game.bots["random"](
                    session.game.view(session.state, seat), legal, seat, rng
                )
                claims = verify_token(KEY, token)
                result = await submit(
                    engine, gid, claims, command, session.version, uuid.uuid4().hex
                )
                receipts.append(Receipt.sign(engine.receipt_key, gid, result.version, result.head))
                break
        session = await engine.load(gid)
    log = [r.data for r in await store.read(gid)]
    return log, receipts, engine.receipt_key.public_key


@pytest.fixture(scope="module")
def lv_game() -> tuple[list[bytes], list[Receipt], bytes]:
    import asyncio

    return asyncio.run(honest_game("las_vegas", 3, seed=11))


def envelopes(log: list[bytes]) -> list[events_pb2.EventEnvelope]:
    return [events_pb2.EventEnvelope.FromString(d) for d in log]


def rechain(envs: list[events_pb2.EventEnvelope], renumber: bool = False) -> list[bytes]:
    """What an operator who rewrote the log would store: a chain made consistent again."""
    out, prev = [], ZERO_HASH
    for i, e in enumerate(envs, start=1):
        e = events_pb2.EventEnvelope.FromString(e.SerializeToString())
        if renumber:
            e.version = i
        e.prev_hash = prev
        data = e.SerializeToString()
        out.append(data)
        prev = chain_hash(data)
    return out


def game_id_of(log: list[bytes]) -> str:
    return events_pb2.EventEnvelope.FromString(log[0]).game_id


def fails_at(log: list[bytes], version: int, match: str = "", **kw: Any) -> GameAuditFailed:
    with pytest.raises(GameAuditFailed) as info:
        audit_game_log(game_id_of(log), log, **kw)
    assert info.value.version == version, info.value
    assert match in info.value.message, info.value
    return info.value


def first_version(log: list[bytes], test: Callable[[events_pb2.EventEnvelope], bool]) -> int:
    return next(e.version for e in envelopes(log) if test(e))


CODEC = Codec((*REGISTRY["las_vegas"].event_types, *REGISTRY["las_vegas"].command_types))


@pytest.mark.parametrize("game_name", sorted(REGISTRY))
async def test_honest_games_pass(game_name: str) -> None:
    game = REGISTRY[game_name]
    players = max(game.min_players, min(3, game.max_players))
    log, receipts, key = await honest_game(game_name, players, seed=3)
    ledger = {}
    for e in envelopes(log):
        if e.transfers:
            ledger[e.version] = expected_postings(e.transfers)
    anchors = [(len(log), chain_hash(log[-1]))]  # what the ledger posts on GameFinished
    report = audit_game_log(
        game_id_of(log), log, engine_key=key, receipts=receipts, ledger=ledger, anchors=anchors
    )
    assert report.finished and report.commands > 0 and report.versions == len(log)
    assert report.receipts == len(receipts)
    assert report.head == chain_hash(log[-1])


def test_a_forged_event_with_no_command_fails_where_it_was_inserted(lv_game: Any) -> None:
    log, _, _ = lv_game
    envs = envelopes(log)
    # Copy a game event (not a command record) to just after the opening, as if it happened.
    at = first_version(
        log,
        lambda e: (
            e.version > 2
            and e.type
            not in (
                "CommandAccepted",
                "ChanceResolved",
                "GameCreated",
                "GameFinished",
                "ClientSeedRevealed",
                "ClientSeedsFixed",
            )
        ),
    )
    before = first_version(log, lambda e: e.type == "CommandAccepted")
    forged = [*envs[: before - 1], envs[at - 1], *envs[before - 1 :]]
    fails_at(rechain(forged, renumber=True), before, "follows from no command")


def test_a_forged_or_missing_signature_fails_at_its_command(lv_game: Any) -> None:
    log, _, _ = lv_game
    envs = envelopes(log)
    v = first_version(log, lambda e: e.type == "CommandAccepted" and e.version > 10)
    accepted = CODEC.loads(envs[v - 1].payload)
    last = int(accepted.signature[-2:], 16)
    flipped = accepted.signature[:-2] + f"{last ^ 1:02x}"  # always differs from the original
    for signature in ("", "00" * 64, flipped):
        envs[v - 1].payload = CODEC.dumps(dataclasses.replace(accepted, signature=signature))
        fails_at(rechain(envs), v, "signature does not verify")
    # A different move under the same signature.
    other = dataclasses.replace(accepted, expected_version=accepted.expected_version + 1)
    envs[v - 1].payload = CODEC.dumps(other)
    fails_at(rechain(envs), v)


def test_events_that_decide_does_not_give_fail_where_they_differ(lv_game: Any) -> None:
    log, _, _ = lv_game
    envs = envelopes(log)
    v = first_version(log, lambda e: e.type == "CommandAccepted" and e.version > 5) + 1
    event = CODEC.loads(envs[v - 1].payload)
    changed = dataclasses.replace(event, seat=(event.seat + 1) % 3)
    envs[v - 1].payload = CODEC.dumps(changed)
    fails_at(rechain(envs), v, "gives")


def test_money_lifted_into_the_envelope_must_be_the_payloads(lv_game: Any) -> None:
    log, _, _ = lv_game
    envs = envelopes(log)
    v = first_version(log, lambda e: e.type == "CommandAccepted") + 1
    envs[v - 1].transfers.add(source="bank", target="seat:0", amount=1_000_000, reason="gift")
    fails_at(rechain(envs), v, "transfers")


def test_a_deleted_or_reordered_commit_fails_where_the_chain_breaks(lv_game: Any) -> None:
    log, _, _ = lv_game
    v = first_version(log, lambda e: e.type == "CommandAccepted" and e.version > 10)
    fails_at(log[: v - 1] + log[v:], v, "deleted or reordered")
    fails_at([*log[: v - 1], log[v], log[v - 1], *log[v + 1 :]], v, "deleted or reordered")
    # Renumbered and re-chained, a deleted command leaves its events unexplained.
    envs = envelopes(log)
    fails_at(rechain(envs[: v - 1] + envs[v:], renumber=True), v)
    # An envelope changed in place: the next one no longer links to it.
    changed = envelopes(log)[5]
    changed.time_unix_ms += 1
    fails_at([*log[:5], changed.SerializeToString(), *log[6:]], 7, "prev_hash")


def test_a_receipt_contradicts_a_rewritten_or_truncated_log(lv_game: Any) -> None:
    log, receipts, key = lv_game
    receipt = receipts[len(receipts) // 2]
    v = receipt.version
    assert audit_game_log(game_id_of(log), log, engine_key=key, receipts=[receipt]).receipts == 1
    # Rewritten where the rules cannot see it (a timestamp), and re-chained.
    envs = envelopes(log)
    envs[v - 1].time_unix_ms += 1
    fails_at(rechain(envs), v, "history was rewritten", engine_key=key, receipts=[receipt])
    # The tail after the receipt deleted: the rules alone cannot tell.
    fails_at(log[: v - 1], v, "deleted", engine_key=key, receipts=[receipt])
    # A receipt not signed by the engine's key.
    forged = dataclasses.replace(receipt, signature=bytes(64))
    fails_at(log, v, "does not verify", engine_key=key, receipts=[forged])


def test_money_must_match_the_ledger(lv_game: Any) -> None:
    log, _, _ = lv_game
    ledger = {e.version: expected_postings(e.transfers) for e in envelopes(log) if e.transfers}
    v = sorted(ledger)[1]
    short = dict(ledger)
    short[v] = [(a, n * 2) for a, n in ledger[v]]
    fails_at(log, v, "ledger posted", ledger=short)
    extra = dict(ledger, **{})
    extra[len(log) + 3] = [("bank", -1), ("seat:0", 1)]
    fails_at(log, len(log) + 3, "not in the log", ledger=extra)


def test_a_command_record_replayed_twice_fails(lv_game: Any) -> None:
    log, _, _ = lv_game
    envs = envelopes(log)
    v = first_version(log, lambda e: e.type == "CommandAccepted")
    accepted = CODEC.loads(envs[v - 1].payload)
    assert isinstance(accepted, CommandAccepted)
    w = first_version(log, lambda e: e.type == "CommandAccepted" and e.version > v)
    later = CODEC.loads(envs[w - 1].payload)
    envs[w - 1].payload = CODEC.dumps(
        dataclasses.replace(later, idempotency_key=accepted.idempotency_key)
    )
    fails_at(rechain(envs), w, "used twice")
