"""The evidence behind an audit report (`boulevard.cli.report`), read from the services'
public gRPC APIs through the client library and checked record by record with the pure
cores, so the page lists every record that fails — the terminal audit stops at the first.
The verdict of the audit command itself is passed in and never overruled: a failure it
found that these per-record checks do not see is still listed, as the audit said it.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import grpc

from boulevard.accounting import (
    LedgerError,
    SignedTreeHead,
    decode_entry,
    verify_consistency,
    verify_inclusion,
    verify_tree_head,
)
from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.cli.report import (
    DiceGame,
    EntryRow,
    Failure,
    GameLogAudit,
    HeadRow,
    LedgerAudit,
    OutcomeRow,
    PostingRow,
    write_report,
)
from boulevard.client.dice import DiceReader
from boulevard.client.ledger import LedgerClient
from boulevard.contract.dice import kind_name, to_recorded
from boulevard.fairness import (
    FairnessError,
    GameSeeds,
    VerificationReport,
    check_outcome,
    parse_server_seed,
)
from boulevard.platform import tls
from boulevard.platform.replicas import engine_channel
from boulevard.seats.watching import each_event

_ENTRY = re.compile(r"\bentry (\d+)\b")


Uses = dict[int, tuple[int, tuple[int, ...]]]


async def _game_uses(engine: str, game_id: str, timeout: float) -> Uses:
    """nonce -> (version, values) of each ChanceResolved in the game's public log."""
    uses: Uses = {}
    async with engine_channel(engine) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        request = engine_pb2.WatchGameRequest(game_id=game_id)
        async for update in each_event(stub, request, timeout=max(timeout, 60.0)):
            if update.event.type == "ChanceResolved":
                payload = json.loads(update.event.payload)
                values = tuple(int(v) for v in payload.get("values", []))
                uses[int(payload["nonce"])] = (update.event.version, values)
            if update.event.type == "GameFinished":
                break
    return uses


async def dice_game(
    dice: str,
    game_id: str,
    *,
    engine: str | None,
    audit_ok: bool,
    audit_said: str,
    timeout: float = 10.0,
) -> DiceGame:
    """One game's dice evidence: its commitment, reveal and every outcome with its nonce,
    whether it re-derives from the revealed seed and which event of the game used it."""
    failures: list[Failure] = []
    async with tls.channel(dice) as channel:
        reader = DiceReader(channel, timeout=timeout)
        try:
            opened = await reader.get_commitment(game_id)
            commitment = opened.commitment
            # The seeds the seats revealed after the commitment (docs/fairness.md).
            client_seeds = list(opened.seeds.client_seeds)
        except grpc.aio.AioRpcError as err:
            return DiceGame(
                game_id,
                False,
                audit_said,
                failures=(Failure(f"dice of {game_id}", f"{err.code().name}: {err.details()}"),),
            )
        outcomes = [o async for o in reader.outcomes(game_id)]
        try:
            reveal = await reader.get_reveal(game_id)
            # The client library's verification (whatever the scheme has become) decides
            # whether the records re-derive; the per-outcome checks below only name every
            # record that fails when it says they do not.
            verified = await reader.audit_game(game_id)
        except grpc.aio.AioRpcError:
            reveal, verified = None, None
    uses: Uses = {}
    if engine is not None:
        try:
            uses = await _game_uses(engine, game_id, timeout)
        except grpc.aio.AioRpcError as err:
            failures.append(Failure(f"game {game_id}", f"cannot read its log: {err.code().name}"))
    seeds: GameSeeds | None = None
    if verified is not None and not verified.ok and verified.mismatch is not None:
        m = verified.mismatch
        where = "reveal" if m.nonce is None else f"nonce {m.nonce}"
        evidence = {"expected": list(m.expected or ()), "recorded": list(m.recorded or ())}
        failures.append(Failure(f"game {game_id}, {where}", f"{m.code}: {m.message}", evidence))
    if reveal is not None and verified is not None and not verified.ok:
        try:
            seeds = GameSeeds.of(parse_server_seed(reveal.server_seed), client_seeds, game_id)
        except FairnessError as err:
            failures.append(
                Failure(f"game {game_id}, reveal", str(err), {"server_seed": reveal.server_seed})
            )
        if seeds is not None and seeds.commitment != commitment.commitment:
            failures.append(
                Failure(
                    f"game {game_id}, reveal",
                    "SHA-256 of the revealed seed is not the commitment",
                    {"commitment": commitment.commitment, "revealed": reveal.server_seed},
                )
            )
            seeds = None
    rows = []
    for expected_nonce, o in enumerate(outcomes):
        recorded = to_recorded(o)
        record = {
            "nonce": o.nonce,
            "kind": kind_name(o.kind),
            "count": o.count,
            "sides": o.sides,
            "values": list(o.values),
            "purpose": o.purpose,
            "request_id": o.request_id,
        }
        notes = []
        status = "ok" if verified is not None and verified.ok else "unchecked"
        if seeds is not None:
            mismatch = check_outcome(seeds, recorded)
            status = "ok" if mismatch is None else "fail"
            if mismatch is not None and mismatch.nonce != _nonce_of(verified):
                notes.append(mismatch.message)
                failures.append(
                    Failure(
                        f"game {game_id}, nonce {o.nonce}",
                        f"{mismatch.code}: {mismatch.message}",
                        record | {"expected": list(mismatch.expected or ())},
                    )
                )
        if o.nonce != expected_nonce:
            status = "fail"
            notes.append(f"expected nonce {expected_nonce}")
            failures.append(Failure(f"game {game_id}, nonce {o.nonce}", "out of sequence", record))
        use = uses.get(o.nonce)
        if engine is not None:
            if use is None:
                notes.append("no event of the game used it")
                failures.append(
                    Failure(f"game {game_id}, nonce {o.nonce}", "never used by the game", record)
                )
                status = "fail"
            elif use[1] != recorded.values:
                notes.append(f"the game used {list(use[1])}")
                failures.append(
                    Failure(
                        f"game {game_id}, nonce {o.nonce}",
                        f"the game (v{use[0]}) used other values than recorded",
                        record | {"used": list(use[1])},
                    )
                )
                status = "fail"
        rows.append(
            OutcomeRow(
                nonce=o.nonce,
                kind=kind_name(o.kind),
                count=o.count,
                sides=o.sides,
                values=tuple(int(v) for v in o.values),
                purpose=o.purpose,
                used_at=use[0] if use is not None else None,
                status=status,
                note="; ".join(notes),
            )
        )
    recorded_nonces = {o.nonce for o in outcomes}
    for nonce, (version, values) in sorted(uses.items()):
        if nonce not in recorded_nonces:
            failures.append(
                Failure(
                    f"game {game_id}, v{version}",
                    f"the game used nonce {nonce}, which the dice service never recorded",
                    {"nonce": nonce, "values": list(values)},
                )
            )
    if not audit_said and verified is not None:
        audit_said = f"{game_id}: {verified.describe()}"
    if not audit_ok and not failures:
        failures.append(Failure(f"audit dice {game_id}", audit_said))
    return DiceGame(
        game_id=game_id,
        ok=audit_ok and not failures,
        verdict=audit_said,
        scheme=commitment.scheme,
        commitment=commitment.commitment,
        client_seeds=tuple(client_seeds),
        revealed_seed=reveal.server_seed if reveal is not None else "",
        outcome_count=reveal.outcome_count if reveal is not None else None,
        outcomes=tuple(rows),
        failures=tuple(failures),
    )


