"""A player's evidence file against the log the operator serves (issue 25): a reveal the
engine signed for and then dropped, a move it signed for that the log lacks, a receipt time
the log contradicts, and a history rewritten and re-signed with the engine's own key."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from boulevard.audit.evidence import (
    ACTION,
    RECLAIM,
    REVEAL,
    TIMEOUT,
    Accepted,
    Evidence,
    receipt_from_pb,
)
from boulevard.audit.game_log import audit_game_log
from boulevard.audit.signing import Receipt, SigningKey, chain_hash
from boulevard.platform.auth import verify_token
from tests.unit.audit.test_game_log import envelopes, fails_at, game_id_of, lv_game, rechain
from tests.unit.audit.test_operator_seats import opened
from tests.unit.engine.test_opening import KEY as OPENING_KEY
from tests.unit.engine.test_opening import SEEDS, Clock, committed_seats, make_engine

__all__ = ["lv_game"]  # the module's honest game, a fixture

ENGINE = SigningKey(bytes([7]) * 32)  # the operator's engine key: it signs what it likes


def receipt_at(log: list[bytes], version: int, key: SigningKey = ENGINE) -> Receipt:
    env = envelopes(log)[version - 1]
    return Receipt.sign(
        key, env.game_id, version, chain_hash(log[version - 1]), env.time_unix_ms or 1
    )


def test_a_reveal_the_engine_signed_for_and_dropped_fails_with_the_seats_receipt() -> None:
    """Seat 1 revealed; the engine answered with a receipt (the log's version and head then)
    but never recorded the reveal, so the deadline passed and seat 1 played with an empty
    seed. Every audit passed with a note; the seat's receipt now shows it."""
    log = asyncio.run(opened(committed_seats(), reveal=(0,)))
    at = next(e.version for e in envelopes(log) if e.type == "ClientSeedRevealed")
    dropped = Evidence("m1", 1, [Accepted(REVEAL, receipt_at(log, at), client_seed=SEEDS[1])])
    assert audit_game_log("m1", log, engine_key=ENGINE.public_key).receipts == 0
    fails_at(log, at, "the reveal was dropped", engine_key=ENGINE.public_key, evidence=[dropped])
    # Seat 0's own reveal is there: its evidence passes.
    kept = Evidence("m1", 0, [Accepted(REVEAL, receipt_at(log, at), client_seed=SEEDS[0])])
    report = audit_game_log("m1", log, engine_key=ENGINE.public_key, evidence=[kept])
    assert report.receipts == 1


def test_a_move_the_engine_signed_for_must_be_in_the_log(lv_game: Any) -> None:
    log, _, _ = lv_game
    gid = game_id_of(log)
    envs = envelopes(log)
    v = next(e.version for e in envs if e.type == "CommandAccepted" and e.version > 8)
    accepted = [Accepted(ACTION, receipt_at(log, v), idempotency_key="never-recorded")]
    fails_at(
        log, v, "holds no such command", engine_key=ENGINE.public_key,
        evidence=[Evidence(gid, 0, accepted)],
    )  # fmt: skip


def test_a_receipts_time_must_be_the_logs(lv_game: Any) -> None:
    log, _, _ = lv_game
    gid = game_id_of(log)
    v = len(log) // 2
    honest = receipt_at(log, v)
    seat = 0
    key = ""
    for e in envelopes(log)[:v]:
        if e.type == "CommandAccepted":
            payload = json.loads(e.payload)
            seat, key = payload["seat"], payload["idempotency_key"]
    good = Evidence(gid, seat, [Accepted(ACTION, honest, idempotency_key=key)])
    assert audit_game_log(gid, log, engine_key=ENGINE.public_key, evidence=[good]).receipts == 1
    late = Receipt.sign(ENGINE, gid, v, honest.chain_head, honest.time_unix_ms + 1)
    other = Evidence(gid, seat, [Accepted(ACTION, late, idempotency_key=key)])
    fails_at(log, v, "accepted version", engine_key=ENGINE.public_key, evidence=[other])


def test_a_history_rewritten_and_re_signed_with_the_engines_key_fails_on_kept_receipts(
    lv_game: Any,
) -> None:
    """The operator rewrites the log (a move's time, then re-chains) and re-signs receipts
    for the new history with the engine key: the new log passes alone and with the new
    receipts, and fails on the receipts the player kept."""
    log, _, _ = lv_game
    gid = game_id_of(log)
    v = len(log) // 2
    kept = Evidence(gid, 0, [Accepted(ACTION, receipt_at(log, v), idempotency_key="")])
    envs = envelopes(log)
    envs[v - 2].time_unix_ms += 1
    rewritten = rechain(envs)
    resigned = [receipt_at(rewritten, v)]
    report = audit_game_log(gid, rewritten, engine_key=ENGINE.public_key, receipts=resigned)
    assert report.receipts == 1
    fails_at(
        rewritten, v, "history was rewritten", engine_key=ENGINE.public_key,
        evidence=[kept],
    )  # fmt: skip


def test_evidence_files_round_trip() -> None:
    r = Receipt.sign(ENGINE, "g", 3, bytes(32), 123)
    evidence = Evidence(
        "g", 1,
        [Accepted(ACTION, r, idempotency_key="k"), Accepted(REVEAL, r, client_seed="s 🎲")],
        [b"\x01\x02"], [b"\x03"],
    )  # fmt: skip
    assert Evidence.loads(evidence.dumps()) == evidence


def test_the_engine_answers_a_reveal_with_a_timed_receipt_the_audit_accepts() -> None:
    """RevealSeed answered with no receipt, so a seat could not prove it had revealed."""

    async def run() -> tuple[list[bytes], list[Evidence], bytes]:
        clock = Clock()
        engine = make_engine(clock)
        created = await engine.create_game("m1", "las_vegas", committed_seats(), match_id="m1")
        kept = []
        for seat, seed in enumerate(SEEDS):
            clock.now += 1000
            claims = verify_token(OPENING_KEY, created.tokens[seat])
            revealed = await engine.reveal_seed("m1", claims, seed)
            assert revealed.receipt is not None
            receipt = receipt_from_pb(revealed.receipt)
            assert receipt.version == revealed.version and receipt.time_unix_ms == clock.now
            kept.append(Evidence("m1", seat, [Accepted(REVEAL, receipt, client_seed=seed)]))
        log = [r.data for r in await engine.store.read("m1")]
        return log, kept, engine.receipt_key.public_key

    log, kept, key = asyncio.run(run())
    assert audit_game_log("m1", log, engine_key=key, evidence=kept).receipts == 2


def test_a_reclaim_the_engine_signed_for_must_be_in_the_log() -> None:
    """A seat that timed out takes its seat back (ReclaimSeat) and keeps the engine's
    receipt; an operator that answered the reclaim and then let the platform's bot play on
    (the reclaim dropped from the log) is shown by it. Kept reclaims round-trip."""
    from tests.unit.audit.test_clocks import TURN_BASED, stalled

    game, seat = stalled(TURN_BASED)
    game.time_out(seat, game.deadline(seat))
    signed_for = game.version
    game.reclaim(seat, game.time + 10)
    log = game.log()
    at = game.version
    kept = Evidence(
        game_id_of(log), seat,
        [Accepted(RECLAIM, receipt_at(log, at), expected_version=signed_for)],
    )  # fmt: skip
    assert Evidence.loads(kept.dumps()) == kept
    report = audit_game_log(game_id_of(log), log, engine_key=ENGINE.public_key, evidence=[kept])
    assert report.receipts == 1
    dropped = log[:-1]  # the same history without the SeatReclaimed
    receipt = receipt_at(dropped, at - 1)
    lost = Evidence(
        game_id_of(log), seat,
        [Accepted(RECLAIM, receipt, expected_version=signed_for)],
    )  # fmt: skip
    fails_at(
        dropped, at - 1, "holds no such reclaim", engine_key=ENGINE.public_key, evidence=[lost]
    )


def test_a_timeout_the_engine_signed_for_must_be_in_the_log() -> None:
    """The player stream answers a seat's timeout with a receipt (kind timeout); a log
    rewritten without that timeout (the seat's time never ran out, so a stand-in move was
    never the platform's to play) contradicts it."""
    from tests.unit.audit.test_clocks import REAL_TIME, stalled

    game, seat = stalled(REAL_TIME)
    game.time_out(seat, game.deadline(seat))
    log = game.log()
    gid, at = game_id_of(log), game.version
    kept = Evidence(gid, seat, [Accepted(TIMEOUT, receipt_at(log, at))])
    assert Evidence.loads(kept.dumps()) == kept
    assert audit_game_log(gid, log, engine_key=ENGINE.public_key, evidence=[kept]).receipts == 1
    other = Evidence(gid, (seat + 1) % 3, [Accepted(TIMEOUT, receipt_at(log, at))])
    fails_at(log, at, "holds no such timeout", engine_key=ENGINE.public_key, evidence=[other])
