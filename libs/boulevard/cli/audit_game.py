"""`boulevard audit game <game_id>` and `boulevard audit all`: check that a game's log
follows, event by event, from its players' signed commands and the recorded dice, under the
game's own rules, without trusting the operator (docs/auditing.md).

Fetched through public gRPC APIs only: the log as stored (`EngineService.GetGameLog`), the
engine's receipt key (`GetEngineKey`), the dice records and commitment (`DiceService`), the
ledger's entries for the game (`LedgerService.ListEntries`); checked locally with
`boulevard.audit.game_log`. Receipts players kept (`--receipts FILE`, JSON lines of
{"game_id", "version", "chain_head", "key_id", "signature", "time_unix_ms"}, bytes in hex;
no time: an untimed v1 receipt) and evidence files (`--evidence`) are checked against the
log. Prints PASS with a summary, or FAIL naming the first version that does not follow and
what was expected. Exit codes: 0 pass, 1 a check failed, 2 could not audit.

`audit all` runs the game audit over every game the engine lists, running ones included
(their log so far), and the dice audit over the finished ones (those created or ended
--since a time, or the first --limit), printing one progress line per game, then the whole
ledger audit once (`audit ledger`, reconciliation included); unfiltered, it fails when the
verified journal holds a game the listing leaves out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from boulevard.accounting import (
    JournalEntry,
    LedgerError,
    decode_entry,
    verify_consistency,
    verify_tree_head,
)
from boulevard.accounting.treehead import key_id
from boulevard.api.v1 import (
    dice_pb2,
    engine_pb2,
    engine_pb2_grpc,
    events_pb2,
    ledger_pb2,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
)
from boulevard.audit.dice_anchor import ServedDiceLog
from boulevard.audit.evidence import Evidence
from boulevard.audit.game_log import (
    DiceOpening,
    DiceRecord,
    GameAuditFailed,
    GameAuditReport,
    SeatBinding,
    audit_game_log,
)
from boulevard.audit.keys import HistoryRewritten, KeyHistory, trusted_history, untrusted
from boulevard.audit.signing import Receipt
from boulevard.cli import audit_ledger, output
from boulevard.cli.audit_dice import EXIT_ERROR, EXIT_FAIL, EXIT_PASS
from boulevard.cli.reads import paged
from boulevard.cli.report import GameLogAudit
from boulevard.client.dice import DiceReader
from boulevard.client.ledger import LedgerClient
from boulevard.contract.dice import kind_name
from boulevard.contract.ledger import head_from_pb
from boulevard.platform import tls
from boulevard.platform.replicas import engine_channel
from boulevard.platform.settings import Settings

ANCHOR_WAIT = 10.0  # seconds to wait for the ledger to anchor a game that just ended


@dataclass
class Addresses:
    engine: str
    dice: str | None
    ledger: str | None
    # Given: a matchmade game's seats are compared with the match the matchmaker formed.
    matchmaking: str | None = None


def addresses_of(args: argparse.Namespace) -> Addresses:
    s = Settings()
    return Addresses(
        engine=args.engine or f"{s.grpc_host}:{s.engine_port}",
        dice=None if args.no_dice else (args.dice or f"{s.grpc_host}:{s.dice_port}"),
        ledger=None if args.no_ledger else (args.ledger or f"{s.grpc_host}:{s.ledger_port}"),
        matchmaking=getattr(args, "matchmaking", None) or None,
    )


class EvidenceFailed(Exception):
    """What a player kept (a head in an evidence file) or an auditor pinned (a key
    history) contradicts what the services present."""


def load_trust(path: Path) -> KeyHistory:
    """`--trust FILE`: a key history that verifies (every key signed by the one before)."""
    history = KeyHistory.loads(path.read_text(encoding="utf-8"))
    problem = history.problem()
    if problem:
        raise ValueError(f"the key history {path} does not verify: {problem}")
    return history


def check_trusted(trust: KeyHistory | None, role: str, public_key: bytes) -> None:
    """EvidenceFailed when the trusted key history lacks the key a service presents."""
    if trust is not None:
        problem = untrusted(trust, role, public_key.hex())
        if problem:
            raise EvidenceFailed(problem)


def keys_to_trust(pinned: KeyHistory | None, served: str) -> KeyHistory | None:
    """The key history the audit holds the services' keys to: the platform's served one
    (GetEngineKeyResponse.key_history) as far as it extends the auditor's pinned one (see
    `trusted_history`); EvidenceFailed when it does not, or is no key history at all."""
    try:
        return trusted_history(pinned, KeyHistory.loads(served) if served else None)
    except HistoryRewritten as err:
        raise EvidenceFailed(str(err)) from None
    except (ValueError, KeyError, TypeError) as err:
        raise EvidenceFailed(f"the platform's key history is not one: {err!r}") from None


def load_evidence(path: Path) -> list[Evidence]:
    """`--evidence`: one evidence file, or every `*.json` file of a folder (audit all)."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    return [Evidence.loads(f.read_text(encoding="utf-8")) for f in files]


