"""`boulevard audit ledger [--game G]`: verify the money ledger from the outside.

Everything is fetched through the public gRPC API (`LedgerService`) and checked locally with
the pure core (`boulevard.accounting`), trusting nothing the service says about itself:

1. every entry decodes from its canonical bytes and balances;
2. the hash chain is unbroken and, replayed, no account breaks its rule (whole journal;
   with --game, that game's entries and their own account rules);
3. every signed tree head's signature, and its root against the entries (whole journal);
4. the consistency proof between each pair of successive heads;
5. the inclusion proof of every entry in the latest head;
6. reconciliation: each game's events (served by Reconcile) are replayed with the game's
   rules and every seat's money compared with its ledger balance after every event.

Prints a clear pass, or the exact entry (or head, or game version and seat) that fails, and
exits non-zero on failure. Exit codes: 0 pass, 1 verification failed, 2 could not audit
(the ledger is unreachable, or bad arguments). Its options: `boulevard.cli.commands.audits`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from boulevard.accounting import (
    PLATFORM_BOOK,
    JournalAuditor,
    JournalEntry,
    LedgerError,
    SignedTreeHead,
    check_own_book,
    decode_entry,
    may_go_negative,
    reconcile,
    verify_consistency,
    verify_inclusion,
    verify_tree_head,
)
from boulevard.accounting.accounts import AccountId
from boulevard.cli.exits import ExitCode
from boulevard.client.ledger import LedgerClient
from boulevard.contract.ledger import money_trail
from boulevard.platform import tls
from boulevard.platform.settings import Settings

EXIT_PASS = ExitCode.OK
EXIT_FAIL = ExitCode.FAILED
EXIT_ERROR = ExitCode.CANNOT
# Codes that say "could not ask", not "the answer is wrong".
UNREACHABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
HEAD_WAIT = 10.0  # seconds to wait for a head over entries just posted


class AuditFailed(Exception):
    pass


@dataclass
class AuditReport:
    ok: bool = True
    unreachable: bool = False
    lines: list[str] = field(default_factory=list)
    failure: str = ""
    entries: int = 0
    heads: int = 0
    games: int = 0
    anchored: list[str] = field(default_factory=list)  # games whose end the journal anchors
    books: list[str] = field(default_factory=list)  # games the verified journal has entries of


def run(args: argparse.Namespace) -> int:
    as_json = bool(getattr(args, "json", False))
    try:
        key = bytes.fromhex(args.public_key) if args.public_key else None
    except ValueError:
        print("ERROR --public-key is not hex", file=sys.stderr)
        return EXIT_ERROR
    settings = Settings()
    address = args.address or f"{settings.grpc_host}:{settings.ledger_port}"
    say: Callable[[str], None] = (lambda _: None) if args.quiet or as_json else print
    report = asyncio.run(
        audit_address(address, args.game, key, reconcile_games=not args.no_reconcile, say=say)
    )
    if report.ok:
        verdict = (f"PASS ledger audit: {report.entries} entries, {report.heads} signed heads, "
                   f"{report.games} games reconciled")  # fmt: skip
        code = EXIT_PASS
    elif report.unreachable:
        verdict, code = f"ERROR cannot reach the ledger at {address}: {report.failure}", EXIT_ERROR
    else:
        verdict, code = f"FAIL {report.failure}", EXIT_FAIL
    written = None
    if args.html and code != EXIT_ERROR:
        from boulevard.cli.report_data import write_ledger_report

        written = write_ledger_report(args.html, address, args.game, key, report.ok, verdict)
    if as_json:
        print(json.dumps(report_json(report, address, args.game, verdict, written)))
    else:
        print(verdict)
        if written is not None:
            print(f"report: {written}")
    return code


def report_json(
    report: AuditReport, address: str, game: str, verdict: str, html: object = None
) -> dict[str, Any]:
    """`audit ledger --json`: the keys docs/cli.md lists."""
    return {
        "ok": report.ok,
        "reachable": not report.unreachable,
        "address": address,
        "game": game or None,
        "entries": report.entries,
        "heads": report.heads,
        "games_reconciled": report.games,
        "failure": report.failure or None,
        "verdict": verdict,
        "report": str(html) if html is not None else None,
    }


async def audit_address(
    address: str,
    game: str = "",
    public_key: bytes | None = None,
    *,
    reconcile_games: bool = True,
    say: Callable[[str], None] = print,
    listed: Mapping[str, Sequence[int]] | None = None,
    reconcile_only: Collection[str] | None = None,
) -> AuditReport:
    async with tls.channel(address) as channel:
        return await audit(
            LedgerClient(channel),
            game,
            public_key,
            reconcile_games=reconcile_games,
            say=say,
            listed=listed,
            reconcile_only=reconcile_only,
        )


async def audit(
    client: LedgerClient,
    game: str = "",
    public_key: bytes | None = None,
    *,
    reconcile_games: bool = True,
    say: Callable[[str], None] = print,
    listed: Mapping[str, Sequence[int]] | None = None,
    reconcile_only: Collection[str] | None = None,
) -> AuditReport:
    """`listed`: the seqs of each game's entries as other audits were served them (audit
    all's game audits); the whole-journal audit checks they are the journal's.
    `reconcile_only`: reconcile just these games (a filtered `audit all`'s); the journal
    itself is checked whole either way."""
    report = AuditReport()
    try:
        await _audit(client, game, public_key, reconcile_games, say, report, listed, reconcile_only)
    except (AuditFailed, LedgerError) as exc:
        report.ok = False
        report.failure = _describe(exc)
    except grpc.aio.AioRpcError as exc:
        report.ok = False
        report.unreachable = exc.code() in UNREACHABLE
        report.failure = f"the ledger service answered {exc.code().name}: {exc.details()}"
    return report


def _describe(exc: Exception) -> str:
    if isinstance(exc, LedgerError):
        where = f"entry {exc.seq}: " if exc.seq is not None else ""
        return f"{where}{exc.code.value}: {exc.message}"
    return str(exc)


async def _audit(
    client: LedgerClient,
    game: str,
    public_key: bytes | None,
    reconcile_games: bool,
    say: Callable[[str], None],
    report: AuditReport,
    listed: Mapping[str, Sequence[int]] | None = None,
    reconcile_only: Collection[str] | None = None,
) -> None:
    first = await _first_head(client)
    if first is None:
        # A ledger that has posted nothing yet (a fresh platform) has nothing to prove;
        # a game named here must still have moved no money.
        say("ok   the ledger is empty: no entries, no signed head yet")
        if game and reconcile_games:
            await _reconcile(client, game, [])
            report.games = 1
            say(f"ok   game {game} reconciled with its replayed state: it moved no money")
        return
    _, served_key, _ = first
    if public_key is None:
        public_key = served_key
        say(f"note: trusting the key the ledger publishes: {served_key.hex()}")
    elif public_key != served_key:
        say(f"note: the ledger publishes another key ({served_key.hex()})")
    if game:
        entries = await _game_entries(client, game, None)
        needed = max((e.seq for e in entries), default=0)
        heads = await _heads_covering(client, needed, say)
        _check_heads_alone(heads, public_key)
        for prev, sth in itertools.pairwise(heads):
            await _check_consistency(client, prev, sth)
        say(f"ok   {len(heads)} signed heads: signatures and consistency")
        check_game_rules(game, entries)
        say(f"ok   {len(entries)} entries of game {game}: canonical, balanced, account rules")
        # Reconciled even when the ledger lists nothing for it: an empty listing of a game
        # that moved money is the divergence to find, not a pass.
        games = [game]
    else:
        auditor = JournalAuditor(public_key)
        await _feed(client, auditor)
        heads = await _heads_covering(client, auditor.ledger.size, say)
        if heads[-1].head.tree_size > auditor.ledger.size:  # posted while we were reading
            await _feed(client, auditor)
        entries = []
        say(f"ok   {auditor.ledger.size} entries: canonical, balanced, chained, account rules")
        prev = None
        for sth in heads:
            if sth.head.tree_size > auditor.ledger.size:
                raise AuditFailed(
                    f"tree head of size {sth.head.tree_size} is beyond the "
                    f"{auditor.ledger.size} entries served"
                )
            proof = None
            if prev is not None:
                proof = await client.consistency_proof(prev.head.tree_size, sth.head.tree_size)
            try:
                auditor.check_head(sth, proof)
            except LedgerError as exc:
                raise AuditFailed(
                    f"tree head of size {sth.head.tree_size}: {exc.code.value}: {exc.message}"
                ) from None
            prev = sth
        say(f"ok   {len(heads)} signed heads: signatures, roots, consistency")
        report.entries = auditor.ledger.size
        report.anchored = sorted(auditor.anchored)
        games = sorted(b for b in auditor.ledger.books() if b != PLATFORM_BOOK)
        report.books = games
    final = heads[-1]
    size = final.head.tree_size
    if game:
        leaves = {e.index: e.hash for e in entries if e.seq <= size}
        report.entries = len(entries)
    else:
        leaves = {i: auditor.ledger.tree.leaf_hash(i) for i in range(size)}
    proofs = await client.inclusion_proofs(size, sorted(leaves))
    for i, leaf in sorted(leaves.items()):
        try:
            verify_inclusion(i, size, leaf, proofs.get(i, []), final.head.root_hash)
        except LedgerError as exc:
            raise AuditFailed(
                f"entry {i + 1}: not included in the signed head of size {size}: {exc.message}"
            ) from None
    say(f"ok   {len(leaves)} inclusion proofs against the head of size {size}")
    report.heads = len(heads)

    if not game:
        # What the game audits were served for each game (audit all) is the journal's (up
        # to the entries read here: more may have been posted since).
        fed = auditor.ledger.size
        for g, seqs in sorted((listed or {}).items()):
            check_game_listing(g, [s for s in seqs if s <= fed], auditor.seqs_by_game.get(g, []))
    if reconcile_only is not None:
        games = [g for g in games if g in reconcile_only]
    if reconcile_games:
        for g in games:
            game_entries = entries if game else await _game_entries(client, g, None)
            if not game:
                game_entries = [e for e in game_entries if e.seq <= auditor.ledger.size]
                served = [e.seq for e in game_entries]
                check_game_listing(g, served, auditor.seqs_by_game.get(g, []))
            await _reconcile(client, g, game_entries)
            report.games += 1
        say(f"ok   {len(games)} games reconciled with their replayed state")


async def _first_head(client: LedgerClient) -> tuple[Any, bytes, int] | None:
    """The ledger's latest signed head; None when it has signed none because it holds no
    entry. Entries with no head over them get HEAD_WAIT for one (the ledger signs within
    seconds of posting), then fail the audit."""
    deadline = time.monotonic() + HEAD_WAIT
    while True:
        try:
            return await client.tree_head()
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.NOT_FOUND:
                raise
        async for _ in client.entries(from_seq=1, page_size=1):
            break
        else:
            return None
        if time.monotonic() > deadline:
            raise AuditFailed("the ledger serves entries but has signed no tree head over them")
        await asyncio.sleep(0.5)


async def _feed(client: LedgerClient, auditor: JournalAuditor) -> None:
    """Feed the auditor every entry after the ones it has, checking each as it comes."""
    async for e in client.entries(from_seq=auditor.ledger.size + 1):
        try:
            entry = auditor.feed(bytes(e.canonical))
        except LedgerError as exc:
            seq = exc.seq if exc.seq is not None else e.seq
            raise AuditFailed(f"entry {seq}: {exc.code.value}: {exc.message}") from None
        if entry.seq != e.seq:
            raise AuditFailed(f"entry {e.seq}: its bytes say it is entry {entry.seq}")


async def _heads_covering(
    client: LedgerClient, size: int, say: Callable[[str], None]
) -> list[SignedTreeHead]:
    """Every signed head, once one covers the first `size` entries. The ledger signs
    within seconds of posting; entries no head covers after HEAD_WAIT fail the audit."""
    deadline = time.monotonic() + HEAD_WAIT
    waited = False
    while True:
        heads = [h async for h in client.tree_heads()]
        covered = heads[-1].head.tree_size if heads else 0
        if covered >= size and heads:
            return heads
        if time.monotonic() > deadline:
            if not heads:
                raise AuditFailed("the ledger has no signed tree head")
            raise AuditFailed(
                f"entries {covered + 1}..{size} are not covered by any signed tree head "
                f"after {HEAD_WAIT:.0f}s"
            )
        if not waited:
            say(f"note: waiting for a signed head covering entry {size}")
            waited = True
        await asyncio.sleep(0.2)


async def _game_entries(client: LedgerClient, game: str, max_seq: int | None) -> list[JournalEntry]:
    out = []
    async for e in client.entries(game_id=game):
        try:
            entry = decode_entry(bytes(e.canonical))
        except LedgerError as exc:
            raise AuditFailed(f"entry {e.seq}: {exc.code.value}: {exc.message}") from None
        if entry.seq != e.seq or entry.source.game_id != game:
            raise AuditFailed(f"entry {e.seq}: its bytes are not the entry served for {game}")
        if max_seq is None or entry.seq <= max_seq:
            out.append(entry)
    return out


def _check_heads_alone(heads: list[SignedTreeHead], public_key: bytes) -> None:
    for sth in heads:
        try:
            verify_tree_head(sth, public_key)
        except LedgerError as exc:
            raise AuditFailed(f"tree head of size {sth.head.tree_size}: {exc.message}") from None


async def _check_consistency(
    client: LedgerClient, prev: SignedTreeHead, sth: SignedTreeHead
) -> None:
    a, b = prev.head, sth.head
    try:
        proof = await client.consistency_proof(a.tree_size, b.tree_size) if a.tree_size else []
        verify_consistency(a.tree_size, b.tree_size, a.root_hash, b.root_hash, proof)
    except LedgerError as exc:
        raise AuditFailed(
            f"tree heads {a.tree_size} → {b.tree_size} are not consistent: {exc.message}"
        ) from None


def check_game_listing(game: str, served: Sequence[int], journal: Sequence[int]) -> None:
    """A game's entries as the ledger listed them (ListEntries game_id=…, the seqs) must be
    exactly the game's entries in the journal just verified: a listing that hides one
    hides its money from the reconciliation and from `audit game`."""
    if list(served) == list(journal):
        return
    hidden = sorted(set(journal) - set(served))
    extra = sorted(set(served) - set(journal))
    what = (
        f"hides entry {hidden[0]} of the journal"
        if hidden
        else f"adds entry {extra[0]}, not the game's in the journal"
        if extra
        else "lists its entries out of order"
    )
    raise AuditFailed(f"game {game}: the ledger's listing of the game's entries {what}")


def check_game_rules(game: str, entries: list[JournalEntry]) -> None:
    """One game's book replayed alone: keys unique, money only in the game's own book, no
    account below its floor."""
    balances: dict[AccountId, int] = {}
    seen: set[int] = set()
    last = 0
    for e in entries:
        if e.seq <= last:
            raise AuditFailed(f"entry {e.seq}: out of order after entry {last}")
        last = e.seq
        try:
            check_own_book(e)
        except LedgerError as exc:
            raise AuditFailed(f"entry {e.seq}: {exc.code.value}: {exc.message}") from None
        if e.source.version in seen:
            raise AuditFailed(f"entry {e.seq}: game {game} version {e.source.version} posted twice")
        seen.add(e.source.version)
        for account, change in e.net().items():
            after = balances.get(account, 0) + change
            if after < 0 and not may_go_negative(account):
                raise AuditFailed(f"entry {e.seq}: {account} goes to {after}")
            balances[account] = after


async def _reconcile(client: LedgerClient, game: str, entries: list[JournalEntry]) -> None:
    reply = await client.reconcile(game, include_events=True)
    try:
        trail = money_trail(reply.game_events)
    except Exception as exc:
        raise AuditFailed(f"game {game}: cannot replay its events: {exc}") from None
    local = reconcile(game, entries, trail)
    if local is not None:
        seq = next((e.seq for e in entries if e.source.version == local.version), None)
        where = f"entry {seq}" if seq is not None else "no ledger entry for that event"
        raise AuditFailed(f"reconcile: {local} ({where})")
    if not reply.reconciled:
        raise AuditFailed(f"reconcile: the ledger service reports: {reply.message}")
