"""The ledger's read side: balances, pages of entries, tree heads, proofs, reconciliation.

Readers take the book's lock only to look at the in-memory indexes (so they see durable
entries only, never a batch half-published); entry bytes are read back from LEDGER itself,
which is what an auditor verifies.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence

from google.protobuf.message import DecodeError
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from boulevard.accounting import (
    AccountId,
    JournalEntry,
    LedgerError,
    decode_entry,
    reconcile,
)
from boulevard.api.v1 import events_pb2, ledger_pb2
from boulevard.contract.ledger import money_trail
from boulevard.eventlog.jetstream import decode_commit
from boulevard.games.base import RulesError
from boulevard.platform import metrics
from boulevard.platform.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    OutOfRange,
)
from services.ledger.book import LedgerBook
from services.ledger.journal_log import LedgerLog, replay_stream
from services.ledger.mapping import balance_to_pb, divergence_to_pb, entry_to_pb, head_to_pb

DEFAULT_PAGE = 100
MAX_PAGE = 1000
MAX_SCAN = 20_000  # entries looked at per ListEntries call when filtering by account
_GAME_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}\Z")


def _page_size(n: int) -> int:
    return DEFAULT_PAGE if n == 0 else min(n, MAX_PAGE)


def _token(token: str, what: str = "page_token") -> int:
    if not token.isdigit():
        raise InvalidArgument(f"{what} {token!r} is not one this service issued")
    return int(token)


def _check_game_id(game_id: str) -> str:
    if not _GAME_ID.match(game_id):
        raise InvalidArgument(f"game_id {game_id!r} must be 1-128 letters, digits, '_' or '-'")
    return game_id


class LedgerReader:
    def __init__(
        self,
        book: LedgerBook,
        journal: LedgerLog,
        js: JetStreamContext,
        games_stream: str,
        games_prefix: str,
    ) -> None:
        self.book = book
        self.journal = journal
        self.js = js
        self.games_stream = games_stream
        self.games_prefix = games_prefix

    @property
    def durable_size(self) -> int:
        return len(self.book.stream_seqs)

    async def balances(self, req: ledger_pb2.GetBalancesRequest) -> ledger_pb2.GetBalancesResponse:
        if not req.book:
            raise InvalidArgument("book is required: a game id, or 'platform'")
        async with self.book.lock:
            balances = self.book.ledger.balances(req.book)
            size = self.durable_size
        if req.account:
            try:
                account = AccountId(req.book, req.account)
            except LedgerError as err:
                raise InvalidArgument(err.message) from None
            balances = {account: balances.get(account, 0)}
        return ledger_pb2.GetBalancesResponse(
            balances=[balance_to_pb(a, amount) for a, amount in balances.items()],
            tree_size=size,
        )

    async def list_entries(
        self, req: ledger_pb2.ListEntriesRequest
    ) -> ledger_pb2.ListEntriesResponse:
        page_size = _page_size(req.page_size)
        start = _token(req.page_token) if req.page_token else max(req.from_seq, 1)
        if req.game_id:
            _check_game_id(req.game_id)
        async with self.book.lock:
            size = self.durable_size
            candidates: Sequence[int]
            if req.game_id:
                seqs = self.book.by_game.get(req.game_id)
                candidates = [] if seqs is None else seqs[bisect_left(seqs, start) :]
            else:
                candidates = range(start, size + 1)
            limit = page_size if not req.account else MAX_SCAN
            window = list(candidates[:limit])
            more = len(candidates) > limit
            stream_seqs = [self.book.stream_seq_of(s) for s in window[:1] + window[-1:]]
        entries: list[JournalEntry] = []
        if window:
            entries = await self._read(req.game_id, stream_seqs[0], stream_seqs[-1], set(window))
        next_seq = window[-1] + 1 if more else 0
        if req.account:
            matching: list[JournalEntry] = []
            for e in entries:
                if any(p.account.name == req.account for p in e.postings):
                    if len(matching) == page_size:
                        next_seq = e.seq
                        break
                    matching.append(e)
            entries = matching
        return ledger_pb2.ListEntriesResponse(
            entries=[entry_to_pb(e) for e in entries],
            next_page_token=str(next_seq) if next_seq else "",
            tree_size=size,
        )

    async def _read(
        self, game_id: str, first_ss: int, last_ss: int, wanted: set[int]
    ) -> list[JournalEntry]:
        out: list[JournalEntry] = []
        # Only the messages the book indexed: anything else on the subject (a quarantined
        # message, a stranger's publish since the last rebuild) is not ours to decode.
        at = {self.book.stream_seq_of(s) for s in wanted}

        def take(subject: str, data: bytes, seq: int) -> None:
            if seq not in at:
                return
            entry = decode_entry(data)
            if entry.seq in wanted:
                out.append(entry)

        subject = self.journal.entry_subject(game_id if game_id else "*")
        await self.journal.replay(take, subject=subject, from_seq=first_ss, until_seq=last_ss)
        return out

    async def tree_head(self, req: ledger_pb2.GetTreeHeadRequest) -> ledger_pb2.GetTreeHeadResponse:
        book = self.book
        async with book.lock:
            if req.tree_size > self.durable_size:
                # Past the tree, as for proofs: OUT_OF_RANGE (docs/ledger.md); a size within
                # the tree that no head was signed for is NOT_FOUND below.
                raise OutOfRange(
                    f"tree size {req.tree_size} is beyond the {self.durable_size} entries"
                )
            if req.tree_size:
                sth = book.heads_by_size.get(req.tree_size)
                if sth is None:
                    raise NotFound(f"no tree head was signed for size {req.tree_size}")
            elif book.heads:
                sth = book.heads[-1]
            else:
                raise NotFound("no tree head has been signed yet")
            size = self.durable_size
        return ledger_pb2.GetTreeHeadResponse(
            head=head_to_pb(sth), public_key=self.public_key, tree_size=size
        )

    public_key: bytes = b""

    async def tree_heads(
        self, req: ledger_pb2.ListTreeHeadsRequest
    ) -> ledger_pb2.ListTreeHeadsResponse:
        start = _token(req.page_token) if req.page_token else 0
        n = _page_size(req.page_size)
        async with self.book.lock:
            heads = self.book.heads[start : start + n]
            more = len(self.book.heads) > start + n
        return ledger_pb2.ListTreeHeadsResponse(
            heads=[head_to_pb(h) for h in heads],
            next_page_token=str(start + n) if more else "",
        )

    async def inclusion_proofs(
        self, req: ledger_pb2.GetInclusionProofRequest
    ) -> ledger_pb2.GetInclusionProofResponse:
        if not 1 <= len(req.leaf_indexes) <= MAX_PAGE:
            raise InvalidArgument(f"ask for 1 to {MAX_PAGE} leaf indexes at a time")
        async with self.book.lock:
            size = self._size(req.tree_size)
            tree = self.book.ledger.tree
            proofs = []
            for i in req.leaf_indexes:
                if i >= size:
                    raise OutOfRange(f"leaf index {i} is not in the tree of size {size}")
                proofs.append(
                    ledger_pb2.InclusionProof(leaf_index=i, hashes=tree.inclusion_proof(i, size))
                )
        return ledger_pb2.GetInclusionProofResponse(tree_size=size, proofs=proofs)

    def _size(self, tree_size: int) -> int:
        if tree_size == 0:
            raise InvalidArgument("tree_size is required (the size of a tree head you hold)")
        if tree_size > self.durable_size:
            raise OutOfRange(f"tree size {tree_size} is beyond the {self.durable_size} entries")
        return tree_size

    async def consistency_proof(
        self, req: ledger_pb2.GetConsistencyProofRequest
    ) -> ledger_pb2.GetConsistencyProofResponse:
        first, second = req.first_tree_size, req.second_tree_size
        if not 0 < first <= second:
            raise InvalidArgument(f"need 0 < first_tree_size ≤ second, got {first}, {second}")
        async with self.book.lock:
            self._size(second)
            hashes = self.book.ledger.tree.consistency_proof(first, second)
        return ledger_pb2.GetConsistencyProofResponse(hashes=hashes)

    async def _game_events(self, game_id: str) -> list[events_pb2.EventEnvelope]:
        envelopes: list[events_pb2.EventEnvelope] = []

        def take(subject: str, data: bytes, seq: int) -> None:
            try:
                for event in decode_commit(game_id, data, seq):
                    envelopes.append(events_pb2.EventEnvelope.FromString(event.data))
            except DecodeError:
                raise FailedPrecondition(
                    f"message {seq} on {subject} is not an EventEnvelope"
                ) from None

        subject = f"{self.games_prefix}.{game_id}"
        try:
            # The leader's last message, not a count of what the consumer's replica has:
            # a lagging replica would make a finished game look unfinished.
            last = await self.js.get_last_msg(self.games_stream, subject)
        except NotFoundError:
            return envelopes
        assert last.seq is not None
        await replay_stream(
            self.js, self.games_stream, subject, take, until_seq=last.seq, last_on_subject=True
        )
        return envelopes

    async def reconcile(self, req: ledger_pb2.ReconcileRequest) -> ledger_pb2.ReconcileResponse:
        game_id = _check_game_id(req.game_id)
        envelopes = await self._game_events(game_id)
        if not envelopes:
            raise NotFound(f"game {game_id} has no events on GAMES")
        try:
            trail = money_trail(envelopes)
        except KeyError as err:
            raise FailedPrecondition(f"cannot replay game {game_id}: {err}") from None
        except (RulesError, ValueError) as err:
            raise FailedPrecondition(f"cannot replay game {game_id}: {err}") from None
        async with self.book.lock:
            seqs = list(self.book.by_game.get(game_id, ()))
            bounds = [self.book.stream_seq_of(s) for s in seqs[:1] + seqs[-1:]]
            refused = [r for (g, _), r in self.book.rejections.items() if g == game_id]
        entries = await self._read(game_id, bounds[0], bounds[-1], set(seqs)) if seqs else []
        divergence = reconcile(game_id, entries, trail)
        if divergence is None:
            message = (
                f"game {game_id}: {len(entries)} entries match the money of every seat "
                f"after each of its {len(trail)} events"
            )
        else:
            message = str(divergence)
        if refused:
            first = min(refused, key=lambda r: r.version)
            message += (
                f"; the ledger refused {len(refused)} of its events, first version "
                f"{first.version}: {first.code}: {first.message}"
            )
        reconciled = divergence is None and not refused
        metrics.LEDGER_RECONCILIATIONS.labels("pass" if reconciled else "fail").inc()
        return ledger_pb2.ReconcileResponse(
            reconciled=reconciled,
            divergence=divergence_to_pb(divergence) if divergence else None,
            events=len(trail),
            entries=len(entries),
            message=message,
            game_events=envelopes if req.include_events else [],
        )