async def check_kept_ledger_heads(
    address: str, kept: Sequence[bytes], timeout: float, trust: KeyHistory | None = None
) -> None:
    """Each ledger head a player kept must verify under the key the ledger serves and be a
    prefix of its latest head (a consistency proof): else the ledger's history was rewritten
    and re-signed (two histories under one key). Raises EvidenceFailed."""
    if not kept and trust is None:
        return
    async with tls.channel(address) as channel:
        client = LedgerClient(channel, timeout=timeout)
        try:
            latest, key, _ = await client.tree_head()
        except grpc.aio.AioRpcError as err:
            if err.code() != grpc.StatusCode.NOT_FOUND or kept:
                raise
            return  # no head signed yet: no key presented, nothing kept
        check_trusted(trust, "ledger", key)
        for data in kept:
            try:
                sth = head_from_pb(ledger_pb2.SignedTreeHead.FromString(data))
                verify_tree_head(sth, key)
            except (DecodeError, LedgerError) as err:
                raise EvidenceFailed(
                    f"a player's evidence: a kept ledger head does not verify: {err}"
                ) from None
            first, second = sth.head.tree_size, latest.head.tree_size
            if first > second:
                raise EvidenceFailed(
                    f"a player's evidence: a kept ledger head covers {first} entries; the "
                    "ledger now signs only "
                    f"{second}: its history was cut"
                )
            proof = await client.consistency_proof(first, second) if first < second else []
            try:
                verify_consistency(first, second, sth.head.root_hash, latest.head.root_hash, proof)
            except LedgerError as err:
                raise EvidenceFailed(
                    f"a player's evidence: the ledger head of size {first} a player kept is "
                    "not a prefix of its "
                    f"latest (size {second}): the journal was rewritten and re-signed "
                    f"({err.message})"
                ) from None


def dice_heads_of(evidence: Sequence[Evidence]) -> list[dice_pb2.DiceTreeHead]:
    """The dice log heads the players kept, for the dice audit's held heads."""
    return [dice_pb2.DiceTreeHead.FromString(h) for e in evidence for h in e.dice_heads]


def load_receipts(path: Path) -> list[Receipt]:
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            out.append(Receipt.from_json(json.loads(line)))
    return out


# -- fetching -------------------------------------------------------------------------------


async def fetch_log(
    stub: engine_pb2_grpc.EngineServiceStub, game_id: str, timeout: float
) -> tuple[list[bytes], frozenset[int], bool]:
    """The log's envelopes as stored, the versions served redacted, and whether the game
    is over (then nothing is redacted)."""
    log: list[bytes] = []
    redacted: set[int] = set()
    finished = False
    start = 1
    while start:
        page = await stub.GetGameLog(
            engine_pb2.GetGameLogRequest(game_id=game_id, from_version=start, page_size=1000),
            timeout=timeout,
        )
        finished = page.finished
        for e in page.envelopes:
            log.append(bytes(e.envelope))
            if e.redacted:
                redacted.add(e.version)
        start = page.next_from_version
    return log, frozenset(redacted), finished


