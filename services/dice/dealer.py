"""The dealer: opens games, draws outcomes, reveals seeds — each step recorded on the DICE
stream before anyone hears of it.

Invariants, and how they hold across crashes, retries and a second replica:

- one server seed per game: created once in the seed vault (KV `create`, first writer wins)
  before its commitment is appended; a crashed open is finished by the retry;
- nonces 0, 1, 2, … with no gap or repeat: every record is appended with
  `Nats-Expected-Last-Subject-Sequence` = the game's last record as this process knows it,
  so a stale writer is refused and re-reads the log; the next nonce is read back from the log
  after a restart;
- a request id gets one outcome forever: the id is inside the recorded outcome (durable,
  unlike the `Nats-Msg-Id` dedupe window), and a retry returns the recorded outcome;
- no draw before the client seeds are fixed, none after the reveal, and no reveal before
  the game's own log (GAMES) records its end;
- every leaf record (commitment, client seeds, outcomes, reveal) is stored with the signed
  tree head over the game's Merkle tree that ends with it, in one message (a
  `signed_leaf`: one fsynced write, and no leaf is ever stored without its head), and a
  log that no longer matches its heads is refused, not extended;
- logs of older releases hold a leaf and its head as two messages, and a crash between
  them leaves a leaf without a head: the next load signs it if it is exactly what this
  service would have written (`_vouch`). With `heads_apart` (a rolling upgrade from a
  release that reads only that form) this service writes the two-message form too, the
  head awaited before anyone hears of the leaf.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import structlog

from boulevard.accounting.merkle import MerkleTree
from boulevard.accounting.treehead import TreeHeadSigner
from boulevard.api.v1 import dice_pb2
from boulevard.contract.dice_log import parse_log, signed_view
from boulevard.fairness import (
    MAX_CLIENT_SEED_BYTES,
    ROLL,
    SCHEME_VERSION,
    SEED_BYTES,
    SHUFFLE,
    FairnessError,
    GameSeeds,
    check_request,
    client_seed_commitment,
    commitment,
    is_commitment,
    parse_server_seed,
)
from boulevard.messaging.poison import poisoned
from boulevard.platform import metrics
from boulevard.platform.errors import Aborted, FailedPrecondition, InvalidArgument, NotFound
from services.dice.heads import sign_head
from services.dice.mapping import KIND_TO_PROTO, kind_name
from services.dice.store import AppendConflict, DiceLog, SeedVault, StoredRecord

log = structlog.get_logger(__name__)

GAME_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}\Z")
MAX_REQUEST_ID = 256
MAX_SEATS = 64
MAX_PURPOSE = 128
BLINDING_BYTES = 16
# The scheme allows bigger draws; a game never needs them and they would stall the loop.
MAX_DRAW_ITEMS = 10_000
ATTEMPTS = 5


def check_game_id(game_id: str) -> None:
    """Game ids become a NATS subject token and a KV key: letters, digits, `_` and `-`."""
    if not GAME_ID.match(game_id):
        raise InvalidArgument(
            f"game id must be 1..128 letters, digits, '_' or '-', got {game_id!r}"
        )


@dataclass
class Table:
    """What the dealer knows of one game, rebuilt from its DICE records."""

    game_id: str
    opened: dice_pb2.DiceCommitment
    server_seed: bytes
    last_seq: int
    tree: MerkleTree = field(default_factory=MerkleTree)
    signed_size: int = 0  # the size of the last head this service signed and stored
    head: dice_pb2.DiceTreeHead | None = None  # that head (None: none stored yet)
    seeds: GameSeeds | None = None  # set once the client seeds are fixed
    client_seeds: dice_pb2.DiceClientSeeds | None = None
    next_nonce: int = 0
    by_request: dict[str, dice_pb2.DiceOutcome] = field(default_factory=dict)
    revealed: dice_pb2.DiceReveal | None = None


GameEnded = Callable[[str], Awaitable[bool]]


class Dealer:
    def __init__(
        self,
        dice_log: DiceLog,
        vault: SeedVault,
        signer: TreeHeadSigner,
        game_ended: GameEnded,
        *,
        new_seed: Callable[[], bytes] = lambda: secrets.token_bytes(SEED_BYTES),
        new_blinding: Callable[[], bytes] = lambda: secrets.token_bytes(BLINDING_BYTES),
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        cache_size: int = 10_000,
        heads_apart: bool = False,
    ) -> None:
        self._log = dice_log
        self._vault = vault
        self._signer = signer
        self._game_ended = game_ended
        self._new_seed = new_seed
        self._new_blinding = new_blinding
        self._clock_ms = clock_ms
        self._cache: OrderedDict[str, Table] = OrderedDict()
        self._cache_size = cache_size
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._unpurged: set[str] = set()  # revealed seeds a purge failed to drop
        self._heads_apart = heads_apart

    @property
    def public_key(self) -> bytes:
        return self._signer.public_key

    @property
    def unpurged(self) -> frozenset[str]:
        """Games whose seed is revealed but still in the vault (a purge that failed)."""
        return frozenset(self._unpurged)

    async def purge_revealed(self) -> int:
        """Try once more to drop every revealed seed still in the vault; how many remain."""
        for game_id in sorted(self._unpurged):
            try:
                await self._vault.forget(game_id)
            except Exception as exc:
                log.warning("could not drop a revealed seed; will retry", game_id=game_id,
                            error=repr(exc))  # fmt: skip
                break  # NATS is not answering: the rest would fail the same way
            self._unpurged.discard(game_id)
            log.info("revealed seed dropped on retry", game_id=game_id)
        metrics.DICE_SEEDS_UNPURGED.set(len(self._unpurged))
        return len(self._unpurged)

    async def purge_until_done(self, interval: float = 1.0) -> None:
        """Runs for the life of the service: retries failed seed purges every `interval`."""
        while True:
            await asyncio.sleep(interval)
            if self._unpurged:
                await self.purge_revealed()

    # ---- the six operations ------------------------------------------------------------

    async def open_game(
        self, game_id: str, seed_commitments: Sequence[str], reveal_deadline_unix_ms: int = 0
    ) -> dice_pb2.DiceCommitment:
        """The game's commitment; creates its seed the first time. The seats' client seeds
        are not known here, only their commitments: the server seed is drawn and committed
        blind. Opening again with the same commitments returns the recorded commitment
        (with its recorded deadline)."""
        check_game_id(game_id)
        _check_commitments(seed_commitments)
        async with self._turn(game_id):
            for _ in range(ATTEMPTS):
                table = await self._find(game_id)
                if table is not None:
                    if list(table.opened.client_seed_commitments) != list(seed_commitments):
                        raise FailedPrecondition(
                            f"game {game_id} is already open with other seed commitments"
                        )
                    return table.opened
                seed = await self._vault.get(game_id)
                if seed is None:
                    seed = await self._vault.create(game_id, self._new_seed())
                opened = dice_pb2.DiceCommitment(
                    game_id=game_id,
                    scheme=SCHEME_VERSION,
                    commitment=commitment(seed),
                    client_seed_commitments=list(seed_commitments),
                    reveal_deadline_unix_ms=reveal_deadline_unix_ms,
                    time_unix_ms=self._clock_ms(),
                )
                table = Table(game_id, opened, seed, 0)
                try:
                    await self._append_leaf(table, dice_pb2.DiceRecord(opened=opened), "open")
                except AppendConflict:
                    self._forget(game_id)
                    continue
                self._remember(table)
                log.info("game opened", game_id=game_id, commitment=opened.commitment)
                return opened
        raise Aborted(f"could not open game {game_id}: the dice log kept changing")

    async def fix_seeds(
        self, game_id: str, client_seeds: Sequence[str], missing_seats: Sequence[int] = ()
    ) -> dice_pb2.DiceClientSeeds:
        """Record the revealed client seeds (per seat), each checked against its seat's
        commitment; a missing seat (allowed only after the deadline) plays with "". Draws
        are possible from then on. Idempotent for the same seeds."""
        check_game_id(game_id)
        async with self._turn(game_id):
            for _ in range(ATTEMPTS):
                table = await self._table(game_id)
                if table.client_seeds is not None:
                    same = list(table.client_seeds.client_seeds) == list(client_seeds) and list(
                        table.client_seeds.missing_seats
                    ) == sorted(set(missing_seats))
                    if not same:
                        raise FailedPrecondition(
                            f"game {game_id}'s client seeds are already fixed, differently"
                        )
                    return table.client_seeds
                if table.revealed is not None:
                    raise FailedPrecondition(f"game {game_id} is revealed")
                self._check_seeds(table, client_seeds, missing_seats)
                record = dice_pb2.DiceClientSeeds(
                    game_id=game_id,
                    client_seeds=list(client_seeds),
                    missing_seats=sorted(set(missing_seats)),
                    time_unix_ms=self._clock_ms(),
                )
                try:
                    await self._append_leaf(table, dice_pb2.DiceRecord(seeds=record), "seeds")
                except AppendConflict:
                    self._forget(game_id)
                    continue
                table.client_seeds = record
                table.seeds = GameSeeds.of(table.server_seed, client_seeds, game_id)
                log.info("client seeds fixed", game_id=game_id, missing=list(missing_seats))
                return record
        raise Aborted(f"could not fix the seeds of {game_id}: the dice log kept changing")

    def _check_seeds(
        self, table: Table, client_seeds: Sequence[str], missing_seats: Sequence[int]
    ) -> None:
        commitments = list(table.opened.client_seed_commitments)
        if len(client_seeds) != len(commitments):
            raise InvalidArgument(
                f"{len(commitments)} seats committed; got {len(client_seeds)} client seeds"
            )
        for seed in client_seeds:
            if len(seed.encode("utf-8")) > MAX_CLIENT_SEED_BYTES:
                raise InvalidArgument(f"a client seed is at most {MAX_CLIENT_SEED_BYTES} bytes")
        missing = set(missing_seats)
        if any(not 0 <= s < len(commitments) for s in missing):
            raise InvalidArgument("a missing seat is not a seat of this game")
        deadline = table.opened.reveal_deadline_unix_ms
        if missing and (not deadline or self._clock_ms() < deadline):
            raise FailedPrecondition("a seat may be counted missing only after the reveal deadline")
        for seat, (committed, seed) in enumerate(zip(commitments, client_seeds, strict=True)):
            if seat in missing or not committed:
                if seed:
                    raise InvalidArgument(f"seat {seat} has no committed seed to reveal")
            elif client_seed_commitment(seed) != committed:
                raise InvalidArgument(f"seat {seat}'s client seed does not match its commitment")

    async def draw(
        self,
        game_id: str,
        request_id: str,
        kind: str,
        count: int,
        sides: int,
        purpose: str = "",
    ) -> dice_pb2.DiceOutcome:
        """The outcome for this request id: the recorded one if it was drawn before, else
        the game's next nonce, appended to the log before it is returned."""
        check_game_id(game_id)
        if not 1 <= len(request_id) <= MAX_REQUEST_ID:
            raise InvalidArgument(f"request id must be 1..{MAX_REQUEST_ID} characters")
        if len(purpose) > MAX_PURPOSE:
            raise InvalidArgument(f"purpose must be at most {MAX_PURPOSE} characters")
        if kind == SHUFFLE:
            sides = 0
        try:
            check_request(kind, count, sides)
        except FairnessError as e:
            raise InvalidArgument(str(e)) from None
        if count > MAX_DRAW_ITEMS:
            raise InvalidArgument(f"at most {MAX_DRAW_ITEMS} dice or items per draw")
        async with self._turn(game_id):
            for _ in range(ATTEMPTS):
                table = await self._table(game_id)
                previous = table.by_request.get(request_id)
                if previous is not None:
                    same = (kind_name(previous.kind), previous.count, previous.sides) == (
                        kind,
                        count,
                        sides,
                    )
                    if not same:
                        raise InvalidArgument(
                            f"request id {request_id!r} was already used for another draw "
                            f"(nonce {previous.nonce})"
                        )
                    return previous
                if table.revealed is not None:
                    raise FailedPrecondition(f"game {game_id} is revealed: no more draws")
                if table.seeds is None:
                    # Another replica may have fixed them since this one cached the game.
                    self._forget(game_id)
                    table = await self._table(game_id)
                if table.seeds is None:
                    raise FailedPrecondition(
                        f"game {game_id}'s client seeds are not fixed yet: no draw before them"
                    )
                nonce = table.next_nonce
                outcome = dice_pb2.DiceOutcome(
                    game_id=game_id,
                    nonce=nonce,
                    kind=KIND_TO_PROTO[kind],
                    count=count,
                    sides=sides,
                    values=table.seeds.derive(nonce, kind, count, sides),
                    request_id=request_id,
                    purpose=purpose,
                    time_unix_ms=self._clock_ms(),
                    blinding=self._new_blinding(),
                )
                try:
                    await self._append_leaf(table, dice_pb2.DiceRecord(outcome=outcome), nonce)
                except AppendConflict:
                    self._forget(game_id)
                    continue
                table.next_nonce = nonce + 1
                table.by_request[request_id] = outcome
                metrics.DICE_OUTCOMES.labels(kind).inc()
                return outcome
        raise Aborted(f"could not draw for game {game_id}: the dice log kept changing")

    async def roll(
        self, game_id: str, request_id: str, count: int, sides: int, purpose: str = ""
    ) -> dice_pb2.DiceOutcome:
        return await self.draw(game_id, request_id, ROLL, count, sides, purpose)

    async def shuffle(
        self, game_id: str, request_id: str, count: int, purpose: str = ""
    ) -> dice_pb2.DiceOutcome:
        return await self.draw(game_id, request_id, SHUFFLE, count, 0, purpose)

    async def reveal(self, game_id: str, reason: str = "") -> dice_pb2.DiceReveal:
        """Publish the server seed (once; later calls return the same reveal) and end the
        game's draws. Refused until the game's own log records its end: a running game's
        seed would give away every outcome still to come."""
        check_game_id(game_id)
        async with self._turn(game_id):
            for _ in range(ATTEMPTS):
                table = await self._table(game_id)
                if table.revealed is not None:
                    return table.revealed
                if not await self._game_ended(game_id):
                    raise FailedPrecondition(
                        f"game {game_id} has not ended: its log does not record GameFinished"
                    )
                revealed = dice_pb2.DiceReveal(
                    game_id=game_id,
                    server_seed=table.server_seed.hex(),
                    outcome_count=table.next_nonce,
                    reason=reason or "finished",
                    time_unix_ms=self._clock_ms(),
                )
                try:
                    await self._append_leaf(table, dice_pb2.DiceRecord(revealed=revealed), "reveal")
                except AppendConflict:
                    self._forget(game_id)
                    continue
                table.revealed = revealed
                try:
                    await self._vault.forget(game_id)
                except Exception as exc:
                    # The seed is public now, so keeping it is no secret lost, but the vault
                    # must not keep seeds it has no reason to: retried until it is dropped.
                    self._unpurged.add(game_id)
                    metrics.DICE_SEEDS_UNPURGED.set(len(self._unpurged))
                    log.warning(
                        "could not drop a revealed seed; will retry",
                        game_id=game_id,
                        error=repr(exc),
                    )
                log.info("seed revealed", game_id=game_id, outcomes=table.next_nonce)
                return revealed
        raise Aborted(f"could not reveal game {game_id}: the dice log kept changing")

    async def head(self, game_id: str) -> dice_pb2.DiceTreeHead:
        """The game's signed head over every leaf stored so far: the stored one, or, when
        the newest leaf has none yet (a crash between a leaf and its head), one signed and
        stored now. The engine records it in GameFinished before it asks for the reveal,
        so the reveal is the one leaf an audit finds after it. FailedPrecondition for a
        game never opened (there is nothing to sign)."""
        check_game_id(game_id)
        async with self._turn(game_id):
            for _ in range(ATTEMPTS):
                table = await self._find(game_id)
                if table is not None and await self._log.last_seq(game_id) != table.last_seq:
                    # Another replica wrote since this one cached the game (a draw answered
                    # there): the head must cover that leaf too, so read the log again.
                    self._forget(game_id)
                    table = await self._find(game_id)
                if table is None:
                    raise FailedPrecondition(f"no dice game {game_id}: nothing to sign")
                if table.head is None or table.signed_size < table.tree.size:
                    await self._sign(table)
                if table.head is not None and table.signed_size == table.tree.size:
                    return table.head
                # Another replica wrote since this one cached the game: read it again.
                self._forget(game_id)
        raise Aborted(f"could not sign a head for game {game_id}: the dice log kept changing")

    # ---- the signed log -----------------------------------------------------------------

    async def _append_leaf(self, table: Table, record: dice_pb2.DiceRecord, key: object) -> None:
        """Store a leaf record with the signed head over the tree that now ends with it,
        before anyone hears of the leaf: one message (`signed_leaf`), so the leaf and its
        head are durable together or not at all. AppendConflict when another writer got
        there first. On any failure the game is dropped from the cache (its tree already
        holds the leaf): its next use reads the log, where the write may or may not be.

        With `heads_apart`, two messages as older releases write them: the leaf, then the
        head; a crash between the two is repaired on the next load (`_load`)."""
        data = record.SerializeToString()
        game_id = table.game_id
        msg_id = f"{game_id}:{key}"
        try:
            if self._heads_apart:
                which = record.WhichOneof("record") or ""
                seq = await self._log.append_bytes(game_id, data, which, msg_id, table.last_seq)
                table.last_seq = seq
                table.tree.append(data)
                await self._sign(table)
                return
            table.tree.append(data)
            head = sign_head(self._signer, game_id, table.tree, self._clock_ms())
            signed = dice_pb2.DiceRecord(signed_leaf=dice_pb2.DiceSignedLeaf(leaf=data, head=head))
            table.last_seq = await self._log.append(game_id, signed, msg_id, table.last_seq)
        except BaseException:
            # Not `table.by_request` yet: a retry must find the leaf in the log, not draw
            # its nonce again after it (a head that failed after its leaf was stored).
            self._forget(game_id)
            raise
        table.signed_size = head.tree_size
        table.head = head

    async def _sign(self, table: Table) -> None:
        """Store a head alone over the tree as it stands: the second message of the
        two-message form, and the repair of a leaf left without its head (a crash between
        the two, in a log of an older release or written with `heads_apart`)."""
        head = sign_head(self._signer, table.game_id, table.tree, self._clock_ms())
        try:
            seq = await self._log.append(
                table.game_id,
                dice_pb2.DiceRecord(head=head),
                f"{table.game_id}:head:{head.tree_size}",
                table.last_seq,
            )
        except AppendConflict:
            # Someone else wrote after our leaf (another replica catching up the head):
            # reload next time; the leaf itself is stored.
            self._forget(table.game_id)
            return
        table.last_seq = seq
        table.signed_size = head.tree_size
        table.head = head

    # ---- the game table, from cache or from the log -----------------------------------------

    @asynccontextmanager
    async def _turn(self, game_id: str) -> AsyncIterator[None]:
        """The game's turn: its lock (one operation at a time per game in this process)."""
        lock = self._locks.get(game_id)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[game_id] = lock
        async with lock:
            yield

    def _remember(self, table: Table) -> None:
        self._cache[table.game_id] = table
        self._cache.move_to_end(table.game_id)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _forget(self, game_id: str) -> None:
        self._cache.pop(game_id, None)

    async def _find(self, game_id: str) -> Table | None:
        table = self._cache.get(game_id)
        if table is not None:
            self._cache.move_to_end(game_id)
            return table
        loaded = await self._load(game_id)
        if loaded is not None:
            self._remember(loaded)
        return loaded

    async def _table(self, game_id: str) -> Table:
        table = await self._find(game_id)
        if table is None:
            raise NotFound(f"no dice game {game_id}: open it first")
        return table

    @staticmethod
    def _out_of_sequence(stored: StoredRecord, why: str) -> None:
        record = stored.record.WhichOneof("record") or "empty"
        poisoned("dice.log", "out_of_sequence", seq=stored.seq, error=f"{record}: {why}")

    async def _load(self, game_id: str) -> Table | None:
        records, last_seq = await self._log.read(game_id)
        if not records:
            return None
        # The log as this service signed it: records no head of ours covers were written by
        # someone else; they are skipped (logged, counted), never drawn from, and an audit
        # of the raw log names them.
        view = signed_view(game_id, [(r.record, r.data) for r in records], self.public_key)
        for position in view.skipped:
            self._out_of_sequence(records[position], "not covered by a head this service signed")
        game, problem = parse_log(view.trusted)
        if problem is not None:
            raise FailedPrecondition(f"the dice log of {game_id}: {problem.describe()}")
        if game.opened is None:
            # No signed commitment yet: a crash right after the first leaf, or junk.
            first = next((p for p in view.tail if records[p].record.HasField("opened")), None)
            if first is None:
                raise FailedPrecondition(f"the dice log of {game_id} has no commitment record")
            game.opened = records[first].record.opened
            view.tail = [first]
        opened = game.opened
        if game.revealed is not None:
            seed = parse_server_seed(game.revealed.server_seed)
        else:
            vaulted = await self._vault.get(game_id)
            if vaulted is None:
                raise FailedPrecondition(f"the seed of {game_id} is missing from the vault")
            seed = vaulted
            if commitment(seed) != opened.commitment:
                raise FailedPrecondition(f"the vaulted seed of {game_id} is not the committed one")
        # The subject's last message, good or not: the next append expects it.
        table = Table(game_id=game_id, opened=opened, server_seed=seed, last_seq=last_seq)
        table.tree = view.tree
        table.signed_size = view.signed_size
        table.head = view.head
        self._apply(table, game.seeds, game.outcomes, game.revealed)
        if view.tail:
            # A crash between a leaf and its head stored apart (an older release's log, or
            # `heads_apart`) leaves one unsigned leaf: sign it if it is exactly what this
            # service would have written; skip anything else. A `signed_leaf` is never here.
            last = view.tail[-1]
            for position in view.tail[:-1]:
                self._out_of_sequence(records[position], "not covered by a signed head")
            if self._vouch(table, records[last]):
                # The commitment too: a crash right after the first leaf left it unsigned,
                # and a head over the empty tree would leave it out of the log for good.
                table.tree.append(records[last].data)
                await self._sign(table)
            else:
                self._out_of_sequence(records[last], "not a record this service would write")
        return table

    def _apply(
        self,
        table: Table,
        seeds: dice_pb2.DiceClientSeeds | None,
        outcomes: Sequence[dice_pb2.DiceOutcome],
        revealed: dice_pb2.DiceReveal | None,
    ) -> None:
        if seeds is not None:
            table.client_seeds = seeds
            table.seeds = GameSeeds.of(table.server_seed, seeds.client_seeds, table.game_id)
        for outcome in outcomes:
            table.by_request.setdefault(outcome.request_id, outcome)
            table.next_nonce = max(table.next_nonce, outcome.nonce + 1)
        table.revealed = revealed

    def _vouch(self, table: Table, stored: StoredRecord) -> bool:
        """Whether an unsigned leaf is what this service would have written next (then it
        is taken into the table); False for anything else."""
        record = stored.record
        which = record.WhichOneof("record")
        if which == "opened":
            return table.tree.size == 0 and record.opened.commitment == commitment(
                table.server_seed
            )
        if which == "seeds" and table.client_seeds is None and table.tree.size == 1:
            try:
                self._check_seeds(table, record.seeds.client_seeds, record.seeds.missing_seats)
            except (InvalidArgument, FailedPrecondition):
                return False
            self._apply(table, record.seeds, (), None)
            return True
        if which == "outcome" and table.seeds is not None and table.revealed is None:
            o = record.outcome
            try:
                expected = table.seeds.derive(o.nonce, kind_name(o.kind), o.count, o.sides)
            except FairnessError:
                return False
            if o.nonce != table.next_nonce or tuple(o.values) != expected:
                return False
            self._apply(table, None, [o], None)
            return True
        if which == "revealed" and table.revealed is None:
            if not _reveals(record.revealed, table.opened):
                return False
            if record.revealed.outcome_count != table.next_nonce:
                return False
            table.revealed = record.revealed
            return True
        return False


def _reveals(reveal: dice_pb2.DiceReveal, opened: dice_pb2.DiceCommitment) -> bool:
    try:
        return commitment(parse_server_seed(reveal.server_seed)) == opened.commitment
    except FairnessError:
        return False


def _check_commitments(commitments: Sequence[str]) -> None:
    if len(commitments) > MAX_SEATS:
        raise InvalidArgument(f"at most {MAX_SEATS} seats")
    for c in commitments:
        if c and not is_commitment(c):
            raise InvalidArgument(
                "a seed commitment is 64 lowercase hex digits (SHA-256 of the client seed)"
            )
