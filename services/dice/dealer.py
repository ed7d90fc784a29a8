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
- no draw after the reveal.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import structlog

from boulevard.api.v1 import dice_pb2
from boulevard.fairness import (
    ROLL,
    SCHEME_VERSION,
    SEED_BYTES,
    SHUFFLE,
    FairnessError,
    GameSeeds,
    check_request,
    combine_client_seeds,
    commitment,
    parse_server_seed,
)
from boulevard.messaging.poison import poisoned
from boulevard.platform.errors import Aborted, FailedPrecondition, InvalidArgument, NotFound
from services.dice.mapping import KIND_TO_PROTO, kind_name
from services.dice.store import AppendConflict, DiceLog, SeedVault, StoredRecord

log = structlog.get_logger(__name__)

GAME_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
MAX_REQUEST_ID = 256
MAX_CLIENT_SEEDS = 64
MAX_CLIENT_SEED_BYTES = 256
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
    seeds: GameSeeds
    last_seq: int
    next_nonce: int = 0
    by_request: dict[str, dice_pb2.DiceOutcome] = field(default_factory=dict)
    revealed: dice_pb2.DiceReveal | None = None


class Dealer:
    def __init__(
        self,
        dice_log: DiceLog,
        vault: SeedVault,
        *,
        new_seed: Callable[[], bytes] = lambda: secrets.token_bytes(SEED_BYTES),
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        cache_size: int = 10_000,
    ) -> None:
        self._log = dice_log
        self._vault = vault
        self._new_seed = new_seed
        self._clock_ms = clock_ms
        self._cache: OrderedDict[str, Table] = OrderedDict()
        self._cache_size = cache_size
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    # ---- the four operations ------------------------------------------------------------

    async def open_game(self, game_id: str, client_seeds: Sequence[str]) -> dice_pb2.DiceCommitment:
        """The game's commitment; creates its seed the first time. Opening again with the
        same client seeds returns the same commitment."""
        check_game_id(game_id)
        _check_client_seeds(client_seeds)
        async with self._lock(game_id):
            for _ in range(ATTEMPTS):
                table = await self._find(game_id)
                if table is not None:
                    if combine_client_seeds(table.opened.client_seeds) != combine_client_seeds(
                        client_seeds
                    ):
                        raise FailedPrecondition(
                            f"game {game_id} is already open with other client seeds"
                        )
                    return table.opened
                seed = await self._vault.get(game_id)
                if seed is None:
                    seed = await self._vault.create(game_id, self._new_seed())
                opened = dice_pb2.DiceCommitment(
                    game_id=game_id,
                    scheme=SCHEME_VERSION,
                    commitment=commitment(seed),
                    client_seeds=list(client_seeds),
                    time_unix_ms=self._clock_ms(),
                )
                record = dice_pb2.DiceRecord(opened=opened)
                try:
                    seq = await self._log.append(game_id, record, f"{game_id}:open", 0)
                except AppendConflict:
                    self._forget(game_id)
                    continue
                self._remember(
                    Table(game_id, opened, GameSeeds.of(seed, client_seeds, game_id), seq)
                )
                log.info("game opened", game_id=game_id, commitment=opened.commitment)
                return opened
        raise Aborted(f"could not open game {game_id}: the dice log kept changing")

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
        if kind == SHUFFLE:
            sides = 0
        try:
            check_request(kind, count, sides)
        except FairnessError as e:
            raise InvalidArgument(str(e)) from None
        if count > MAX_DRAW_ITEMS:
            raise InvalidArgument(f"at most {MAX_DRAW_ITEMS} dice or items per draw")
        async with self._lock(game_id):
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
                )
                record = dice_pb2.DiceRecord(outcome=outcome)
                try:
                    seq = await self._log.append(
                        game_id, record, f"{game_id}:{nonce}", table.last_seq
                    )
                except AppendConflict:
                    self._forget(game_id)
                    continue
                table.last_seq = seq
                table.next_nonce = nonce + 1
                table.by_request[request_id] = outcome
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
        game's draws."""
        check_game_id(game_id)
        async with self._lock(game_id):
            for _ in range(ATTEMPTS):
                table = await self._table(game_id)
                if table.revealed is not None:
                    return table.revealed
                revealed = dice_pb2.DiceReveal(
                    game_id=game_id,
                    server_seed=table.seeds.server_seed.hex(),
                    outcome_count=table.next_nonce,
                    reason=reason or "finished",
                    time_unix_ms=self._clock_ms(),
                )
                record = dice_pb2.DiceRecord(revealed=revealed)
                try:
                    seq = await self._log.append(
                        game_id, record, f"{game_id}:reveal", table.last_seq
                    )
                except AppendConflict:
                    self._forget(game_id)
                    continue
                table.last_seq = seq
                table.revealed = revealed
                try:
                    await self._vault.forget(game_id)
                except Exception:
                    log.warning("could not drop a revealed seed", game_id=game_id, exc_info=True)
                log.info("seed revealed", game_id=game_id, outcomes=table.next_nonce)
                return revealed
        raise Aborted(f"could not reveal game {game_id}: the dice log kept changing")

    # ---- the game table, from cache or from the log -----------------------------------------

    def _lock(self, game_id: str) -> asyncio.Lock:
        lock = self._locks.get(game_id)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[game_id] = lock
        return lock

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
        opened: dice_pb2.DiceCommitment | None = None
        revealed: dice_pb2.DiceReveal | None = None
        by_request: dict[str, dice_pb2.DiceOutcome] = {}
        next_nonce = 0
        for stored in records:
            which = stored.record.WhichOneof("record")
            if which == "opened" and opened is None:
                opened = stored.record.opened
            elif opened is None:
                self._out_of_sequence(stored, "a record before the commitment")
            elif which == "outcome":
                outcome = stored.record.outcome
                if outcome.nonce != next_nonce or outcome.game_id != game_id:
                    # Nonces are consecutive: anything else was not drawn here. Skipped for
                    # drawing (the next draw takes the next nonce); audits still see it.
                    self._out_of_sequence(stored, f"nonce {outcome.nonce}, not {next_nonce}")
                    continue
                by_request.setdefault(outcome.request_id, outcome)
                next_nonce += 1
            elif which == "revealed" and revealed is None:
                if not _reveals(stored.record.revealed, opened):
                    self._out_of_sequence(stored, "a reveal that is not the committed seed")
                    continue
                revealed = stored.record.revealed
        if opened is None:
            raise FailedPrecondition(f"the dice log of {game_id} has no commitment record")
        if revealed is not None:
            seed = parse_server_seed(revealed.server_seed)
        else:
            vaulted = await self._vault.get(game_id)
            if vaulted is None:
                raise FailedPrecondition(f"the seed of {game_id} is missing from the vault")
            seed = vaulted
            if commitment(seed) != opened.commitment:
                raise FailedPrecondition(f"the vaulted seed of {game_id} is not the committed one")
        return Table(
            game_id=game_id,
            opened=opened,
            seeds=GameSeeds.of(seed, opened.client_seeds, game_id),
            # The subject's last message, good or not: the next append expects it.
            last_seq=last_seq,
            next_nonce=next_nonce,
            by_request=by_request,
            revealed=revealed,
        )


def _reveals(reveal: dice_pb2.DiceReveal, opened: dice_pb2.DiceCommitment) -> bool:
    try:
        return commitment(parse_server_seed(reveal.server_seed)) == opened.commitment
    except FairnessError:
        return False


def _check_client_seeds(client_seeds: Sequence[str]) -> None:
    if len(client_seeds) > MAX_CLIENT_SEEDS:
        raise InvalidArgument(f"at most {MAX_CLIENT_SEEDS} client seeds")
    for seed in client_seeds:
        if len(seed.encode("utf-8")) > MAX_CLIENT_SEED_BYTES:
            raise InvalidArgument(f"a client seed is at most {MAX_CLIENT_SEED_BYTES} bytes")
