"""An idempotency key names one seat's command, not a slot any seat may fill.

The engine answers a command whose key it has seen with the recorded result (a retry must
not run twice). It did so whoever sent it: another seat reusing a key got the first seat's
result as if its own move had been applied, so an opponent who can predict a seat's keys
(`turn-5`) could make that seat's client believe its moves landed. Another seat's command
under a used key is now ALREADY_EXISTS; the seat that used the key still gets the first
result for a retry (and, as docs/clients.md says, for another action under it)."""

from __future__ import annotations

import pytest

from boulevard.games.las_vegas.types import PlaceDice
from boulevard.platform.auth import verify_token
from boulevard.platform.errors import AlreadyExists
from tests.unit.engine.test_engine_core import KEY, first_legal, make_engine, seats, submit


async def test_another_seat_cannot_reuse_a_seats_idempotency_key() -> None:
    engine = make_engine()
    created = await engine.create_game("m", "las_vegas", seats(2), match_id="m")
    session = await engine.load("m")
    seat, command = first_legal(session)
    mover = verify_token(KEY, created.tokens[seat])
    other = verify_token(KEY, created.tokens[1 - seat])
    first = await submit(engine, "m", mover, command, session.version, "turn-1")
    # The other seat signs its own command with the same key: not the first seat's result.
    own = PlaceDice(seat=1 - seat, number=command.number)
    with pytest.raises(AlreadyExists, match="another seat"):
        await submit(engine, "m", other, own, 0, "turn-1")
    # The seat that used the key: its retry gets the recorded result, and so does another
    # action of its own under that key (not applied; docs/clients.md); nothing was appended.
    assert await submit(engine, "m", mover, command, 0, "turn-1") == first
    other_number = next(n for n in range(1, 7) if n != command.number)
    assert await submit(engine, "m", mover, PlaceDice(seat, other_number), 0, "turn-1") == first
    assert (await engine.load("m")).version == first.version