async def fetch_dice(
    address: str, game_id: str, timeout: float
) -> tuple[dict[int, Any], str, DiceOpening]:
    """The outcomes the dice service recorded, its server commitment, and the opening it
    recorded (the seats' commitments, the client seeds its outcomes use)."""
    async with tls.channel(address) as channel:
        reader = DiceReader(channel, timeout=timeout)
        got = await reader.get_commitment(game_id)
        records = {
            o.nonce: DiceRecord(
                o.nonce, kind_name(o.kind), tuple(o.values), sides=o.sides, purpose=o.purpose
            )
            async for o in reader.outcomes(game_id)
        }
    fixed = got.HasField("seeds")
    opening = DiceOpening(
        seat_commitments=tuple(got.commitment.client_seed_commitments),
        client_seeds=tuple(got.seeds.client_seeds) if fixed else None,
        missing_seats=tuple(got.seeds.missing_seats) if fixed else (),
        reveal_deadline_unix_ms=got.commitment.reveal_deadline_unix_ms,
    )
    return records, got.commitment.commitment, opening


async def fetch_dice_log(
    address: str, game_id: str, timeout: float, trust: KeyHistory | None
) -> ServedDiceLog:
    """The game's dice log as served (ListLogRecords), for the head its GameFinished
    anchors, with the dice keys to check that head under: the served key and those of the
    trusted key history. The log is served once the seed is revealed, a moment after the
    game ends: an audit run right then waits for it (`leaves` None if it never comes)."""
    async with tls.channel(address) as channel:
        reader = DiceReader(channel, timeout=timeout)
        served = bytes((await reader.log_heads(game_id)).public_key)
        trusted = [bytes.fromhex(k) for k in trust.keys("dice")] if trust is not None else []
        keys = {key_id(k): k for k in (served, *trusted) if len(k) == 32}
        deadline = time.monotonic() + ANCHOR_WAIT
        while True:
            try:
                return ServedDiceLog(await reader.log_records(game_id), keys)
            except grpc.aio.AioRpcError as err:
                if err.code() != grpc.StatusCode.FAILED_PRECONDITION:
                    raise
                if time.monotonic() >= deadline:
                    return ServedDiceLog(None, keys)
            await asyncio.sleep(0.2)


async def fetch_ledger(
    address: str, game_id: str, timeout: float
) -> tuple[dict[int, list[tuple[str, int]]], list[tuple[int, bytes]], list[int]]:
    """The game's postings per event version, checked from each entry's canonical bytes,
    the chain heads the ledger anchored for it, and the seqs of the entries listed (for
    the whole-journal audit to check: the listing is the ledger's word)."""
    async with tls.channel(address) as channel:
        entries = [
            decode_entry(bytes(e.canonical))
            async for e in LedgerClient(channel, timeout=timeout).entries(game_id=game_id)
        ]
    anchors = [
        (e.source.version, e.anchor)
        for e in entries
        if e.source.game_id == game_id and e.anchor is not None
    ]
    return postings_by_version(game_id, entries), anchors, [e.seq for e in entries]


def postings_by_version(
    game_id: str, entries: Sequence[JournalEntry]
) -> dict[int, list[tuple[str, int]]]:
    """The money the ledger posted for each version of the game, as (account, amount); an
    account of another book keeps its book in its name ("book/name"), so it matches no
    transfer of the game's events and the audit names it (it used to be left out, and money
    an entry of this game moved in another book went unseen)."""
    postings: dict[int, list[tuple[str, int]]] = {}
    for entry in entries:
        if entry.source.game_id != game_id or entry.anchor is not None:
            continue
        postings.setdefault(entry.source.version, []).extend(
            (p.account.name if p.account.book == game_id else str(p.account), p.amount)
            for p in entry.postings
        )
    return postings


def match_named(log: Sequence[bytes]) -> str:
    """The match id the log's GameCreated names ("" for none, or a log that does not open
    with a readable GameCreated: the audit fails that at version 1 on its own)."""
    try:
        envelope = events_pb2.EventEnvelope.FromString(log[0]) if log else None
        if envelope is None or envelope.type != "GameCreated":
            return ""
        payload = json.loads(envelope.payload)
    except (DecodeError, ValueError):
        return ""
    match_id = payload.get("match_id", "") if isinstance(payload, dict) else ""
    return match_id if isinstance(match_id, str) else ""