async def ledger_audit(
    address: str,
    game: str,
    public_key: bytes | None,
    *,
    audit_ok: bool,
    audit_said: str,
) -> LedgerAudit:
    """The ledger's evidence: every signed head (signature, consistency with the one
    before), every entry (of `game`, or all) with its inclusion proof in the latest head."""
    failures: list[Failure] = []
    async with tls.channel(address) as channel:
        client = LedgerClient(channel)
        try:
            _, served_key, _ = await client.tree_head()
        except grpc.aio.AioRpcError as err:
            return LedgerAudit(
                False,
                audit_said,
                game,
                failures=(Failure("ledger", f"{err.code().name}: {err.details()}"),),
            )
        key = public_key or served_key
        heads: list[SignedTreeHead] = [h async for h in client.tree_heads()]
        head_rows = []
        for i, sth in enumerate(heads):
            h = sth.head
            try:
                verify_tree_head(sth, key)
                signed = True
            except LedgerError as exc:
                signed = False
                failures.append(
                    Failure(f"tree head of size {h.tree_size}", exc.message, _head(sth))
                )
            consistent: bool | None = None
            if i > 0:
                a = heads[i - 1].head
                try:
                    hashes = (
                        await client.consistency_proof(a.tree_size, h.tree_size)
                        if a.tree_size
                        else []
                    )
                    verify_consistency(a.tree_size, h.tree_size, a.root_hash, h.root_hash, hashes)
                    consistent = True
                except LedgerError as exc:
                    consistent = False
                    failures.append(
                        Failure(
                            f"tree heads {a.tree_size} → {h.tree_size}",
                            f"not consistent: {exc.message}",
                            _head(sth),
                        )
                    )
            head_rows.append(
                HeadRow(
                    h.tree_size,
                    h.root_hash.hex(),
                    h.timestamp_unix_ms,
                    h.key_id,
                    signed,
                    consistent,
                )
            )
        served = [e async for e in client.entries(game_id=game)]
        latest = heads[-1].head if heads else None
        covered = [e.seq - 1 for e in served if latest is not None and e.seq <= latest.tree_size]
        proofs = await client.inclusion_proofs(latest.tree_size, covered) if latest else {}
    rows = []
    for e in served:
        raw = bytes(e.canonical)
        try:
            entry = decode_entry(raw)
        except LedgerError as exc:
            failures.append(
                Failure(f"entry {e.seq}", f"{exc.code.value}: {exc.message}", _raw(e.seq, raw))
            )
            continue
        record = entry.to_json()
        if entry.seq != e.seq:
            failures.append(Failure(f"entry {e.seq}", f"its bytes say entry {entry.seq}", record))
        if latest is None or entry.seq > latest.tree_size:
            proof = "not covered by a head yet"
        else:
            try:
                verify_inclusion(
                    entry.index, latest.tree_size, entry.hash, proofs.get(entry.index, []),
                    latest.root_hash,
                )  # fmt: skip
                proof = "included"
            except LedgerError as exc:
                proof = f"FAILED: {exc.message}"
                failures.append(
                    Failure(
                        f"entry {entry.seq}",
                        f"not included in the signed head of size {latest.tree_size}: "
                        f"{exc.message}",
                        record,
                    )
                )
        rows.append(
            EntryRow(
                seq=entry.seq,
                book=entry.source.game_id,
                version=entry.source.version,
                event_type=entry.source.event_type,
                time_unix_ms=entry.source.time_unix_ms,
                postings=tuple(
                    PostingRow(p.account.name, p.amount, p.reason) for p in entry.postings
                ),
                hash=entry.hash.hex(),
                proof=proof,
            )
        )
    if not audit_ok:
        # The audit's own failure, with the entry it names when it names one.
        seq = _ENTRY.search(audit_said)
        record = next(
            (
                {"seq": r.seq, "book": r.book, "version": r.version, "event": r.event_type}
                for r in rows
                if seq is not None and r.seq == int(seq.group(1))
            ),
            {},
        )
        failures.insert(0, Failure("audit ledger", audit_said, record))
    return LedgerAudit(
        ok=audit_ok and not failures,
        verdict=audit_said,
        game=game,
        public_key=key.hex(),
        heads=tuple(head_rows),
        entries=tuple(rows),
        failures=tuple(failures),
    )


