"""Journal entries: balanced postings, hash-chained, and the ledger that posts them.

An entry records the money one game event moves, as postings (account, signed amount) that
sum to zero. Each entry commits to the hash of the entry before it, and its own hash is its
RFC 6962 leaf hash, so the chain and the Merkle tree hash the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from boulevard.accounting.accounts import AccountId, account_id, check_name, may_go_negative
from boulevard.accounting.encoding import (
    HASH_SIZE,
    MAX_SAFE_INTEGER,
    ZERO_HASH,
    canonical_json_unchecked,
    leaf_hash,
)
from boulevard.accounting.errors import EntryRejected, ErrorCode, VerificationFailed
from boulevard.accounting.merkle import MerkleTree

FORMAT_VERSION = 1
_MAX_TEXT = 1000


class TransferLike(Protocol):
    """What an event's transfer looks like (the games' `Transfer` and the proto both fit)."""

    @property
    def source(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def amount(self) -> int: ...
    @property
    def reason(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Posting:
    """`amount` moves into `account` (negative: out of it). Whole units, never zero."""

    account: AccountId
    amount: int
    reason: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.account, AccountId):
            raise EntryRejected(ErrorCode.INVALID_ACCOUNT, f"{self.account!r} is not an AccountId")
        _check_amount(self.amount, allow_negative=True)
        _check_text("reason", self.reason)


def _check_amount(amount: object, *, allow_negative: bool) -> int:
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise EntryRejected(
            ErrorCode.INVALID_AMOUNT, f"amount {amount!r} is not a whole number of units"
        )
    if amount == 0 or (amount < 0 and not allow_negative):
        raise EntryRejected(ErrorCode.INVALID_AMOUNT, f"amount {amount} must be positive")
    if abs(amount) > MAX_SAFE_INTEGER:
        raise EntryRejected(ErrorCode.INVALID_AMOUNT, f"amount {amount} exceeds 2**53 - 1")
    return amount


def _check_text(what: str, value: object) -> str:
    if not isinstance(value, str) or len(value) > _MAX_TEXT:
        raise EntryRejected(
            ErrorCode.INVALID_FIELD, f"{what} must be a string of at most {_MAX_TEXT} characters"
        )
    try:
        value.encode()
    except UnicodeEncodeError:
        raise EntryRejected(ErrorCode.INVALID_FIELD, f"{what} is not valid text") from None
    return value


def postings_from_transfers(book: str, transfers: Iterable[TransferLike]) -> tuple[Posting, ...]:
    """Two postings per transfer (out of `source`, into `target`), all in one game's book.

    Refuses a transfer whose amount is not a positive integer or that moves money from an
    account to itself, so a game's bug shows up here rather than as a silent no-op.
    """
    postings: list[Posting] = []
    for t in transfers:
        amount = _check_amount(t.amount, allow_negative=False)
        if t.source == t.target:
            raise EntryRejected(ErrorCode.INVALID_ACCOUNT, f"transfer from {t.source!r} to itself")
        postings.append(Posting(account_id(book, t.source), -amount, t.reason))
        postings.append(Posting(account_id(book, t.target), amount, t.reason))
    return tuple(postings)


@dataclass(frozen=True, slots=True)
class EntrySource:
    """The game event an entry records; (game_id, version) is the entry's durable key."""

    game_id: str
    version: int
    event_id: str = ""
    event_type: str = ""
    time_unix_ms: int = 0

    def __post_init__(self) -> None:
        check_name("book", self.game_id)  # a game id names the game's book
        if isinstance(self.version, bool) or not isinstance(self.version, int):
            raise EntryRejected(ErrorCode.INVALID_FIELD, "version must be an integer")
        if not 1 <= self.version <= MAX_SAFE_INTEGER:
            raise EntryRejected(ErrorCode.INVALID_FIELD, f"version {self.version} must be ≥ 1")
        _check_text("event_id", self.event_id)
        _check_text("event_type", self.event_type)
        if isinstance(self.time_unix_ms, bool) or not isinstance(self.time_unix_ms, int):
            raise EntryRejected(ErrorCode.INVALID_FIELD, "time_unix_ms must be an integer")
        if not 0 <= self.time_unix_ms <= MAX_SAFE_INTEGER:
            raise EntryRejected(ErrorCode.INVALID_FIELD, "time_unix_ms out of range")

    @property
    def key(self) -> tuple[str, int]:
        return (self.game_id, self.version)