async def fetch_match(address: str, match_id: str, timeout: float) -> list[SeatBinding]:
    """The seats of the match the matchmaker formed (MatchmakingService.GetMatch); a match
    it says it never formed fails the audit at version 1: the game names a match nobody
    made."""
    async with tls.channel(address) as channel:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
        try:
            got = await stub.GetMatch(
                matchmaking_pb2.GetMatchRequest(match_id=match_id), timeout=timeout
            )
        except grpc.aio.AioRpcError as err:
            if err.code() != grpc.StatusCode.NOT_FOUND:
                raise
            raise GameAuditFailed(
                1, f"GameCreated names match {match_id!r}, which the matchmaker never formed"
            ) from None
    return [
        SeatBinding(s.seat, s.player_id, s.bot, s.public_key, s.client_seed_commitment)
        for s in got.match.seats
    ]


def ends_finished(log: Sequence[bytes]) -> bool:
    """Whether the last envelope served is a GameFinished (the audit checks it is true)."""
    try:
        return bool(log) and events_pb2.EventEnvelope.FromString(log[-1]).type == "GameFinished"
    except DecodeError:
        return False


async def audit_one(
    game_id: str,
    addresses: Addresses,
    *,
    receipts: Sequence[Receipt] = (),
    engine_key_hex: str = "",
    timeout: float = 30.0,
    listed_finished: bool = False,
    evidence: Sequence[Evidence] = (),
    trust: KeyHistory | None = None,
) -> GameAuditReport:
    """Fetch everything public about one game and audit it; raises GameAuditFailed, or
    EvidenceFailed when a head in the players' `evidence` is not what is served, or a key
    a service presents is not in the key history: the platform's served one (which must
    extend the pinned one, `trust`, when given), else `trust`. Receipts signed with an
    earlier engine key of that history verify under it.
    `listed_finished`: the caller found the game among the finished ones (audit all), so
    its log must show its end, whatever GetGameLog says."""
    evidence = [e for e in evidence if e.game_id == game_id]
    async with engine_channel(addresses.engine) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        log, redacted, finished = await fetch_log(stub, game_id, timeout)
        key = await stub.GetEngineKey(engine_pb2.GetEngineKeyRequest(), timeout=timeout)
        engine_key = bytes.fromhex(engine_key_hex or key.public_key)
    # From here on `trust` is the served history where it extends the pinned one: keys
    # rotated in after the pin (each signed by the one before) are followed.
    trust = keys_to_trust(trust, key.key_history)
    check_trusted(trust, "engine", engine_key)
    match_id = match_named(log) if addresses.matchmaking else ""
    match_seats = (
        await fetch_match(addresses.matchmaking, match_id, timeout)
        if addresses.matchmaking and match_id
        else None
    )
    dice, commitment, opening = (
        await fetch_dice(addresses.dice, game_id, timeout) if addresses.dice else (None, None, None)
    )
    over = finished or listed_finished or ends_finished(log)
    dice_log = (
        await fetch_dice_log(addresses.dice, game_id, timeout, trust)
        if addresses.dice and ends_finished(log)
        else None
    )
    ledger, anchors, seqs = (
        await fetch_ledger(addresses.ledger, game_id, timeout)
        if addresses.ledger
        else (None, [], [])
    )
    # The ledger anchors a game's end as it reads GameFinished, a moment after the game
    # ends: an audit run right then waits for it; a ledger that never anchors fails it.
    deadline = time.monotonic() + ANCHOR_WAIT
    while addresses.ledger and over and not anchors and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        ledger, anchors, seqs = await fetch_ledger(addresses.ledger, game_id, timeout)
    report = audit_game_log(
        game_id,
        log,
        dice=dice,
        commitment=commitment,
        match_id=match_id or None,
        match_seats=match_seats,
        engine_key=engine_key,
        receipts=receipts,
        # A live game's money may not be posted yet; compare once it is over — as the log
        # shows it, not only as GetGameLog says (its flag is the server's word).
        ledger=ledger if over else None,
        anchors=anchors,
        redacted=redacted,
        finished=finished or listed_finished,
        dice_opening=opening,
        evidence=evidence,
        bot_keys=trust.keys("bots") if trust is not None else (),
        engine_keys=[bytes.fromhex(k) for k in trust.keys("engine")] if trust else (),
        dice_log=dice_log,
    )
    report.ledger_seqs = seqs
    if addresses.ledger:
        await check_kept_ledger_heads(
            addresses.ledger, [h for e in evidence for h in e.ledger_heads], timeout, trust
        )
    if addresses.dice and trust is not None:
        async with tls.channel(addresses.dice) as channel:
            heads = await DiceReader(channel, timeout=timeout).log_heads(game_id)
        if heads.heads:
            check_trusted(trust, "dice", bytes(heads.public_key))
    held = dice_heads_of(evidence)
    if addresses.dice and held and report.finished:
        async with tls.channel(addresses.dice) as channel:
            dice_report = await DiceReader(channel, timeout=timeout).audit_game(
                game_id, cited=report.cited, published=report.published, held_heads=held
            )
        if not dice_report.ok:
            raise EvidenceFailed(f"a player's evidence: the dice log: {dice_report.describe()}")
    return report


