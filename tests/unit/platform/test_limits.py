"""Every request field has a bound, the same in the code, the protos and docs/security.md,
and the edge checker refuses anything over it by naming the field and the limit."""

from __future__ import annotations

import re
from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import FieldDescriptor

from boulevard.api.v1 import dice_pb2, engine_pb2, ledger_pb2, lords_of_vegas_pb2
from boulevard.api.v1 import matchmaking_pb2 as mm_pb2
from boulevard.platform.edge import Undecodable, checked, guarded_deserializer
from boulevard.platform.errors import InvalidArgument, clip, status_of
from boulevard.platform.limits import (
    LIMITS,
    bounded_fields,
    check_message,
    game_action_fields,
    limits_table,
)

ROOT = Path(__file__).resolve().parents[3]
SERVICES = (engine_pb2, mm_pb2, dice_pb2, ledger_pb2)


def request_types() -> list[object]:
    return [
        method.input_type
        for module in SERVICES
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    ]


def every_bounded_field() -> dict[str, FieldDescriptor]:
    return {f.full_name: f for d in request_types() for f in bounded_fields(d)}  # type: ignore[arg-type]


def test_every_string_and_repeated_field_of_every_request_has_a_limit() -> None:
    """A game's action fields are covered by the game-action bounds; every other field
    needs its own row."""
    missing = sorted(set(every_bounded_field()) - set(LIMITS) - game_action_fields())
    assert not missing, f"add these to boulevard.platform.limits.LIMITS: {missing}"


def test_a_games_action_fields_get_the_game_action_bounds() -> None:
    from boulevard.platform.limits import GAME_ACTION_CHARS, GAME_ACTION_ITEMS, limit_of

    pool = descriptor_pool.Default()
    inside = [pool.FindFieldByName(name) for name in sorted(game_action_fields())]
    assert inside, "no game action has a string or repeated field?"
    for field in inside:
        if field.full_name in LIMITS:
            continue
        expected = GAME_ACTION_ITEMS if field.is_repeated else GAME_ACTION_CHARS
        assert limit_of(field) == expected, field.full_name


def _unit(field: FieldDescriptor) -> str:
    if field.is_repeated:
        return "entries"
    return "bytes" if field.type == FieldDescriptor.TYPE_BYTES else "chars"


def test_each_limit_is_written_beside_its_field_in_the_proto() -> None:
    protos = "\n".join(p.read_text() for p in (ROOT / "protos/boulevard/v1").glob("*.proto"))
    pool = descriptor_pool.Default()
    for name, limit in LIMITS.items():
        try:
            field = pool.FindFieldByName(name)
        except KeyError:
            continue  # a docs/trust.md field another branch adds
        owner = field.containing_type
        if owner.GetOptions().map_entry:
            # Documented on the map field: "keys and values max N chars each".
            assert f"keys and values max {limit.maximum} chars" in protos, name
            continue
        block = re.search(rf"message {owner.name} \{{(.*?)\n\}}", protos, re.S)
        assert block is not None, name
        line = re.search(rf"^.* {field.name} = \d+;.*$", block.group(1), re.M)
        assert line is not None, name
        assert f"max {limit.maximum} {_unit(field)}" in line.group(0), (name, line.group(0))


def docs_rows() -> set[tuple[str, str, str]]:
    text = (ROOT / "docs/security.md").read_text()
    section = text.split("## Limits", 1)[1].split("\n## ", 1)[0]
    rows = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`"):
            rows.add((cells[0].strip("`"), cells[1], cells[2]))
    return rows


def test_docs_security_limits_table_matches_the_code() -> None:
    assert docs_rows() == set(limits_table())


# ---- the checker ----------------------------------------------------------------------------


def test_a_field_at_its_limit_passes_and_one_more_is_refused_by_name() -> None:
    ok = engine_pb2.SubmitActionRequest(game_id="g", idempotency_key="k" * 128)
    check_message(ok)
    with pytest.raises(InvalidArgument) as err:
        check_message(engine_pb2.SubmitActionRequest(game_id="g", idempotency_key="k" * 129))
    assert str(err.value) == (
        "idempotency_key: at most 128 characters (SubmitActionRequest.idempotency_key), got 129"
    )


def test_nested_repeated_and_map_fields_are_checked_with_their_path() -> None:
    seats = [engine_pb2.SeatAssignment(seat=i, player_id=f"p{i}") for i in range(3)]
    seats[2].player_id = "x" * 129
    with pytest.raises(InvalidArgument, match=r"^seats\[2\]\.player_id: at most 128 characters"):
        check_message(engine_pb2.CreateGameRequest(request_id="r", seats=seats))
    many = [engine_pb2.SeatAssignment(seat=i, player_id="p") for i in range(17)]
    with pytest.raises(InvalidArgument, match=r"^seats: at most 16 entries"):
        check_message(engine_pb2.CreateGameRequest(request_id="r", seats=many))
    options = {f"o{i}": "v" for i in range(17)}
    with pytest.raises(InvalidArgument, match=r"^options: at most 16 entries"):
        check_message(engine_pb2.CreateGameRequest(request_id="r", options=options))
    with pytest.raises(InvalidArgument, match=r"^options key: at most 64 characters"):
        check_message(engine_pb2.CreateGameRequest(request_id="r", options={"k" * 65: "v"}))
    with pytest.raises(InvalidArgument, match=r"^options\['turbo'\]: at most 64 characters"):
        check_message(engine_pb2.CreateGameRequest(request_id="r", options={"turbo": "y" * 65}))


def test_an_action_deep_inside_submit_action_is_checked() -> None:
    offer = lords_of_vegas_pb2.LordsOfVegasTradeOffer(give_lots=["A1", "B" * 9])
    action = engine_pb2.Action(
        lords_of_vegas=lords_of_vegas_pb2.LordsOfVegasAction(
            propose_trade=lords_of_vegas_pb2.LordsOfVegasProposeTrade(offer=offer)
        )
    )
    with pytest.raises(InvalidArgument, match=r"give_lots\[1\]: at most 8 characters"):
        check_message(engine_pb2.SubmitActionRequest(game_id="g", action=action))
    offer.ClearField("give_lots")
    offer.give_dice.extend(["A1"] * 49)
    action.lords_of_vegas.propose_trade.offer.CopyFrom(offer)
    with pytest.raises(InvalidArgument, match=r"give_dice: at most 48 entries"):
        check_message(engine_pb2.SubmitActionRequest(game_id="g", action=action))


def test_undecodable_bytes_become_invalid_argument_not_an_exception_in_grpc() -> None:
    decode = guarded_deserializer(engine_pb2.GetGameRequest.FromString)
    garbage = decode(b"\xff\xff\xff\xff")
    assert isinstance(garbage, Undecodable)
    bad_utf8 = decode(b"\x0a\x02\xc3\x28")  # field 1 (game_id), invalid UTF-8
    assert isinstance(bad_utf8, Undecodable)
    with pytest.raises(InvalidArgument, match="not a valid message"):
        checked(garbage)
    assert checked(decode(b"\x0a\x01g")) == engine_pb2.GetGameRequest(game_id="g")


# ---- error messages -------------------------------------------------------------------------


def test_error_messages_quote_at_most_64_characters_of_input() -> None:
    huge = "x" * 1_000_000
    code, message = status_of(InvalidArgument(f"malformed game id {huge!r}")) or (None, "")
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert message == f"malformed game id '{'x' * 64}…'"
    assert len(clip("y" * 10_000)) == 512
    assert clip("unknown game 'turbo'") == "unknown game 'turbo'"
