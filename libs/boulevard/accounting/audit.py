"""What an auditor runs: re-check a journal from its bytes, its signed tree heads and the
proofs the operator serves, trusting none of them. Also the reconciliation of a game's
ledger balances with the money in its replayed state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from boulevard.accounting.accounts import seat_of
from boulevard.accounting.encoding import ZERO_HASH
from boulevard.accounting.errors import ErrorCode, LedgerError, VerificationFailed
from boulevard.accounting.journal import JournalEntry, Ledger, decode_entry
from boulevard.accounting.merkle import verify_consistency, verify_inclusion
from boulevard.accounting.treehead import SignedTreeHead, verify_tree_head


class JournalAuditor:
    """Replays a journal entry by entry from its canonical bytes: each must decode, balance,
    chain onto the one before, respect every account's rule, and not repeat a (game,
    version). Tree heads are checked against the root recomputed here."""

    def __init__(self, public_key: bytes) -> None:
        self.public_key = public_key
        self.ledger = Ledger()
        self.last_head: SignedTreeHead | None = None
        # Each game's entries (their seqs, in order) as the journal holds them: what a
        # listing of one game's entries, the server's word, must be.
        self.seqs_by_game: dict[str, list[int]] = {}
        # The games whose end the journal anchors (docs/ledger.md, "Game anchors"): finished
        # games, whatever the engine lists.
        self.anchored: set[str] = set()

    def feed(self, raw: bytes) -> JournalEntry:
        entry = decode_entry(raw)
        try:
            self.ledger.append(entry)
        except LedgerError as exc:
            raise VerificationFailed(exc.code, exc.message, seq=entry.seq) from exc
        self.seqs_by_game.setdefault(entry.source.game_id, []).append(entry.seq)
        if entry.anchor is not None:
            self.anchored.add(entry.source.game_id)
        return entry

    def check_head(
        self, sth: SignedTreeHead, consistency_from_last: Sequence[bytes] | None = None
    ) -> None:
        """Signature, root (against the entries fed so far) and, when a previous head was
        checked, the served consistency proof between the two."""
        verify_tree_head(sth, self.public_key)
        size = sth.head.tree_size
        if size > self.ledger.size:
            raise VerificationFailed(
                ErrorCode.OUT_OF_RANGE,
                f"tree head of size {size} but only {self.ledger.size} entries were served",
            )
        own = self.ledger.tree.root(size)
        if own != sth.head.root_hash:
            raise VerificationFailed(
                ErrorCode.ROOT_MISMATCH,
                f"signed root {sth.head.root_hash.hex()} for size {size}, but the served "
                f"entries hash to {own.hex()}",
            )
        prev = self.last_head
        if prev is not None and consistency_from_last is not None:
            if prev.head.tree_size > size:
                raise VerificationFailed(
                    ErrorCode.OUT_OF_RANGE,
                    f"tree heads go backwards: {prev.head.tree_size} then {size}",
                )
            verify_consistency(
                prev.head.tree_size,
                size,
                prev.head.root_hash,
                sth.head.root_hash,
                consistency_from_last,
            )
        self.last_head = sth

    def check_inclusion(self, index: int, sth: SignedTreeHead, proof: Sequence[bytes]) -> None:
        """A served inclusion proof for entry `index` (0-based) against a signed head."""
        try:
            verify_inclusion(
                index,
                sth.head.tree_size,
                self.ledger.tree.leaf_hash(index),
                proof,
                sth.head.root_hash,
            )
        except LedgerError as exc:
            raise VerificationFailed(exc.code, exc.message, seq=index + 1) from exc


def verify_entry_in_head(
    raw: bytes, sth: SignedTreeHead, public_key: bytes, proof: Sequence[bytes]
) -> JournalEntry:
    """Check one entry alone: it decodes and balances, the head is signed, and the proof
    puts exactly these bytes at the entry's position under the signed root."""
    verify_tree_head(sth, public_key)
    entry = decode_entry(raw)
    try:
        verify_inclusion(entry.index, sth.head.tree_size, entry.hash, proof, sth.head.root_hash)
    except LedgerError as exc:
        raise VerificationFailed(exc.code, exc.message, seq=entry.seq) from exc
    return entry


def verify_chain(
    entries: Iterable[JournalEntry], *, after_seq: int = 0, after_hash: bytes = ZERO_HASH
) -> bytes:
    """Check that `entries` continue the chain right after entry `after_seq` (whose hash is
    `after_hash`; by default they start the journal) with no gap; returns the last hash."""
    head, expected_seq = after_hash, after_seq + 1
    for e in entries:
        if e.seq != expected_seq:
            raise VerificationFailed(
                ErrorCode.CHAIN_BROKEN, f"expected entry {expected_seq}, got {e.seq}", seq=e.seq
            )
        if e.prev_hash != head:
            raise VerificationFailed(
                ErrorCode.CHAIN_BROKEN, "prev hash does not match the entry before", seq=e.seq
            )
        head, expected_seq = e.hash, e.seq + 1
    return head


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first point where a seat's ledger balance and its money in the game differ."""

    game_id: str
    version: int
    seat: int
    ledger_balance: int
    game_money: int

    def __str__(self) -> str:
        return (
            f"game {self.game_id} at version {self.version}: seat {self.seat} has "
            f"{self.ledger_balance} in the ledger but {self.game_money} in the game"
        )


def reconcile(
    game_id: str,
    entries: Iterable[JournalEntry],
    money_after: Iterable[tuple[int, Mapping[int, int]]],
) -> Divergence | None:
    """Walk a game's events in order — `money_after` yields (version, money per seat after
    that event) — applying the game's entries as their versions come up, and return the
    first (version, seat) where the seat's ledger balance differs from the game, or None.
    Seats with no postings have a ledger balance of 0. An entry whose version is not among
    the game's events diverges at that version."""
    pending: dict[int, list[JournalEntry]] = {}
    for e in entries:
        if e.source.game_id == game_id:
            pending.setdefault(e.source.version, []).append(e)
    seats: dict[int, int] = {}
    for version, money in money_after:
        for e in pending.pop(version, ()):
            for p in e.postings:
                seat = seat_of(p.account.name)
                if p.account.book == game_id and seat is not None:
                    seats[seat] = seats.get(seat, 0) + p.amount
        for seat in sorted(set(seats) | set(money)):
            ledger, game = seats.get(seat, 0), money.get(seat, 0)
            if ledger != game:
                return Divergence(game_id, version, seat, ledger, game)
    if pending:  # entries for events the game's log does not have (yet)
        version = min(pending)
        net: dict[int, int] = {}
        for e in pending[version]:
            for p in e.postings:
                seat = seat_of(p.account.name)
                if p.account.book == game_id and seat is not None:
                    net[seat] = net.get(seat, 0) + p.amount
        seat = min(net) if net else -1
        before = seats.get(seat, 0)
        return Divergence(game_id, version, seat, before + net.get(seat, 0), before)
    return None