# -- commands -------------------------------------------------------------------------------


def run_game(args: argparse.Namespace) -> int:
    code, verdict, version = _run_game(args)
    if args.html and code != EXIT_ERROR:
        from boulevard.cli.report import GameLogAudit
        from boulevard.cli.report_data import write_audit_report

        addresses = addresses_of(args)
        log = GameLogAudit(args.game_id, code == EXIT_PASS, verdict, version)
        written = asyncio.run(
            write_audit_report(
                args.html, f"Audit of game {args.game_id}", [log], dice=addresses.dice,
                engine=addresses.engine, ledger=addresses.ledger, ledger_game=args.game_id,
                timeout=args.timeout,
            )
        )  # fmt: skip
        print(f"report: {written}")
    return code


def _run_game(args: argparse.Namespace) -> tuple[int, str, int | None]:
    """The audit as before; (exit code, its verdict, the version it failed at)."""
    try:
        receipts = load_receipts(args.receipts) if args.receipts else []
        evidence_path = getattr(args, "evidence", None)
        evidence = load_evidence(evidence_path) if evidence_path else []
        trust_path = getattr(args, "trust", None)
        trust = load_trust(trust_path) if trust_path else None
    except (OSError, ValueError, KeyError) as err:
        print(f"cannot read receipts, evidence or key history: {err}", file=sys.stderr)
        return EXIT_ERROR, "", None
    try:
        report = asyncio.run(
            audit_one(
                args.game_id,
                addresses_of(args),
                receipts=receipts,
                engine_key_hex=args.engine_key,
                timeout=args.timeout,
                evidence=evidence,
                trust=trust,
            )
        )
    except EvidenceFailed as failed:
        if args.json:
            print(json.dumps({"game_id": args.game_id, "ok": False, "evidence": str(failed)}))
        else:
            print(f"FAIL game {args.game_id}: {failed}")
        return EXIT_FAIL, f"FAIL {failed}", None
    except GameAuditFailed as failed:
        if args.json:
            print(json.dumps({"game_id": args.game_id, "ok": False, "version": failed.version,
                              "message": failed.message}))  # fmt: skip
        else:
            print(f"FAIL game {args.game_id} at version {failed.version}: {failed.message}")
        return EXIT_FAIL, f"FAIL at version {failed.version}: {failed.message}", failed.version
    except grpc.aio.AioRpcError as err:
        message = f"cannot audit game {args.game_id}: {err.code().name}: {err.details()}"
        # Said on stderr either way; with --json also as the one document on stdout.
        print(message, file=sys.stderr)
        if args.json:
            print(json.dumps({"game_id": args.game_id, "ok": False, "error": message}))
        return EXIT_ERROR, "", None
    if args.json:
        print(json.dumps({"game_id": args.game_id, "ok": True, "versions": report.versions,
                          "commands": report.commands, "chance": report.chance,
                          "finished": report.finished, "chain_head": report.head.hex(),
                          "partial": report.partial}))  # fmt: skip
    else:
        print(f"PASS {report.summary()}")
    return EXIT_PASS, f"PASS {report.summary()}", None


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def since_unix_ms(text: str, now: float) -> int:
    """`--since`: a span back from `now` ("90m", "24h", "7d", "2w", "30s") or an ISO 8601
    date or time ("2026-11-30", "2026-11-30T12:00:00Z"; no zone means UTC). ValueError with
    what was expected when it is neither."""
    text = text.strip()
    if text[:-1].isdigit() and text[-1:] in _UNITS:
        return int((now - int(text[:-1]) * _UNITS[text[-1]]) * 1000)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"--since {text[:64]!r}: expected a span like 24h, 7d, 90m or an ISO date/time "
            "like 2026-11-30 or 2026-11-30T12:00:00Z"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


