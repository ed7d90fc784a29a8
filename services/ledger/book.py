"""The ledger service's in-memory view of LEDGER: the pure `Ledger` plus the indexes the
API needs (entry → stream sequence, entries per game, tree heads, refusals).

Everything here is rebuilt from LEDGER on start (`load`), and changed only by the poster
while it holds the book's lock, so a reader holding the lock sees exactly what is durable.
"""

from __future__ import annotations

import asyncio
import json
import re
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

from boulevard.accounting import (
    EntryRejected,
    EntrySource,
    ErrorCode,
    JournalEntry,
    Ledger,
    LedgerError,
    SignedTreeHead,
    decode_entry,
    postings_from_transfers,
)
from boulevard.api.v1 import events_pb2, ledger_pb2
from boulevard.messaging.poison import poisoned
from services.ledger.mapping import head_from_pb

# Game ids become NATS subject tokens (`game.<id>`, `ledger.entry.<id>`).
_GAME_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}\Z")


@dataclass(frozen=True, slots=True)
class Rejection:
    """A money-moving event the ledger refused to post: an alarm for operators."""

    game_id: str
    version: int
    event_id: str
    code: str
    message: str

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "game_id": self.game_id,
                "version": self.version,
                "event_id": self.event_id,
                "code": self.code,
                "message": self.message,
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> Rejection:
        d = json.loads(raw)
        return cls(d["game_id"], int(d["version"]), d["event_id"], d["code"], d["message"])


def entry_source(env: events_pb2.EventEnvelope) -> EntrySource:
    if not _GAME_ID.match(env.game_id):
        raise EntryRejected(ErrorCode.INVALID_FIELD, f"game id {env.game_id!r} is not a token")
    return EntrySource(
        game_id=env.game_id,
        version=env.version,
        event_id=env.event_id,
        event_type=env.type,
        time_unix_ms=env.time_unix_ms,
    )


