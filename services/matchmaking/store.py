"""Matchmaking's durable state in JetStream KV, updated only by revision (compare-and-set).

Buckets and keys (player ids are base64url-encoded into keys):

- tickets: `t.<ticket_id>` a `Ticket`; `a.<game>.<player>` the id of the player's latest
  ticket for that game (the one-waiting-ticket-per-player-per-game index);
- matches: `m.<match_id>` a `MatchRecord`;
- ratings: `r.<game>.<player>` a `PlayerRating`; `g.<game_id>` a `RatingResult`; `d.<game_id>`
  (`rated`) once every player was moved by it; `feed.legacy_floor` (rating_feed.py).

Every change of a ticket or match record is `update(key, value, last=revision)`: the server
refuses a writer that did not see the latest value (`Conflict`), so a cancel racing the
matcher, two matchmaking replicas, or a recovery racing a slow former can never both win.
"""

from __future__ import annotations

import base64
from typing import TypeVar

from google.protobuf.message import DecodeError, Message
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import BucketNotFoundError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.messaging.poison import poisoned
from boulevard.platform.errors import FailedPrecondition

M = TypeVar("M", bound=Message)

# How often a compare-and-set is tried again after losing a race, before giving up.
CAS_ATTEMPTS = 16


class Conflict(Exception):
    """Someone else changed the key since we read it (or created it first)."""


def player_key(player_id: str) -> str:
    return base64.urlsafe_b64encode(player_id.encode()).rstrip(b"=").decode() or "_"


def ticket_key(ticket_id: str) -> str:
    return f"t.{ticket_id}"


def index_key(game: str, player_id: str) -> str:
    return f"a.{game}.{player_key(player_id)}"


def match_key(match_id: str) -> str:
    return f"m.{match_id}"


def rating_key(game: str, player_id: str) -> str:
    return f"r.{game}.{player_key(player_id)}"


def result_key(game_id: str) -> str:
    return f"g.{game_id}"


def applied_key(game_id: str) -> str:
    """Present (`rated`) once every player of the game was moved by its rating change."""
    return f"d.{game_id}"


async def open_bucket(
    js: JetStreamContext, name: str, replicas: int, ttl: float | None = None
) -> KeyValue:
    try:
        return await js.key_value(name)
    except BucketNotFoundError:
        return await js.create_key_value(
            KeyValueConfig(
                bucket=name, history=1, ttl=ttl, storage=StorageType.FILE, replicas=replicas
            )
        )


class Records:
    """Protobuf records in one KV bucket, read with their revision, written by revision."""

    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    async def get(self, key: str, cls: type[M]) -> tuple[M, int] | None:
        try:
            entry = await self.kv.get(key)
        except KeyNotFoundError:
            return None
        if entry.value is None or entry.revision is None:
            return None
        try:
            return cls.FromString(entry.value), entry.revision
        except DecodeError as exc:
            # Not a record we wrote: a precise answer for the call that met it, and a count.
            poisoned("matchmaking.kv", "undecodable", subject=key, error=exc)
            raise FailedPrecondition(f"the stored record {key!r} is unreadable") from exc

    async def create(self, key: str, value: Message) -> int:
        """Write a key that must not exist yet. (`update(last=0)`, not `kv.create`: that
        one reads the key back after a refusal, to handle deleted keys we never make.)"""
        try:
            revision: int = await self.kv.update(key, value.SerializeToString(), last=0)
        except KeyWrongLastSequenceError as exc:
            raise Conflict(key) from exc
        return revision

    async def update(self, key: str, value: Message, last: int) -> int:
        try:
            revision: int = await self.kv.update(key, value.SerializeToString(), last=last)
        except KeyWrongLastSequenceError as exc:
            raise Conflict(key) from exc
        return revision

    async def get_raw(self, key: str) -> tuple[bytes, int] | None:
        try:
            entry = await self.kv.get(key)
        except KeyNotFoundError:
            return None
        if entry.value is None or entry.revision is None:
            return None
        return entry.value, entry.revision

    async def create_raw(self, key: str, value: bytes) -> int:
        try:
            revision: int = await self.kv.update(key, value, last=0)
        except KeyWrongLastSequenceError as exc:
            raise Conflict(key) from exc
        return revision

    async def update_raw(self, key: str, value: bytes, last: int) -> int:
        try:
            revision: int = await self.kv.update(key, value, last=last)
        except KeyWrongLastSequenceError as exc:
            raise Conflict(key) from exc
        return revision


ACTIVE = (pb.TICKET_STATUS_WAITING, pb.TICKET_STATUS_MATCHED)
FINAL = (pb.TICKET_STATUS_ASSIGNED, pb.TICKET_STATUS_CANCELLED, pb.TICKET_STATUS_EXPIRED)