async def _listed_games(
    address: str, game_name: str, timeout: float, since_ms: int = 0
) -> list[tuple[str, bool]]:
    """Every game the engine lists, running and finished, as (id, finished), in the
    listing's order; with `since_ms`, only those whose summary the engine wrote (their
    creation, then their end) at or after it."""
    async with engine_channel(address) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        games, _ = await paged(
            lambda token: stub.ListGames(
                engine_pb2.ListGamesRequest(game=game_name, page_size=500, page_token=token),
                timeout=timeout,
            ),
            "games",
        )
    return [
        (g.game_id, g.status == engine_pb2.GAME_STATUS_FINISHED)
        for g in games
        if g.updated_unix_ms >= since_ms
    ]


async def _audit_all(args: argparse.Namespace) -> int:
    as_json = bool(getattr(args, "json", False))
    say: Callable[[str], None] = (lambda _: None) if as_json else (lambda t: print(t, flush=True))
    addresses = addresses_of(args)
    since = getattr(args, "since", None)
    since_ms = since_unix_ms(since, time.time()) if since else 0
    evidence_path = getattr(args, "evidence", None)
    evidence = load_evidence(evidence_path) if evidence_path else []
    trust_path = getattr(args, "trust", None)
    trust = load_trust(trust_path) if trust_path else None
    listing = await _listed_games(addresses.engine, args.game_name, args.timeout, since_ms)
    over = dict(listing)
    games = [g for g, _ in listing]
    if args.limit:
        games = games[: args.limit]
    failures = 0
    started = time.monotonic()
    logs: list[GameLogAudit] = []  # for --html and --json
    listed: dict[str, list[int]] = {}  # each game's ledger entries as its audit saw them
    with output.progress(f"auditing {len(games)} games", len(games), stderr=as_json) as step:
        for i, game_id in enumerate(games, start=1):
            verdict = "ok"
            notes: tuple[str, ...] = ()
            failed_at: int | None = None
            try:
                report = await audit_one(
                    game_id, addresses, timeout=args.timeout, listed_finished=over[game_id],
                    evidence=evidence, trust=trust,
                )  # fmt: skip
                listed[game_id] = report.ledger_seqs
                if not report.finished:
                    # A running game: its log so far (the dice service reveals its seed,
                    # and so its whole dice log, only at the end).
                    notes = (f"running: its log audited to version {report.versions}",)
                elif addresses.dice:
                    # The dice log against the chain-checked game log: every outcome used
                    # as drawn, the opening the one the game published.
                    async with tls.channel(addresses.dice) as channel:
                        dice = await DiceReader(channel, timeout=args.timeout).audit_game(
                            game_id, cited=report.cited, published=report.published,
                            held_heads=dice_heads_of(
                                [e for e in evidence if e.game_id == game_id]
                            ),
                        )  # fmt: skip
                    if not dice.ok:
                        verdict = f"FAIL dice: {dice.describe()}"
                    notes = dice.notes
            except GameAuditFailed as failed:
                verdict = f"FAIL game at version {failed.version}: {failed.message}"
                failed_at = failed.version
            except EvidenceFailed as failed:
                verdict = f"FAIL {failed}"
            except grpc.aio.AioRpcError as err:
                verdict = f"ERROR {err.code().name}: {err.details()}"
            if verdict != "ok":
                failures += 1
            # A pass with notes (a seat that never revealed its seed) says them: the note
            # is what makes a dropped reveal visible (docs/fairness.md, "Threats").
            said = verdict + "".join(f" (note: {n})" for n in notes)
            logs.append(GameLogAudit(game_id, verdict == "ok", said, failed_at))
            rate = i / max(time.monotonic() - started, 1e-9)
            say(f"[{i}/{len(games)}] {game_id} {said}  ({rate:.1f} games/s, "
                f"{failures} failed)")  # fmt: skip
            step()
    ledger_ok = True
    ledger_said = ""
    if addresses.ledger:
        # The whole `audit ledger`, reconciliation included: without it this step said
        # "PASS ledger: ok" where `audit ledger` on the same data failed. Filtered, it
        # reconciles the games it audited (the journal itself is checked whole).
        filtered = bool(args.limit or since or args.game_name)
        ledger = await audit_ledger.audit_address(
            addresses.ledger, say=lambda _: None, listed=listed,
            reconcile_only=set(games) if filtered else None,
        )  # fmt: skip
        ledger_ok = ledger.ok
        ledger_said = ("PASS" if ledger.ok else "FAIL") + f" ledger: {ledger.failure or 'ok'}"
        if ledger.ok and not (args.limit or since or args.game_name):
            # Every game: the ledger anchors each one's end and books each one's money, so
            # a game the engine leaves out of its listing (ListGames is its word) cannot
            # escape the audit. Listed again now: a game may have begun meanwhile.
            now = [g for g, _ in await _listed_games(addresses.engine, "", args.timeout)]
            hidden = unlisted([*ledger.anchored, *ledger.books], [*games, *now])
            if hidden:
                ledger_ok = False
                ledger_said = (
                    f"FAIL ledger: it holds game {hidden[0]}"
                    + (f" (and {len(hidden) - 1} more)" if len(hidden) > 1 else "")
                    + ", which the engine does not list"
                )
        say(ledger_said)
    written = None
    if args.html:
        from boulevard.cli.report_data import write_audit_report

        written = await write_audit_report(
            args.html, f"Audit of {len(games)} games", logs, dice=addresses.dice,
            engine=addresses.engine, ledger=addresses.ledger, ledger_ok=ledger_ok,
            ledger_said=ledger_said, timeout=args.timeout,
        )  # fmt: skip
        say(f"report: {written}")
    ok = not failures and ledger_ok
    if as_json:
        print(json.dumps(all_json(logs, ledger_said if addresses.ledger else None, ok, written)))
    else:
        print(f"{'PASS' if ok else 'FAIL'}: {len(games)} games audited, {failures} failed")
    return EXIT_PASS if ok else EXIT_FAIL


