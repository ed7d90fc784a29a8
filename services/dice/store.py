"""Where the dice service keeps things: the DICE stream (public evidence, one subject per
game) and the seed vault (a KV bucket of sealed server seeds that only this service reads).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from google.protobuf.message import DecodeError
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy, KeyValueConfig, StorageType
from nats.js.errors import (
    APIError,
    BucketNotFoundError,
    KeyDeletedError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    NotFoundError,
)
from nats.js.kv import KeyValue

from boulevard.api.v1 import dice_pb2, events_pb2
from boulevard.contract.dice_log import head_in, leaf_in
from boulevard.messaging.poison import poisoned
from boulevard.messaging.requests import requests_on
from boulevard.platform.errors import FailedPrecondition, Unavailable
from services.dice.sealing import SealError, SeedSealer

MSG_ID = "Nats-Msg-Id"
EXPECTED_LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence"
RECORD_TYPE = "Boulevard-Type"
WRONG_LAST_SEQUENCE = 10071
WRONG_LAST_SEQUENCE_CLUSTERED = 10164  # the same, as a clustered stream's leader says it
PUBLISH_TIMEOUT = 5.0  # how long an append waits for its acknowledgement (nats-py's default)


class AppendConflict(Exception):
    """Someone else appended to the game's subject first (or this record is a replay)."""


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One message of a game's subject: a leaf alone, a head alone, or both (`signed_leaf`)."""

    seq: int  # the stream sequence
    record: dice_pb2.DiceRecord
    data: bytes = b""  # the exact bytes stored (a leaf stored alone: its data in the tree)

    @property
    def leaf(self) -> bytes | None:
        """The Merkle leaf this message holds, if any (`boulevard.contract.dice_log`)."""
        return leaf_in(self.record, self.data)

    @property
    def head(self) -> dice_pb2.DiceTreeHead | None:
        """The signed head this message holds, if any."""
        return head_in(self.record)


class DiceLog:
    """Append and read `DiceRecord`s on `<prefix>.<game_id>` of the DICE stream."""

    def __init__(self, nc: NATS, stream: str, prefix: str, read_timeout: float = 30.0) -> None:
        # A draw's record is appended per move: through the lean request path (issue 28).
        self._requests = requests_on(nc)
        self._nc = nc
        self._js: JetStreamContext = nc.jetstream()
        self.stream = stream
        self.prefix = prefix
        self._read_timeout = read_timeout

    def subject(self, game_id: str) -> str:
        return f"{self.prefix}.{game_id}"

    async def last_seq(self, game_id: str) -> int:
        """The stream sequence of the game's last record, 0 when it has none. Asked of the
        stream's leader, not by a direct get: any replica may answer a direct get, and one
        that lags the appends the leader acknowledged would make `read` (a game's load,
        VerifyGame, an audit's records) stop short of records this service was told are
        stored (the same flaw as `GamesLog.ended`'s)."""
        try:
            msg = await self._js.get_last_msg(self.stream, self.subject(game_id))
        except NotFoundError:
            return 0
        assert msg.seq is not None
        return msg.seq

    async def append(
        self, game_id: str, record: dice_pb2.DiceRecord, msg_id: str, expected_last_seq: int
    ) -> int:
        """Append one record if the game's last record is still `expected_last_seq`; its
        stream sequence once the server has stored it. AppendConflict otherwise."""
        return await self.append_bytes(
            game_id,
            record.SerializeToString(),
            record.WhichOneof("record") or "",
            msg_id,
            expected_last_seq,
        )

    async def append_bytes(
        self, game_id: str, data: bytes, record_type: str, msg_id: str, expected_last_seq: int
    ) -> int:
        """`append` of a record already serialized (the bytes are the Merkle leaf)."""
        headers = {
            MSG_ID: msg_id,
            EXPECTED_LAST_SUBJECT_SEQ: str(expected_last_seq),
            RECORD_TYPE: record_type,
        }
        try:
            ack = await self._requests.publish(
                self.subject(game_id), data, PUBLISH_TIMEOUT, headers=headers
            )
        except APIError as err:
            if err.err_code in (WRONG_LAST_SEQUENCE, WRONG_LAST_SEQUENCE_CLUSTERED):
                raise AppendConflict(game_id) from err
            raise Unavailable(f"DICE append failed: {err.description}") from err
        except TimeoutError as err:
            raise Unavailable("DICE append timed out") from err
        if ack.duplicate:
            raise AppendConflict(game_id)
        return ack.seq

    async def read(
        self, game_id: str, start_seq: int = 1, limit: int | None = None
    ) -> tuple[list[StoredRecord], int]:
        """The game's records from stream sequence `start_seq` on (at most `limit`), and the
        sequence of the game's last record at the time of reading."""
        last = await self.last_seq(game_id)
        if last < max(start_seq, 1):
            return [], last
        out: list[StoredRecord] = []
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def on_message(msg: Msg) -> None:
            if done.done():
                return
            seq = msg.metadata.sequence.stream
            record = dice_pb2.DiceRecord()
            try:
                record.ParseFromString(msg.data)
            except DecodeError as exc:
                # Not a record this service wrote: skipped (docs/security.md, "Poison
                # messages"); it stays on the stream, where an audit reports it.
                poisoned("dice.log", "undecodable", subject=msg.subject, seq=seq, error=exc)
            else:
                out.append(StoredRecord(seq, record, bytes(msg.data)))
            if seq >= last or (limit is not None and len(out) >= limit):
                done.set_result(None)

        sub = await self._js.subscribe(
            self.subject(game_id),
            stream=self.stream,
            cb=on_message,
            ordered_consumer=True,
            config=ConsumerConfig(
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=max(start_seq, 1)
            ),
            pending_msgs_limit=1_000_000,
        )
        try:
            await asyncio.wait_for(done, self._read_timeout)
        except TimeoutError as err:
            raise Unavailable(f"reading the dice log of {game_id} timed out") from err
        finally:
            await sub.unsubscribe()
        return out, last