class LedgerBook:
    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.reset()

    def reset(self) -> None:
        self.ledger = Ledger()
        self.stream_seqs = array("Q")  # entry seq - 1 -> LEDGER stream sequence
        self.by_game: dict[str, array[int]] = {}  # game id -> its entry seqs, ascending
        self.heads: list[SignedTreeHead] = []
        self.heads_by_size: dict[int, SignedTreeHead] = {}
        self.head_seqs: dict[int, int] = {}  # a signed head's tree size -> its LEDGER sequence
        # Per entry (seq - 1), what a checkpoint stores beside the leaf hash: the game (an
        # index into game_names) and the version, its durable key.
        self.entry_games = array("I")
        self.entry_versions = array("Q")
        self.game_names: list[str] = []
        self._game_index: dict[str, int] = {}
        self.rejections: dict[tuple[str, int], Rejection] = {}
        self.quarantined: list[int] = []  # LEDGER sequences of messages skipped as poison
        self.last_stream_seq = 0

    @property
    def size(self) -> int:
        return self.ledger.size

    @property
    def signed_size(self) -> int:
        return self.heads[-1].head.tree_size if self.heads else 0

    # Reading LEDGER back --------------------------------------------------------------

    def load(
        self, kind: str, data: bytes, stream_seq: int, subject: str = ""
    ) -> JournalEntry | None:
        """Apply one stored LEDGER message. One that does not decode, an entry that does not
        chain, balance or respect the account rules, or a head that does not match the
        tree, was not written by this service as it should have been: it is quarantined
        (a LEDGER ALARM, counted, its sequence kept in `quarantined`) and the rebuild goes
        on, so one bad message cannot keep the ledger from starting. Returns the entry
        applied, if it was one."""
        entry = None
        try:
            if kind == "entry":
                entry = decode_and_append(self.ledger, data)
                self._index(entry, stream_seq)
            elif kind == "head":
                sth = head_from_pb(ledger_pb2.SignedTreeHead.FromString(data))
                size = sth.head.tree_size
                if size > self.size or self.ledger.tree.root(size) != sth.head.root_hash:
                    raise ValueError(f"a head of size {size} that does not match the tree")
                self.add_head(sth, stream_seq)
            elif kind == "rejected":
                r = Rejection.from_bytes(data)
                self.rejections[(r.game_id, r.version)] = r
        except Exception as exc:
            self.quarantined.append(stream_seq)
            poisoned("ledger.rebuild", f"bad_{kind}", subject=subject, seq=stream_seq, error=exc)
            entry = None
        self.last_stream_seq = stream_seq
        return entry

    def _index(self, entry: JournalEntry, stream_seq: int) -> None:
        self.stream_seqs.append(stream_seq)
        game_id = entry.source.game_id
        seqs = self.by_game.get(game_id)
        if seqs is None:
            seqs = self.by_game[game_id] = array("Q")
            self._game_index[game_id] = len(self.game_names)
            self.game_names.append(game_id)
        seqs.append(entry.seq)
        self.entry_games.append(self._game_index[game_id])
        self.entry_versions.append(entry.source.version)

    def add_head(self, sth: SignedTreeHead, stream_seq: int) -> None:
        self.heads.append(sth)
        self.heads_by_size[sth.head.tree_size] = sth
        self.head_seqs[sth.head.tree_size] = stream_seq

    def restore(
        self,
        ledger: Ledger,
        *,
        stream_seqs: array[int],
        game_ids: list[str],
        versions: array[int],
        heads: Iterable[tuple[SignedTreeHead, int]],
        rejections: Iterable[Rejection],
        quarantined: list[int],
        last_stream_seq: int,
    ) -> None:
        """Take the state a verified checkpoint holds (services/ledger/checkpoint.py)."""
        self.reset()
        self.ledger = ledger
        self.stream_seqs = stream_seqs
        self.entry_versions = versions
        index, names, by_game = self._game_index, self.game_names, self.by_game
        games = self.entry_games
        for seq, game_id in enumerate(game_ids, start=1):
            i = index.get(game_id)
            if i is None:
                i = index[game_id] = len(names)
                names.append(game_id)
                by_game[game_id] = array("Q")
            by_game[game_id].append(seq)
            games.append(i)
        for sth, at in heads:
            self.add_head(sth, at)
        self.rejections = {(r.game_id, r.version): r for r in rejections}
        self.quarantined = quarantined
        self.last_stream_seq = last_stream_seq

    # Posting ------------------------------------------------------------------------

    def admit_anchor(
        self, env: events_pb2.EventEnvelope, chain_head: bytes
    ) -> JournalEntry | Rejection | None:
        """A finished game's chain head becomes an anchor entry (once per game: keyed by
        the GameFinished version like any entry)."""
        key = (env.game_id, env.version)
        if self.ledger.is_posted(*key) or key in self.rejections:
            return None
        try:
            return self.ledger.anchor(entry_source(env), chain_head)
        except LedgerError as err:
            r = Rejection(env.game_id, env.version, env.event_id, err.code.value, err.message)
            self.rejections[key] = r
            return r

    def admit(self, env: events_pb2.EventEnvelope) -> JournalEntry | Rejection | None:
        """What an envelope from GAMES becomes: nothing (no money moved, or already
        posted or refused), an entry (appended to the in-memory ledger, to be stored), or
        a refusal."""
        if not env.transfers:
            return None
        key = (env.game_id, env.version)
        if self.ledger.is_posted(*key) or key in self.rejections:
            return None
        try:
            source = entry_source(env)
            return self.ledger.post(source, postings_from_transfers(env.game_id, env.transfers))
        except LedgerError as err:
            r = Rejection(env.game_id, env.version, env.event_id, err.code.value, err.message)
            self.rejections[key] = r
            return r

    def stored(self, entry: JournalEntry, stream_seq: int) -> None:
        """An admitted entry is now durable at `stream_seq`."""
        self._index(entry, stream_seq)

    def stream_seq_of(self, seq: int) -> int:
        return self.stream_seqs[seq - 1]


def decode_and_append(ledger: Ledger, raw: bytes) -> JournalEntry:
    entry = decode_entry(raw)
    ledger.append(entry)
    return entry
