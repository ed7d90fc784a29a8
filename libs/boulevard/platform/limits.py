"""The bound on every string, bytes and repeated field a client may send, in one table, and
the one checker the gRPC edge runs on every request before a servicer sees it.

Keys are proto field full names (`boulevard.v1.<Message>.<field>`); a string's bound is in
characters, a bytes field's in bytes, a repeated field's or a map's in entries. The same
numbers are in the proto comments ("max N") and in docs/security.md, "Limits"; unit tests
keep the three in step and check that every string and repeated field reachable from a
request of the four services has its row here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from boulevard.platform.errors import InvalidArgument

# One place for the sizes several fields share.
ID = 64  # game ids, ticket ids, registry names, ledger books: short machine names
KEY = 128  # idempotency keys and request ids chosen by clients
PLAYER_ID = 128
CLIENT_SEED = 256
TOKEN = 4096  # room for a signed JWT, far below what would slow a parser
PAGE_TOKEN = 128
LOT = 8  # printed lot ids are 2-3 characters ("C12")
LOTS = 48  # a Lords of Vegas board has 48 lots
SEATS = 16
OPTIONS = 16
HEX_256 = 64  # a SHA-256 digest or an Ed25519 public key, lowercase hex
SIGNATURE = 64  # a raw Ed25519 signature

# Inside a game's action (`SubmitActionRequest.action`, one message per game, its fields the
# game's own): a game needs no row here — its fields get these bounds unless the table names
# a tighter one. Lots, horses, cards and tiles are short names and short lists.
GAME_ACTION_CHARS = 64
GAME_ACTION_ITEMS = 64

# Used only for a field missing from the table (a test keeps that from happening in our
# protos): generous, but still a bound.
FALLBACK_CHARS = 1024
FALLBACK_ITEMS = 1024

_V1 = "boulevard.v1."


@dataclass(frozen=True, slots=True)
class Limit:
    maximum: int
    note: str = ""  # shown in the docs table
    item: int = 0  # for a repeated string: the bound of each element


LIMITS: Mapping[str, Limit] = {
    _V1 + name: limit
    for name, limit in {
        # engine.proto
        "CreateGameRequest.request_id": Limit(KEY),
        "CreateGameRequest.game": Limit(ID),
        "CreateGameRequest.seats": Limit(SEATS),
        "CreateGameRequest.options": Limit(OPTIONS, "names and values per the game's schema"),
        "CreateGameRequest.OptionsEntry.key": Limit(ID),
        "CreateGameRequest.OptionsEntry.value": Limit(ID),
        "SeatAssignment.player_id": Limit(PLAYER_ID),
        "SeatAssignment.client_seed_commitment": Limit(HEX_256, "docs/trust.md"),
        "SeatAssignment.public_key": Limit(HEX_256, "docs/trust.md"),
        "GetGameRequest.game_id": Limit(ID),
        "GetGameRequest.player_token": Limit(TOKEN),
        "ListGamesRequest.game": Limit(ID),
        "ListGamesRequest.player_id": Limit(PLAYER_ID),
        "ListGamesRequest.page_token": Limit(PAGE_TOKEN),
        "RenewPlayerTokenRequest.game_id": Limit(ID),
        "ListLegalActionsRequest.game_id": Limit(ID),
        "ListLegalActionsRequest.player_token": Limit(TOKEN),
        "SubmitActionRequest.game_id": Limit(ID),
        "SubmitActionRequest.player_token": Limit(TOKEN),
        "SubmitActionRequest.idempotency_key": Limit(KEY),
        "SubmitActionRequest.signature": Limit(SIGNATURE, "bytes; docs/trust.md"),
        "SubmitActionsOpen.game_id": Limit(ID),
        "SubmitActionsOpen.player_token": Limit(TOKEN),
        "WatchGameRequest.game_id": Limit(ID),
        "GetGameLogRequest.game_id": Limit(ID),
        "WatchGameRequest.player_token": Limit(TOKEN),
        "ReclaimSeatRequest.game_id": Limit(ID),
        "ReclaimSeatRequest.player_token": Limit(TOKEN),
        "ReclaimSeatRequest.signature": Limit(SIGNATURE, "bytes; docs/trust.md"),
        "RevealSeedRequest.game_id": Limit(ID),
        "RevealSeedRequest.player_token": Limit(TOKEN),
        "RevealSeedRequest.client_seed": Limit(CLIENT_SEED, "SHA-256 must be the commitment"),
        # lords_of_vegas.proto (inside SubmitActionRequest.action)
        "LordsOfVegasBuildCasino.lot": Limit(LOT),
        "LordsOfVegasBuildCasino.die_from": Limit(LOT),
        "LordsOfVegasSprawlCasino.lot": Limit(LOT),
        "LordsOfVegasSprawlCasino.die_from": Limit(LOT),
        "LordsOfVegasRemodelCasino.lot": Limit(LOT),
        "LordsOfVegasReorganizeCasino.lot": Limit(LOT),
        "LordsOfVegasAssignReorganizedDice.placements": Limit(LOTS),
        "LordsOfVegasDicePlacement.lot": Limit(LOT),
        "LordsOfVegasGamble.lot": Limit(LOT),
        "LordsOfVegasTradeOffer.give_lots": Limit(LOTS, item=LOT),
        "LordsOfVegasTradeOffer.give_dice": Limit(LOTS, item=LOT),
        "LordsOfVegasTradeOffer.take_lots": Limit(LOTS, item=LOT),
        "LordsOfVegasTradeOffer.take_dice": Limit(LOTS, item=LOT),
        "LordsOfVegasPlayAction.lot": Limit(LOT),
        "LordsOfVegasPlayAction.die_from": Limit(LOT),
        # matchmaking.proto
        "CreateTicketRequest.request_id": Limit(KEY),
        "CreateTicketRequest.player_id": Limit(PLAYER_ID),
        "CreateTicketRequest.game": Limit(ID),
        "CreateTicketRequest.client_seed_commitment": Limit(HEX_256, "docs/trust.md"),
        "CreateTicketRequest.public_key": Limit(HEX_256, "docs/trust.md"),
        "GetTicketRequest.ticket_id": Limit(ID),
        "WatchTicketRequest.ticket_id": Limit(ID),
        "CancelTicketRequest.ticket_id": Limit(ID),
        "ListQueuesRequest.game": Limit(ID),
        "GetMatchRequest.match_id": Limit(ID),
        "GetRatingRequest.player_id": Limit(PLAYER_ID),
        "GetRatingRequest.game": Limit(ID),
        "ListTicketsRequest.player_id": Limit(PLAYER_ID),
        "ListTicketsRequest.game": Limit(ID),
        "ListTicketsRequest.page_token": Limit(PAGE_TOKEN),
        # dice.proto
        "GetCommitmentRequest.game_id": Limit(ID),
        "ListOutcomesRequest.game_id": Limit(ID),
        "ListOutcomesRequest.page_token": Limit(PAGE_TOKEN),
        "GetRevealRequest.game_id": Limit(ID),
        "VerifyGameRequest.game_id": Limit(ID),
        "ListLogRecordsRequest.game_id": Limit(ID),
        "GetLogHeadsRequest.game_id": Limit(ID),
        "GetLogInclusionProofRequest.game_id": Limit(ID),
        "GetLogConsistencyProofRequest.game_id": Limit(ID),
        # ledger.proto
        "GetBalancesRequest.book": Limit(ID),
        "GetBalancesRequest.account": Limit(KEY),
        "ListEntriesRequest.game_id": Limit(ID),
        "ListEntriesRequest.account": Limit(KEY),
        "ListEntriesRequest.page_token": Limit(PAGE_TOKEN),
        "ListTreeHeadsRequest.page_token": Limit(PAGE_TOKEN),
        "GetInclusionProofRequest.leaf_indexes": Limit(1000),
        "ReconcileRequest.game_id": Limit(ID),
    }.items()
}


def limit_of(field: FieldDescriptor, *, item: bool = False) -> int:
    """The bound of a string, bytes, repeated or map field (the table's, else the fallback);
    with `item`, the bound of each element of a repeated string."""
    found = LIMITS.get(field.full_name)
    in_game = field.full_name in game_action_fields()
    chars = GAME_ACTION_CHARS if in_game else FALLBACK_CHARS
    if item:
        return found.item if found is not None and found.item else chars
    if found is not None:
        return found.maximum
    if field.is_repeated:
        return GAME_ACTION_ITEMS if in_game else FALLBACK_ITEMS
    return chars


@cache
def game_action_fields() -> frozenset[str]:
    """Full names of the bounded fields inside any game's action message."""
    from boulevard.api.v1 import engine_pb2

    return frozenset(f.full_name for f in bounded_fields(engine_pb2.Action.DESCRIPTOR))


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _is_text(field: FieldDescriptor) -> bool:
    return field.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES)