class GamesLog:
    """The game's own log on GAMES, read (never written) to learn whether a game has ended:
    the dice service reveals a seed only once the game's last recorded event says so."""

    ENDINGS = ("GameFinished", "GameAbandoned")

    def __init__(self, nc: NATS, stream: str, prefix: str) -> None:
        self._js: JetStreamContext = nc.jetstream()
        self.stream = stream
        self.prefix = prefix

    async def ended(self, game_id: str) -> bool:
        """Whether the game's last recorded event ends it. A direct get may be answered by
        a replica that has not yet stored the engine's last append (seen after a network
        fault: the engine's GameFinished was acknowledged, a lagging replica said "not
        ended", and the engine's close failed). "Not ended" is asked again of the stream
        leader, which has every acknowledged append; "ended" from any replica is final."""
        if await self._ended(game_id, direct=True):
            return True
        return await self._ended(game_id, direct=False)

    async def _ended(self, game_id: str, direct: bool) -> bool:
        try:
            msg = await self._js.get_last_msg(
                self.stream, f"{self.prefix}.{game_id}", direct=direct
            )
        except (NotFoundError, NoRespondersError):  # no such game, or no GAMES stream yet
            return False
        except APIError as err:
            raise Unavailable(f"could not read the game log of {game_id}: {err}") from err
        commit = events_pb2.EventCommit()
        try:
            commit.ParseFromString(msg.data or b"")
        except DecodeError:
            return False
        return bool(commit.events) and commit.events[-1].type in self.ENDINGS


class SeedVault:
    """Sealed server seeds in a KV bucket, one key per game; never a plain seed at rest."""

    def __init__(self, kv: KeyValue, sealer: SeedSealer) -> None:
        self._kv = kv
        self._sealer = sealer

    @classmethod
    async def open(
        cls, js: JetStreamContext, bucket: str, sealer: SeedSealer, replicas: int = 1
    ) -> SeedVault:
        try:
            kv = await js.key_value(bucket)
        except BucketNotFoundError:
            kv = await js.create_key_value(
                KeyValueConfig(
                    bucket=bucket,
                    description="dice server seeds, AES-GCM sealed; read by the dice service only",
                    history=1,
                    storage=StorageType.FILE,
                    replicas=replicas,
                )
            )
        return cls(kv, sealer)

    async def get(self, game_id: str) -> bytes | None:
        try:
            entry = await self._kv.get(game_id)
        except (KeyNotFoundError, KeyDeletedError):
            return None
        if entry.value is None:
            return None
        try:
            return self._sealer.open(game_id, entry.value)
        except SealError as e:
            # Wrong or rotated key, or a damaged value: nobody may draw from a seed we
            # cannot read back exactly; the game waits for the right key.
            raise FailedPrecondition(str(e)) from e

    async def create(self, game_id: str, seed: bytes) -> bytes:
        """Store a new game's seed; if the game already has one, that one wins and is
        returned (two replicas opening the same game at once agree on one seed)."""
        try:
            await self._kv.create(game_id, self._sealer.seal(game_id, seed))
        except KeyWrongLastSequenceError:
            existing = await self.get(game_id)
            if existing is None:
                raise
            return existing
        return seed

    async def forget(self, game_id: str) -> None:
        """Drop a seed once it is revealed (it is public on the DICE stream then)."""
        await self._kv.purge(game_id)