@dataclass(frozen=True)
class JournalEntry:
    """One posted entry: position `seq` (1-based) in the journal, the hash of entry
    `seq - 1` (zeros for the first), the event it records and its balanced postings."""

    seq: int
    prev_hash: bytes
    source: EntrySource
    postings: tuple[Posting, ...]
    # A game anchor (docs/ledger.md, "Game anchors"): the chain head of a finished game's
    # log (docs/auditing.md), recorded at its GameFinished version. An anchor moves no
    # money: it has no postings, and an entry with postings is never an anchor.
    anchor: bytes | None = None

    def __post_init__(self) -> None:
        if isinstance(self.seq, bool) or not isinstance(self.seq, int):
            raise EntryRejected(ErrorCode.INVALID_FIELD, "seq must be an integer")
        if not 1 <= self.seq <= MAX_SAFE_INTEGER:
            raise EntryRejected(ErrorCode.INVALID_FIELD, f"seq {self.seq} must be ≥ 1")
        if not isinstance(self.prev_hash, bytes) or len(self.prev_hash) != HASH_SIZE:
            raise EntryRejected(ErrorCode.INVALID_FIELD, "prev_hash must be 32 bytes")
        if self.anchor is not None:
            if not isinstance(self.anchor, bytes) or len(self.anchor) != HASH_SIZE:
                raise EntryRejected(ErrorCode.INVALID_FIELD, "an anchor is a 32-byte hash")
            if self.postings != ():
                raise EntryRejected(
                    ErrorCode.MALFORMED, "a game anchor moves no money", seq=self.seq
                )
            return
        check_balanced(self.postings, seq=self.seq)

    @cached_property
    def canonical(self) -> bytes:
        """The bytes that are hashed, stored and served: see docs/ledger.md."""
        # Every field was checked on construction (integers in range, text encodable).
        return canonical_json_unchecked(self.to_json())

    @cached_property
    def hash(self) -> bytes:
        """The entry's hash: its RFC 6962 leaf hash, SHA-256(0x00 || canonical)."""
        return leaf_hash(self.canonical)

    @property
    def index(self) -> int:
        """The 0-based leaf index of this entry in the Merkle tree."""
        return self.seq - 1

    def to_json(self) -> dict[str, Any]:
        s = self.source
        head = {} if self.anchor is None else {"anchor": self.anchor.hex()}
        return {
            **head,
            "v": FORMAT_VERSION,
            "seq": self.seq,
            "prev": self.prev_hash.hex(),
            "game_id": s.game_id,
            "version": s.version,
            "event_id": s.event_id,
            "event_type": s.event_type,
            "time_unix_ms": s.time_unix_ms,
            "postings": [
                {
                    "book": p.account.book,
                    "account": p.account.name,
                    "amount": p.amount,
                    "reason": p.reason,
                }
                for p in self.postings
            ],
        }

    def net(self) -> dict[AccountId, int]:
        """The change each account sees from this entry."""
        out: dict[AccountId, int] = {}
        for p in self.postings:
            out[p.account] = out.get(p.account, 0) + p.amount
        return out


def check_balanced(postings: Sequence[Posting], *, seq: int | None = None) -> None:
    """Refuse an empty entry or one whose postings do not sum to zero."""
    if not isinstance(postings, tuple) or not postings:
        raise EntryRejected(ErrorCode.EMPTY_ENTRY, "an entry needs postings", seq=seq)
    for p in postings:
        if not isinstance(p, Posting):
            raise EntryRejected(ErrorCode.MALFORMED, f"{p!r} is not a Posting", seq=seq)
    total = sum(p.amount for p in postings)
    if total != 0:
        raise EntryRejected(ErrorCode.UNBALANCED, f"postings sum to {total:+d}, not zero", seq=seq)


def check_own_book(entry: JournalEntry) -> None:
    """Refuse an entry that moves money outside its own game's book. An entry records the
    money one event of game `g` moves, and a game's transfers name accounts of its own book
    only; a posting in another book (another game's, or `platform`) would be money that no
    audit of either game sees move: reconciling a game counts only its own book's postings
    of its own entries, and `audit game` compares only those with the event."""
    book = entry.source.game_id
    for p in entry.postings:
        if p.account.book != book:
            raise EntryRejected(
                ErrorCode.INVALID_ACCOUNT,
                f"an entry of game {book} moves money in {p.account}: an entry moves money "
                "only in its own game's book",
                seq=entry.seq,
            )


_FIELDS = frozenset(
    {"v", "seq", "prev", "game_id", "version", "event_id", "event_type", "time_unix_ms", "postings"}
)
_POSTING_FIELDS = frozenset({"book", "account", "amount", "reason"})