def _nonce_of(report: VerificationReport | None) -> int | None:
    """The nonce the library's verification failed at (already listed), if any."""
    if report is None or report.mismatch is None:
        return None
    return report.mismatch.nonce


def _head(sth: SignedTreeHead) -> dict[str, object]:
    h = sth.head
    return {
        "tree_size": h.tree_size,
        "root_hash": h.root_hash.hex(),
        "timestamp_unix_ms": h.timestamp_unix_ms,
        "signature": sth.signature.hex(),
    }


def _raw(seq: int, raw: bytes) -> dict[str, object]:
    return {"seq": seq, "canonical": raw[:2000].decode("utf-8", "replace")}


def write_dice_report(
    path: str, game_id: str, dice: str, engine: str | None, exit_code: int, said: str
) -> Path:
    """`audit dice --html`: the report of one game's dice, beside the terminal verdict."""
    game = asyncio.run(
        dice_game(dice, game_id, engine=engine, audit_ok=exit_code == 0, audit_said=said)
    )
    return write_report(path, f"Dice audit of game {game_id}", dice=[game])


def write_ledger_report(
    path: str, address: str, game: str, public_key: bytes | None, ok: bool, said: str
) -> Path:
    """`audit ledger --html`: the ledger's report, beside the terminal verdict."""
    ledger = asyncio.run(ledger_audit(address, game, public_key, audit_ok=ok, audit_said=said))
    title = f"Ledger audit of game {game}" if game else "Ledger audit"
    return write_report(path, title, ledger=ledger)


async def write_audit_report(
    path: str,
    title: str,
    games: list[GameLogAudit],
    *,
    dice: str | None,
    engine: str | None,
    ledger: str | None,
    ledger_game: str = "",
    ledger_ok: bool = True,
    ledger_said: str = "heads and entries checked one by one (signature, consistency, inclusion)",
    timeout: float = 30.0,
) -> Path:
    """`audit game --html` and `audit all --html`: the game logs' verdicts, every game's
    dice (histograms and χ² across all of them) and, when given, the ledger."""
    dice_games = []
    if dice is not None:
        for g in games:
            # A game whose audit failed has no dice to vouch for, whatever they re-derive to:
            # its dice section says so (the failed audit may be an outcome it misused).
            said = "" if g.ok else f"{g.game_id}: the game's audit failed: {g.verdict}"
            dice_games.append(
                await dice_game(
                    dice, g.game_id, engine=engine, audit_ok=g.ok, audit_said=said, timeout=timeout
                )
            )
    ledger_report = None
    if ledger is not None:
        ledger_report = await ledger_audit(
            ledger, ledger_game, None, audit_ok=ledger_ok, audit_said=ledger_said
        )
    return write_report(path, title, dice=dice_games, ledger=ledger_report, games=games)
