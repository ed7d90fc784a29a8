"""`chance.py:owed`, the pure half of the pipeline's chance step: what a game owes before a
player can act, decided from the session and the time alone."""

from __future__ import annotations

from boulevard.games.base import ClientSeedsFixed
from services.engine.chance import AwaitSeeds, FixSeeds, Resolve, owed
from services.engine.sessions import Session
from tests.unit.engine.test_engine_core import make_engine, play_to_end, seats
from tests.unit.engine.test_opening import SEEDS, Clock, committed_seats
from tests.unit.engine.test_opening import make_engine as make_opening_engine


async def test_seeds_are_awaited_until_the_deadline_then_fixed_without_the_missing() -> None:
    clock = Clock()
    engine = make_opening_engine(clock)
    await engine.create_game("m", "las_vegas", committed_seats(), match_id="m")
    session = await engine.load("m")
    deadline = session.created.reveal_deadline_unix_ms
    assert owed(session, deadline - 1) == AwaitSeeds(deadline)
    assert owed(session, deadline) == FixSeeds(ClientSeedsFixed(("", ""), (0, 1)))
    revealed = session.fork()
    revealed.client_seeds = {0: SEEDS[0], 1: SEEDS[1]}
    # Every seat revealed: fixed at once, whatever the time.
    assert owed(revealed, 0) == FixSeeds(ClientSeedsFixed(tuple(SEEDS), ()))


async def test_a_chance_is_named_by_the_version_it_answers_and_a_finished_game_owes_nothing() -> (
    None
):
    engine = make_engine()
    created = await engine.create_game("m", "las_vegas", seats(2), match_id="m")
    session = await engine.load("m")  # settled: its opening roll is resolved already
    assert owed(session, 0) is None
    before = Session.new("m", session.created)
    for envelope in sorted(session.recent.values(), key=lambda e: e.version):
        if envelope.type == "ChanceResolved":
            break
        before.apply_envelope(envelope)
    due = owed(before, 0)
    assert isinstance(due, Resolve) and due.request_id == f"m:{before.version}"
    finished = await play_to_end(engine, "m", created.tokens, seed=1)
    assert finished.finished is not None and owed(finished, 0) is None