def decode_entry(raw: bytes) -> JournalEntry:
    """Parse an entry's canonical bytes; anything but exactly canonical bytes is refused."""
    try:
        data = json.loads(raw)
        if not isinstance(data, dict) or set(data) - {"anchor"} != _FIELDS:
            raise ValueError(f"fields must be exactly {sorted(_FIELDS)} (and an anchor)")
        anchor = data.get("anchor")
        if anchor is not None and (
            not isinstance(anchor, str) or len(anchor) != 2 * HASH_SIZE or anchor != anchor.lower()
        ):
            raise ValueError("anchor must be 64 lowercase hex digits")
        if data["v"] != FORMAT_VERSION:
            raise ValueError(f"unknown format version {data['v']!r}")
        postings = []
        for p in data["postings"]:
            if not isinstance(p, dict) or set(p) != _POSTING_FIELDS:
                raise ValueError(f"posting fields must be exactly {sorted(_POSTING_FIELDS)}")
            postings.append(Posting(AccountId(p["book"], p["account"]), p["amount"], p["reason"]))
        prev = data["prev"]
        if not isinstance(prev, str) or len(prev) != 2 * HASH_SIZE or prev != prev.lower():
            raise ValueError("prev must be 64 lowercase hex digits")
        entry = JournalEntry(
            seq=data["seq"],
            prev_hash=bytes.fromhex(prev),
            source=EntrySource(
                game_id=data["game_id"],
                version=data["version"],
                event_id=data["event_id"],
                event_type=data["event_type"],
                time_unix_ms=data["time_unix_ms"],
            ),
            postings=tuple(postings),
            anchor=None if anchor is None else bytes.fromhex(anchor),
        )
    except EntryRejected as exc:  # well-formed JSON, but not an entry that may exist
        raise VerificationFailed(exc.code, exc.message, seq=exc.seq) from exc
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
        raise VerificationFailed(ErrorCode.MALFORMED, f"not a journal entry: {exc}") from exc
    if entry.canonical != raw:
        raise VerificationFailed(
            ErrorCode.MALFORMED, "bytes are not in canonical form", seq=entry.seq
        )
    return entry


