"""Forgeries an operator could try against `audit game` that the first tests do not cover:
each builds the forged log (or dice records, or ledger postings) in memory from an honest
game and checks that the audit fails at the version where the forgery shows."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from boulevard.api.v1 import events_pb2
from boulevard.audit.game_log import (
    DiceOpening,
    DiceRecord,
    GameAuditReport,
    audit_game_log,
    expected_postings,
)
from boulevard.audit.signing import Receipt, SigningKey, chain_hash
from boulevard.cli import audit_game
from boulevard.contract.dice_log import PublishedOpening, check_published, parse_log
from boulevard.fairness import client_seed_commitment
from boulevard.platform.auth import verify_token
from tests.unit.audit.test_game_log import (
    CODEC,
    envelopes,
    fails_at,
    game_id_of,
    honest_game,
    rechain,
)
from tests.unit.engine.test_opening import KEY as OPENING_KEY
from tests.unit.engine.test_opening import SEEDS, Clock, committed_seats
from tests.unit.engine.test_opening import make_engine as make_opening_engine
from tests.unit.fairness.test_accounted import SEATS as ACCOUNTED_SEATS
from tests.unit.fairness.test_accounted import signed_log


def numbered(log: list[bytes]) -> tuple[list[bytes], dict[int, DiceRecord]]:
    """The honest log as the dice service would have numbered it (nonces 0, 1, 2, … in log
    order; the engine core's in-process dice say -1) and the dice records that go with it."""
    envs = envelopes(log)
    dice: dict[int, DiceRecord] = {}
    for e in envs:
        if e.type == "ChanceResolved":
            event = CODEC.loads(e.payload)
            nonce = len(dice)
            e.payload = CODEC.dumps(dataclasses.replace(event, nonce=nonce))
            dice[nonce] = DiceRecord(nonce, event.kind.value, event.values)
    return rechain(envs), dice


@pytest.fixture(scope="module")
def lv_numbered() -> tuple[list[bytes], dict[int, DiceRecord]]:
    log, _, _ = asyncio.run(honest_game("las_vegas", 3, seed=11))
    return numbered(log)


def chance_versions(log: list[bytes]) -> list[int]:
    return [e.version for e in envelopes(log) if e.type == "ChanceResolved"]


def test_the_numbered_honest_game_passes_with_its_dice(lv_numbered: Any) -> None:
    log, dice = lv_numbered
    report = audit_game_log(game_id_of(log), log, dice=dice)
    assert report.finished and report.chance == len(dice) > 3


def test_a_burned_outcome_fails_where_the_game_skips_it(lv_numbered: Any) -> None:
    """The operator drew nonce k, did not like it, drew again (nonce k + 1) and used that:
    every nonce the log cites is recorded, used once and increasing — but nonce k was
    drawn and never used. The dice audit calls it outcome_unused; the game audit, which
    `audit all` relies on, must too."""
    log, dice = lv_numbered
    k = 2
    at = chance_versions(log)[k]
    envs = envelopes(log)
    for e in envs:
        if e.type == "ChanceResolved":
            event = CODEC.loads(e.payload)
            if event.nonce >= k:
                e.payload = CODEC.dumps(dataclasses.replace(event, nonce=event.nonce + 1))
    burned = DiceRecord(k, dice[k].kind, dice[k].values[::-1])
    forged = {n if n < k else n + 1: dataclasses.replace(r, nonce=n if n < k else n + 1)
              for n, r in dice.items()}  # fmt: skip
    forged[k] = burned
    fails_at(rechain(envs), at, f"nonce {k} was drawn", dice=forged)


def test_an_outcome_drawn_after_the_last_one_used_fails_at_the_end(lv_numbered: Any) -> None:
    """A re-roll of the game's last chance: the log is honest, the dice service holds one
    more outcome than the game used."""
    log, dice = lv_numbered
    n = len(dice)
    last = dice[n - 1]
    extra = {**dice, n: DiceRecord(n, last.kind, last.values)}
    fails_at(log, len(log), f"nonce {n} was drawn", dice=extra)


def forged_at(log: list[bytes]) -> tuple[list[bytes], int]:
    """The log with one event changed after the opening (the rules would refuse it), and
    its version."""
    envs = envelopes(log)
    v = next(e.version for e in envs if e.type == "CommandAccepted") + 1
    event = CODEC.loads(envs[v - 1].payload)
    envs[v - 1].payload = CODEC.dumps(dataclasses.replace(event, seat=(event.seat + 1) % 3))
    return rechain(envs), v


def test_a_finished_games_log_served_redacted_fails(lv_numbered: Any) -> None:
    """GetGameLog flags a version `redacted` (a running game's hidden shuffle) and the audit
    stops there; the flag is the operator's word. A log that goes on to GameFinished hides
    nothing, and a game the caller knows is over (GetGameLog's or ListGames' word) must
    show its end: otherwise a forged event at the flagged version, and everything after it,
    passes as "stopped early"."""
    log, dice = lv_numbered
    forged, v = forged_at(log)
    fails_at(forged, v, "gives")  # unflagged, the forgery is caught
    fails_at(forged, v, "GameFinished", redacted=frozenset({v}))
    # The log served only up to the flag: the game is over, so it must end with GameFinished.
    fails_at(forged[:v], v, "redacted", redacted=frozenset({v}), finished=True)
    fails_at(log[: len(log) - 1], len(log), "does not end", finished=True)
    assert audit_game_log(game_id_of(log), log, dice=dice, finished=True).finished


def test_receipts_beyond_a_redacted_version_are_not_silently_passed(lv_numbered: Any) -> None:
    log, _ = lv_numbered
    served, v = hidden_shuffle(log)
    key = SigningKey(bytes(range(32)))
    receipt = Receipt.sign(key, game_id_of(log), v + 5, bytes(32))  # a head the log lacks
    report = audit_game_log(
        game_id_of(log), served[: v + 10], engine_key=key.public_key, receipts=[receipt],
        redacted=frozenset({v}),
    )  # fmt: skip
    assert report.receipts == 0 and "1 receipt(s) after it not checked" in report.partial


def hidden_shuffle(log: list[bytes]) -> tuple[list[bytes], int]:
    """The log as GetGameLog serves a running game's: its first shuffle without values."""
    envs = envelopes(log)
    shuffle = next(e for e in envs if e.type == "ChanceResolved" and b'"shuffle"' in e.payload)
    hidden = events_pb2.EventEnvelope.FromString(shuffle.SerializeToString())
    hidden.payload = CODEC.dumps(dataclasses.replace(CODEC.loads(shuffle.payload), values=()))
    v = shuffle.version
    return [*log[: v - 1], hidden.SerializeToString(), *log[v:]], v


def test_the_money_check_follows_the_log_not_the_servers_finished_flag(lv_numbered: Any) -> None:
    """`audit game` compared money only when GetGameLog said `finished`: a server that said
    otherwise about a finished game skipped the ledger check. It now also compares when the
    log itself ends with GameFinished."""
    log, _ = lv_numbered
    assert audit_game.ends_finished(log)
    assert not audit_game.ends_finished(log[:-1]) and not audit_game.ends_finished([])
    assert not audit_game.ends_finished([b"\xff not an envelope"])


@pytest.mark.parametrize(
    "rewrite",
    [
        # A second "ranking" before the real one: a reader that keeps the first key (cJSON,
        # several streaming parsers) sees another winner than Python's json, which keeps the
        # last.
        lambda p: b'{"ranking":[2,1,0],' + p[1:],
        # A field the event does not have: the codec ignores it, a reader might not.
        lambda p: p[:-1] + b',"winner":"seat 2"}',
        # Not the canonical form (whitespace): another byte string for the same event.
        lambda p: p.replace(b",", b", "),
    ],
)
def test_an_event_payload_that_is_not_canonical_json_fails(lv_numbered: Any, rewrite: Any) -> None:
    """docs/auditing.md: payloads are the codec's canonical JSON, so that an auditor in any
    language reads the same event. The events the audit decodes rather than compares byte
    for byte (commands, chance, seeds, the end) were accepted in any JSON that Python's
    json reads to the same values."""
    log, _ = lv_numbered
    envs = envelopes(log)
    last = envs[-1]
    assert last.type == "GameFinished"
    last.payload = rewrite(last.payload)
    fails_at(rechain(envs), len(log), "canonical")


def test_a_finished_games_ledger_must_anchor_its_end(lv_numbered: Any) -> None:
    """The anchor is what binds a finished game's whole history into the ledger's signed
    tree (docs/ledger.md, "Game anchors"). The audit compared the anchors the ledger had:
    none at all passed, and so did one at an earlier version, which commits to a prefix
    only (everything after it could be rewritten)."""
    log, _ = lv_numbered
    n = len(log)
    ledger = {e.version: expected_postings(e.transfers) for e in envelopes(log) if e.transfers}
    report = audit_game_log(game_id_of(log), log, ledger=ledger, anchors=[(n, chain_hash(log[-1]))])
    assert report.finished
    fails_at(log, n, "anchors no chain head", ledger=ledger)
    fails_at(log, 10, "not the game's end", ledger=ledger, anchors=[(10, chain_hash(log[9]))])
    # Without the ledger (--no-ledger) there is nothing to compare.
    assert audit_game_log(game_id_of(log), log).finished


async def opened_game() -> list[bytes]:
    """The opening of a game whose two seats committed to client seeds and revealed them,
    through to the first chance (docs/fairness.md, "The opening")."""
    clock = Clock()
    engine = make_opening_engine(clock)
    created = await engine.create_game("m1", "las_vegas", committed_seats(), match_id="m1")
    for seat, seed in enumerate(SEEDS):
        await engine.reveal_seed("m1", verify_token(OPENING_KEY, created.tokens[seat]), seed)
    return [r.data for r in await engine.store.read("m1")]


def test_the_dice_must_use_the_seats_commitments_and_seeds_the_log_shows() -> None:
    """The operator opens the game at the dice service with no seat commitments (so the
    server seed alone makes every outcome, and it could grind that seed before committing),
    while GameCreated shows the players' commitments and their reveals. The game audit
    checked GameCreated and the reveals against each other, the dice audit the dice log
    against itself (and, in `audit dice`, against GameCreated as WatchGame serves it; in
    `audit all`, not at all): each passed."""
    log = asyncio.run(opened_game())
    types = [e.type for e in envelopes(log)]
    fixed = types.index("ClientSeedsFixed") + 1
    honest = DiceOpening(
        seat_commitments=tuple(client_seed_commitment(s) for s in SEEDS),
        client_seeds=tuple(SEEDS),
        missing_seats=(),
    )
    report = audit_game_log("m1", log, dice_opening=honest)
    assert report.versions == len(log) and report.chance >= 1
    blind = DiceOpening(seat_commitments=("", ""), client_seeds=("", ""), missing_seats=())
    fails_at(log, 1, "commitments", dice_opening=blind)
    # The commitments recorded, but one revealed seed dropped at the dice service: the
    # dice say seat 1 missed the deadline, the game log shows its reveal.
    dropped = dataclasses.replace(honest, client_seeds=(SEEDS[0], ""), missing_seats=(1,))
    fails_at(log, fixed, "seeds", dice_opening=dropped)


def test_the_dice_log_is_checked_against_what_the_chain_checked_log_publishes() -> None:
    """`audit all` ran the dice audit blind to the game: no cited outcomes (so a re-roll
    was not `outcome_unused`) and no GameCreated (so a dice log opened with other seat
    commitments, or whose seeds record dropped a revealed seed, passed with a note nobody
    saw). The dice log's opening is now compared with what the game log publishes."""
    leaves, _ = signed_log()
    game, problem = parse_log(leaves)
    assert problem is None
    honest = PublishedOpening(
        server_commitment=game.opened.commitment if game.opened else "",
        seat_commitments=tuple(client_seed_commitment(s) for s in ACCOUNTED_SEATS),
        client_seeds=tuple(ACCOUNTED_SEATS),
    )
    assert check_published(game, honest) is None
    other_server = dataclasses.replace(honest, server_commitment="00" * 32)
    blind = dataclasses.replace(honest, seat_commitments=("", "", ""))
    dropped = dataclasses.replace(honest, client_seeds=("ann", "", "cy"), missing_seats=(1,))
    for published, code in [
        (other_server, "commitment_mismatch"),
        (blind, "commitment_mismatch"),
        (dropped, "seeds_mismatch"),
    ]:
        mismatch = check_published(game, published)
        assert mismatch is not None and mismatch.code == code, (published, mismatch)
    # Seeds not fixed in the game's log yet: only the commitments are compared.
    assert check_published(game, dataclasses.replace(honest, client_seeds=None)) is None


def test_the_game_audit_reports_what_the_dice_audit_needs(lv_numbered: Any) -> None:
    log, dice = lv_numbered
    report = audit_game_log(game_id_of(log), log, dice=dice)
    assert [c.nonce for c in report.cited] == sorted(dice)
    assert [c.values for c in report.cited] == [dice[n].values for n in sorted(dice)]
    created = CODEC.loads(envelopes(log)[0].payload)
    assert report.published == PublishedOpening(
        created.seed_commitment,
        tuple(s.seed_commitment for s in created.seats),
        ("",) * 3,
        (),
        created.reveal_deadline_unix_ms,
    )


def test_an_outcome_drawn_for_another_request_fails(lv_numbered: Any) -> None:
    """Nonce k drawn as a d12 (or for another purpose) but used as the d6 the game asked
    for, its value happening to fit: the operator, who knows the stream, could pick the
    request that gives the value it wants. `audit game` compared the values and kind only."""
    log, dice = lv_numbered
    envs = envelopes(log)
    k, event = next(
        (n, CODEC.loads(e.payload))
        for n, e in enumerate(e for e in envs if e.type == "ChanceResolved")
        if CODEC.loads(e.payload).kind.value == "roll"
    )
    honest = {n: dataclasses.replace(r, sides=6 if r.kind == "roll" else 0, purpose=p)
              for (n, r), p in zip(sorted(dice.items()), purposes(log), strict=True)}  # fmt: skip
    assert audit_game_log(game_id_of(log), log, dice=honest).finished
    at = chance_versions(log)[k]
    d12 = {**honest, k: dataclasses.replace(honest[k], sides=12)}
    fails_at(log, at, "drawn for", dice=d12)
    other = {**honest, k: dataclasses.replace(honest[k], purpose="not " + event.purpose)}
    fails_at(log, at, "drawn for", dice=other)


def purposes(log: list[bytes]) -> list[str]:
    return [CODEC.loads(e.payload).purpose for e in envelopes(log) if e.type == "ChanceResolved"]


@pytest.mark.parametrize("field", ["action", "signature"])
def test_command_bytes_are_lowercase_hex_only(lv_numbered: Any, field: str) -> None:
    """Python's bytes.fromhex reads "0a 0b" and "0A0B" as the bytes 0a0b; most hex decoders
    refuse the first. The command record is the hex docs/auditing.md names, nothing else."""
    log, _ = lv_numbered
    envs = envelopes(log)
    v = next(e.version for e in envs if e.type == "CommandAccepted")
    accepted = CODEC.loads(envs[v - 1].payload)
    text = getattr(accepted, field)
    for other in (text[:2] + " " + text[2:], text.upper()):
        envs[v - 1].payload = CODEC.dumps(dataclasses.replace(accepted, **{field: other}))
        fails_at(rechain(envs), v, "lowercase hex")


def test_only_a_hidden_shuffle_may_be_served_redacted(lv_numbered: Any) -> None:
    """In a running game GetGameLog hides a shuffle's values and flags it `redacted`, and
    the audit stops there. The flag is the server's: on any other envelope (a forged
    command, a roll) it stopped a live game's audit just before the forgery."""
    log, _ = lv_numbered
    envs = envelopes(log)
    cut = next(e.version for e in envs if e.type == "CommandAccepted" and e.version > 12)
    live = log[: cut + 3]  # a running game: no GameFinished served
    fails_at(live, cut, "shuffle", redacted=frozenset({cut}))
    roll = next(e.version for e in envs[cut:] if e.type == "ChanceResolved")
    fails_at(log[: roll + 1], roll, "shuffle", redacted=frozenset({roll}))
    # The deck's shuffle, served as the engine serves it: values hidden.
    served, v = hidden_shuffle(log)
    report = audit_game_log(game_id_of(log), served[: v + 2], redacted=frozenset({v}))
    assert report.partial.startswith(f"version {v} is hidden")


def test_a_pass_says_which_seats_played_without_their_seed() -> None:
    """A seat listed missing in ClientSeedsFixed is allowed (the deadline passed) but is the
    one choice an operator dropping a reveal gets (docs/fairness.md, "Threats"); the dice
    audit notes it, and `audit all` printed nothing of it."""
    report = GameAuditReport("g-1", game="las_vegas", finished=True)
    report.published = PublishedOpening("00" * 32, ("aa" * 32, "bb" * 32), ("ann", ""), (1,))
    assert "seats [1] did not reveal their client seed" in report.summary()


def test_the_dice_must_hold_the_reveal_deadline_the_log_shows() -> None:
    """The dice service counts a seat missing only after the deadline it recorded at the
    opening; GameCreated shows the players another. A dice opening with an earlier one let
    the operator fix the seeds (dropping a reveal on its way) while the log promised the
    players more time."""
    log = asyncio.run(opened_game())
    created = CODEC.loads(envelopes(log)[0].payload)
    honest = DiceOpening(
        seat_commitments=tuple(client_seed_commitment(s) for s in SEEDS),
        client_seeds=tuple(SEEDS),
        reveal_deadline_unix_ms=created.reveal_deadline_unix_ms,
    )
    assert audit_game_log("m1", log, dice_opening=honest).versions == len(log)
    early = dataclasses.replace(honest, reveal_deadline_unix_ms=created.reveal_deadline_unix_ms - 1)
    fails_at(log, 1, "deadline", dice_opening=early)
    leaves, _ = signed_log()
    game, _ = parse_log(leaves)
    assert game.opened is not None
    published = PublishedOpening(
        game.opened.commitment,
        tuple(game.opened.client_seed_commitments),
        reveal_deadline_unix_ms=game.opened.reveal_deadline_unix_ms,
    )
    assert check_published(game, published) is None
    later = dataclasses.replace(
        published, reveal_deadline_unix_ms=published.reveal_deadline_unix_ms + 1
    )  # type: ignore[operator]
    mismatch = check_published(game, later)
    assert mismatch is not None and mismatch.code == "commitment_mismatch"


def test_the_opening_is_never_served_redacted(lv_numbered: Any) -> None:
    log, _ = lv_numbered
    fails_at(log[:3], 1, "redacted", redacted=frozenset({1}))