def _unit(field: FieldDescriptor, item: bool) -> str:
    if field.is_repeated and not item:
        return "entries"
    return "bytes" if field.type == FieldDescriptor.TYPE_BYTES else "characters"


def _too_long(path: str, field: FieldDescriptor, size: int, item: bool = False) -> InvalidArgument:
    name = field.full_name.removeprefix(_V1)
    return InvalidArgument(
        f"{path}: at most {limit_of(field, item=item)} {_unit(field, item)} ({name}), got {size}"
    )


def _check_value(path: str, field: FieldDescriptor, value: Any) -> None:
    if _is_text(field):
        item = field.is_repeated
        if len(value) > limit_of(field, item=item):
            raise _too_long(path, field, len(value), item)
    elif field.type == FieldDescriptor.TYPE_MESSAGE:
        check_message(value, path)


def check_message(message: Message, path: str = "") -> None:
    """Raise InvalidArgument naming the first field (as a path, `seats[2].player_id`) over
    its bound. Only set fields are visited, so an ordinary request costs a few lookups."""
    for field, value in message.ListFields():
        where = f"{path}.{field.name}" if path else field.name
        if _is_map(field):
            if len(value) > limit_of(field):
                raise _too_long(where, field, len(value))
            entry = field.message_type
            assert entry is not None
            key_field = entry.fields_by_name["key"]
            value_field = entry.fields_by_name["value"]
            for key, item in value.items():
                _check_value(f"{where} key", key_field, key)
                _check_value(f"{where}[{str(key)[:16]!r}]", value_field, item)
        elif field.is_repeated:
            if len(value) > limit_of(field):
                raise _too_long(where, field, len(value))
            for i, item in enumerate(value):
                _check_value(f"{where}[{i}]", field, item)
        else:
            _check_value(where, field, value)