@dataclass
class Ledger:
    """The posted journal's state: balances, the chain head, the Merkle tree, and which
    (game, version) keys are already posted. Pure: the service feeds it and persists.

    `prepare` builds the next entry without changing anything; `append` checks an entry
    (built here or read back from storage) against the state and applies it.
    """

    tree: MerkleTree = field(default_factory=MerkleTree)
    head_hash: bytes = ZERO_HASH
    _balances: dict[AccountId, int] = field(default_factory=dict)
    _books: dict[str, set[AccountId]] = field(default_factory=dict)
    _posted: dict[str, set[int]] = field(default_factory=dict)

    @classmethod
    def restore(
        cls,
        tree: MerkleTree,
        balances: Mapping[AccountId, int],
        keys: Iterable[tuple[str, int]],
    ) -> Ledger:
        """The state after the entries whose leaf hashes make `tree`, from a checkpoint:
        their balances and durable keys. Refuses a state that no sequence of valid entries
        can reach: a key twice, a key count other than the tree's size, postings that do
        not sum to zero overall, an account that may not go negative below zero."""
        ledger = cls(tree=tree, head_hash=ZERO_HASH if tree.size == 0 else tree.leaf_hash(
            tree.size - 1
        ))  # fmt: skip
        count = 0
        posted = ledger._posted
        for game_id, version in keys:
            versions = posted.get(game_id)
            if versions is None:
                versions = posted[game_id] = set()
            elif version in versions:
                raise VerificationFailed(
                    ErrorCode.DUPLICATE, f"game {game_id} version {version} is posted twice"
                )
            versions.add(version)
            count += 1
        if count != tree.size:
            raise VerificationFailed(
                ErrorCode.MALFORMED, f"{count} durable keys for a tree of {tree.size} entries"
            )
        total = 0
        for account, amount in balances.items():
            if isinstance(amount, bool) or not isinstance(amount, int):
                raise VerificationFailed(ErrorCode.INVALID_AMOUNT, f"{account}: {amount!r}")
            if amount < 0 and not may_go_negative(account):
                raise VerificationFailed(
                    ErrorCode.OVERDRAFT, f"{account} is at {amount}, below zero"
                )
            if abs(amount) > MAX_SAFE_INTEGER:
                raise VerificationFailed(
                    ErrorCode.INVALID_AMOUNT, f"{account} is at {amount}, outside ±(2**53 - 1)"
                )
            total += amount
            ledger._balances[account] = amount
            ledger._books.setdefault(account.book, set()).add(account)
        if total != 0:
            raise VerificationFailed(ErrorCode.UNBALANCED, f"balances sum to {total:+d}, not zero")
        return ledger

    @property
    def size(self) -> int:
        """How many entries are posted (the seq of the last one)."""
        return self.tree.size

    def balance(self, account: AccountId) -> int:
        return self._balances.get(account, 0)

    def balances(self, book: str | None = None) -> dict[AccountId, int]:
        """Every account that has seen a posting (optionally of one book), with its balance."""
        if book is None:
            return dict(self._balances)
        return {a: self._balances[a] for a in sorted(self._books.get(book, ()))}

    def books(self) -> set[str]:
        return set(self._books)

    def is_posted(self, game_id: str, version: int) -> bool:
        versions = self._posted.get(game_id)
        return versions is not None and version in versions

    def posted_versions(self, game_id: str) -> frozenset[int]:
        return frozenset(self._posted.get(game_id, ()))

    def prepare(self, source: EntrySource, postings: Iterable[Posting]) -> JournalEntry:
        """The entry that would be posted next for `source`; raises if it must not be."""
        entry = self._next(source, postings)
        self.check(entry)
        return entry

    def _next(self, source: EntrySource, postings: Iterable[Posting]) -> JournalEntry:
        return JournalEntry(
            seq=self.size + 1, prev_hash=self.head_hash, source=source, postings=tuple(postings)
        )

    def check(self, entry: JournalEntry) -> dict[AccountId, int]:
        """Raise unless `entry` may be appended next: in sequence, chained, not a duplicate,
        and leaving no account that may not go negative below zero. Returns its net
        change per account."""
        if entry.seq != self.size + 1:
            raise VerificationFailed(
                ErrorCode.CHAIN_BROKEN,
                f"expected entry {self.size + 1} next, got {entry.seq}",
                seq=entry.seq,
            )
        if entry.prev_hash != self.head_hash:
            raise VerificationFailed(
                ErrorCode.CHAIN_BROKEN,
                f"prev hash {entry.prev_hash.hex()} is not the hash of entry {self.size} "
                f"({self.head_hash.hex()})",
                seq=entry.seq,
            )
        if self.is_posted(*entry.source.key):
            raise EntryRejected(
                ErrorCode.DUPLICATE,
                f"game {entry.source.game_id} version {entry.source.version} is already posted",
                seq=entry.seq,
            )
        check_own_book(entry)
        net = entry.net()
        for account, change in net.items():
            after = self.balance(account) + change
            if not -MAX_SAFE_INTEGER <= after <= MAX_SAFE_INTEGER:
                # Like amounts: every JSON reader and int64 (GetBalances) holds it exactly.
                raise EntryRejected(
                    ErrorCode.INVALID_AMOUNT,
                    f"{account} would go to {after}, outside ±(2**53 - 1)",
                    seq=entry.seq,
                )
            if after < 0 and not may_go_negative(account):
                raise EntryRejected(
                    ErrorCode.OVERDRAFT,
                    f"{account} would go to {after} ({self.balance(account)} {change:+d}); "
                    f"a {account.kind.value} account may not go below zero",
                    seq=entry.seq,
                )
        return net

    def append(self, entry: JournalEntry) -> None:
        """Check and apply `entry`; on any error nothing changes."""
        self._apply(entry, self.check(entry))

    def _apply(self, entry: JournalEntry, net: dict[AccountId, int]) -> None:
        balances = self._balances
        for account, change in net.items():
            if account not in balances:
                self._books.setdefault(account.book, set()).add(account)
                balances[account] = change
            else:
                balances[account] += change
        self._posted.setdefault(entry.source.game_id, set()).add(entry.source.version)
        self.tree.append_leaf_hash(entry.hash)
        self.head_hash = entry.hash

    def anchor(self, source: EntrySource, chain_head: bytes) -> JournalEntry:
        """Post a game anchor: the chain head of a finished game's log, so the next signed
        tree head commits to the game's history as well as its money. On error nothing
        changes."""
        entry = JournalEntry(self.size + 1, self.head_hash, source, (), chain_head)
        self._apply(entry, self.check(entry))
        return entry

    def post(self, source: EntrySource, postings: Iterable[Posting]) -> JournalEntry:
        """Build, check and append the next entry in one step; on error nothing changes."""
        entry = self._next(source, postings)
        self._apply(entry, self.check(entry))
        return entry


def balances_by_name(balances: Mapping[AccountId, int]) -> dict[str, int]:
    """Balances of one book keyed by account name."""
    return {a.name: b for a, b in balances.items()}
