"""What a ticket request must be: player ids, ticket ids, and CreateTicket's fields."""

from __future__ import annotations

from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.audit.signing import parse_public_key
from boulevard.contract.clocks import time_control_from_proto, time_control_to_proto
from boulevard.contract.players import BOT_PREFIX
from boulevard.fairness import is_commitment
from boulevard.games import REGISTRY
from boulevard.games.clock import TimeControl
from boulevard.platform.errors import InvalidArgument
from boulevard.platform.wire import sent_unknown_field

MAX_PLAYER_ID = 128
MAX_REQUEST_ID = 128
SUPERSEDED = "superseded by a concurrent request for the same player and game"


def same_request(ticket: pb.Ticket, req: pb.CreateTicketRequest) -> pb.Ticket:
    if ticket.game != req.game:
        raise InvalidArgument(
            f"request id {req.request_id!r} was already used for a ticket for {ticket.game}"
        )
    if control_key(ticket) != control_key(req):
        raise InvalidArgument(
            f"request id {req.request_id!r} was already used for a ticket with another time control"
        )
    return ticket


def resolved_control(message: pb.Ticket | pb.CreateTicketRequest) -> TimeControl | None:
    """The concrete control a ticket or request asks for: a game default resolved to its
    game's control of that kind; None for no clock. ClockError for one that makes no sense."""
    if not message.HasField("time_control"):
        return None
    return time_control_from_proto(message.time_control, message.game)


def control_key(message: pb.Ticket | pb.CreateTicketRequest) -> bytes:
    """A ticket's time control as a queue key: equal controls (a game default and the
    concrete control it resolves to included), equal keys; b"" for none."""
    control = resolved_control(message)
    if control is None:
        return b""
    return time_control_to_proto(control).SerializeToString(deterministic=True)


def check_player_id(player_id: str) -> None:
    if not player_id:
        raise InvalidArgument("player_id is required")
    if len(player_id) > MAX_PLAYER_ID or not player_id.isprintable():
        raise InvalidArgument(f"player_id must be 1-{MAX_PLAYER_ID} printable characters")


def check_ticket_id(ticket_id: str) -> None:
    if not ticket_id:
        raise InvalidArgument("ticket_id is required")
    if len(ticket_id) > 64 or not all(c.isascii() and (c.isalnum()) for c in ticket_id):
        raise InvalidArgument(f"malformed ticket_id {ticket_id[:70]!r}")


def check_match_id(match_id: str) -> None:
    """A match id is also its game's id: a NATS subject token (and KV key part)."""
    if not match_id:
        raise InvalidArgument("match_id is required")
    if len(match_id) > 64 or not all(c.isascii() and (c.isalnum() or c in "_-") for c in match_id):
        raise InvalidArgument(f"malformed match_id {match_id[:70]!r}")


def validate_create(req: pb.CreateTicketRequest) -> tuple[int, int]:
    """The seat range a valid request asks for; InvalidArgument names what is wrong."""
    check_player_id(req.player_id)
    if req.player_id.startswith(BOT_PREFIX):
        raise InvalidArgument(f"player ids starting with {BOT_PREFIX!r} are reserved for bots")
    if len(req.request_id) > MAX_REQUEST_ID:
        raise InvalidArgument(f"request_id must be at most {MAX_REQUEST_ID} characters")
    if sent_unknown_field(req, 6):
        raise InvalidArgument(
            "send client_seed_commitment (SHA-256 of your seed), not client_seed: the seed is "
            "revealed to the engine once the game exists"
        )
    if req.client_seed_commitment and not is_commitment(req.client_seed_commitment):
        raise InvalidArgument(
            "client_seed_commitment must be 64 lowercase hex digits (SHA-256 of your seed)"
        )
    try:
        parse_public_key(req.public_key)
    except ValueError as err:
        # Without a key the seat could never sign a move; refuse now, not at the engine.
        raise InvalidArgument(f"public_key: {err}") from None
    if not req.game:
        raise InvalidArgument(f"game is required; known: {', '.join(sorted(REGISTRY))}")
    game = REGISTRY.get(req.game)
    if game is None:
        raise InvalidArgument(f"unknown game {req.game!r}; known: {', '.join(sorted(REGISTRY))}")
    try:
        resolved_control(req)
    except ValueError as err:
        raise InvalidArgument(f"time_control: {err}") from None
    lo = req.min_seats or game.min_players
    hi = req.max_seats or game.max_players
    if lo > hi:
        raise InvalidArgument(f"min_seats {lo} is more than max_seats {hi}")
    if lo < game.min_players or hi > game.max_players:
        raise InvalidArgument(
            f"{game.title} seats {game.min_players}-{game.max_players} players; asked for {lo}-{hi}"
        )
    return lo, hi