def unlisted(journal: Sequence[str], listed: Sequence[str]) -> list[str]:
    """The games the verified journal knows of (anchors, books) that the engine's listing
    leaves out."""
    return sorted(set(journal) - set(listed))


def all_json(
    logs: Sequence[GameLogAudit], ledger_said: str | None, ok: bool, html: object = None
) -> dict[str, Any]:
    """`audit all --json`: the keys docs/cli.md lists."""
    return {
        "ok": ok,
        "audited": len(logs),
        "failed": sum(1 for g in logs if not g.ok),
        "games": [
            {"game_id": g.game_id, "ok": g.ok, "verdict": g.verdict, "failed_at": g.version}
            for g in logs
        ],
        "ledger": None
        if ledger_said is None
        else {"ok": ledger_said.startswith("PASS"), "verdict": ledger_said},
        "report": str(html) if html is not None else None,
    }


def run_all(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_audit_all(args))
    except (OSError, ValueError, KeyError) as err:
        print(f"cannot read evidence or key history: {err}", file=sys.stderr)
        return EXIT_ERROR
    except grpc.aio.AioRpcError as err:
        message = f"cannot audit: {err.code().name}: {err.details()}"
        print(message, file=sys.stderr)
        if getattr(args, "json", False):
            print(json.dumps({"ok": False, "error": message}))
        return EXIT_ERROR
