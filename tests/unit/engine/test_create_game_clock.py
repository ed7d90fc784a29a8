"""CreateGame asking for the game's default time control (`TimeControl.game_default`), at the
engine's own servicer: the log records the concrete control the default stood for when the
game was made (so a later change of the defaults never changes a running game, and an
auditor needs no table of defaults), GetGame shows it, and a request that makes no sense is
refused before anything is written."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.eventlog.store import InMemoryEventStore
from boulevard.games.clock import ClockKind, default_control
from boulevard.platform.errors import InvalidArgument
from boulevard.platform.identity import OPERATOR, LocalIssuer, TokenVerifier
from services.engine.chance import LocalChance
from services.engine.engine import Engine, MemoryKeyValue, game_id_for
from services.engine.server import EngineServicer
from tests.unit.engine.test_engine_core import KEY, SEAT_KEYS

GAME = "lords_of_vegas"
KINDS = {
    ClockKind.REAL_TIME: events_pb2.CLOCK_KIND_REAL_TIME,
    ClockKind.TURN_BASED: events_pb2.CLOCK_KIND_TURN_BASED,
}


class Index:
    """The games index as the servicer writes it (the real one is a NATS KV bucket,
    exercised in tests/integration/engine/test_games_index.py)."""

    def __init__(self) -> None:
        self.put_ids: list[str] = []

    async def put(self, game_id: str, value: bytes) -> None:
        self.put_ids.append(game_id)


class Context:
    """A call's metadata: the operator's bearer token."""

    def __init__(self, token: str) -> None:
        self.token = token

    def invocation_metadata(self) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.token}")]


def served(tmp_path: Path) -> tuple[EngineServicer, InMemoryEventStore, Context]:
    issuer = LocalIssuer.ensure(tmp_path / "issuer")
    verifier = TokenVerifier(issuer.jwks_path, issuer.issuer, issuer.audience)
    store = InMemoryEventStore()
    engine = Engine(store, LocalChance(random.Random(7)), MemoryKeyValue(), KEY)
    servicer = EngineServicer(engine, store, Index(), verifier)  # type: ignore[arg-type]
    return servicer, store, Context(issuer.mint("op", roles=(OPERATOR,)))


def create_request(time_control: events_pb2.TimeControl) -> engine_pb2.CreateGameRequest:
    return engine_pb2.CreateGameRequest(
        request_id="r1",
        game=GAME,
        seats=[
            engine_pb2.SeatAssignment(seat=i, player_id=f"p{i}", public_key=SEAT_KEYS[i].public_hex)
            for i in range(2)
        ],
        time_control=time_control,
    )


@pytest.mark.parametrize("kind", list(KINDS))
async def test_a_game_default_control_is_recorded_as_the_concrete_control_it_stood_for(
    tmp_path: Path, kind: ClockKind
) -> None:
    servicer, store, context = served(tmp_path)
    asked = events_pb2.TimeControl(kind=KINDS[kind], game_default=True)
    created = await servicer.CreateGame(create_request(asked), context)
    concrete = default_control(GAME, kind)
    session = await servicer.engine.load(created.game_id)
    assert session.created.time_control == concrete
    # In the log itself, as the auditor reads it: amounts, no "default" marker.
    first = events_pb2.EventEnvelope.FromString((await store.read(created.game_id))[0].data)
    recorded = session.codec.loads(first.payload)
    assert recorded.time_control == concrete
    shown = await servicer.GetGame(
        engine_pb2.GetGameRequest(game_id=created.game_id),
        context,
    )
    assert not shown.time_control.game_default
    assert (shown.time_control.base_ms, shown.time_control.per_move_ms) == (
        concrete.base_ms,
        concrete.per_move_ms,
    )
    assert (shown.time_control.increment_ms, shown.time_control.reserve_ms) == (
        concrete.increment_ms,
        concrete.reserve_ms,
    )
    assert [c.seat for c in shown.clocks] == [0, 1]


@pytest.mark.parametrize(
    ("asked", "why"),
    [
        (
            events_pb2.TimeControl(
                kind=events_pb2.CLOCK_KIND_TURN_BASED, game_default=True, per_move_ms=1000
            ),
            "gives no amounts",
        ),
        (events_pb2.TimeControl(game_default=True), "names its kind"),
    ],
)
async def test_a_game_default_that_makes_no_sense_is_refused_before_anything_is_written(
    tmp_path: Path, asked: events_pb2.TimeControl, why: str
) -> None:
    servicer, store, context = served(tmp_path)
    with pytest.raises(InvalidArgument, match=f"time_control: .*{why}"):
        await servicer.CreateGame(create_request(asked), context)
    index: Any = servicer.index
    assert await store.read(game_id_for("op", "r1")) == []  # the id this request would name
    assert index.put_ids == []