def bounded_fields(descriptor: Descriptor) -> Iterator[FieldDescriptor]:
    """Every string, bytes, repeated and map field reachable from a message type (map
    entries included), each once."""
    seen: set[str] = set()

    def walk(d: Descriptor) -> Iterator[FieldDescriptor]:
        if d.full_name in seen:
            return
        seen.add(d.full_name)
        for field in d.fields:
            if _is_text(field) or field.is_repeated:
                yield field
            if field.message_type is not None:
                yield from walk(field.message_type)

    yield from walk(descriptor)


def limits_table() -> list[tuple[str, str, str]]:
    """(field, bound, note) per row of docs/security.md "Limits", in table order."""
    from google.protobuf import descriptor_pool

    # The generated modules register the request types in the default pool.
    from boulevard.api.v1 import dice_pb2, engine_pb2, ledger_pb2, matchmaking_pb2  # noqa: F401

    pool = descriptor_pool.Default()
    rows = []
    for name, limit in LIMITS.items():
        try:
            field: FieldDescriptor | None = pool.FindFieldByName(name)
        except KeyError:
            field = None  # a docs/trust.md field not in this tree's protos yet
        if field is not None and field.is_repeated:
            unit = "entries"
        elif (field is not None and field.type == FieldDescriptor.TYPE_BYTES) or (
            field is None and "bytes" in limit.note
        ):
            unit = "bytes"
        else:
            unit = "chars"
        bound = f"{limit.maximum} {unit}" + (f" of {limit.item} chars" if limit.item else "")
        rows.append((name.removeprefix(_V1), bound, limit.note))
    return rows
