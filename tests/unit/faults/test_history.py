"""The history checker catches each thing it names: a doctored history fails it, the honest
one passes."""

from __future__ import annotations

from dataclasses import replace

from tests.support.history import (
    Acknowledged,
    FinalState,
    GameFinal,
    LedgerSeen,
    Status,
    StoredEvent,
    check,
    state_digest,
)


def honest() -> tuple[list[Acknowledged], FinalState, list[LedgerSeen]]:
    """Two games; in each, every second event moves money; every command acknowledged."""
    games: dict[str, GameFinal] = {}
    acks: list[Acknowledged] = []
    postings: list[tuple[str, int]] = []
    for g in ("g1", "g2"):
        log = tuple(
            StoredEvent(v, f"{g}-e{v}", bytes([v]) * 32, moves_money=v % 2 == 0)
            for v in range(1, 9)
        )
        games[g] = GameFinal(log, 8, b"state-" + g.encode(), 8, b"state-" + g.encode(),
                             Status.FINISHED)  # fmt: skip
        for v in range(1, 9, 2):  # commands of two events each
            acks.append(Acknowledged(g, ((f"{g}-e{v}", v), (f"{g}-e{v + 1}", v + 1)), v + 1,
                                     bytes([v + 1]) * 32))  # fmt: skip
        postings += [(g, v) for v in range(2, 9, 2)]
    return acks, FinalState(games, postings), [LedgerSeen("g1", 2), LedgerSeen("g2", 8)]


def test_the_honest_history_passes() -> None:
    acks, final, seen = honest()
    report = check(acks, final, seen)
    assert report.ok, report.describe()
    assert (report.games, report.acknowledged_events, report.postings) == (2, 16, 8)


def test_a_lost_acknowledged_move_is_caught() -> None:
    acks, final, seen = honest()
    g1 = final.games["g1"]
    # The last command's events are gone (a leader that acknowledged and then lost them).
    doctored = replace(g1, log=g1.log[:6], engine_version=6, replay_version=6)
    report = check(acks, replace(final, games={**final.games, "g1": doctored}), seen)
    assert [v.detail for v in report.of("lost")] == [
        "acknowledged g1-e7 at version 7",
        "acknowledged g1-e8 at version 8",
    ]
    assert report.of("receipt_mismatch")  # the receipt for 8 names a head not held
    assert report.of("unexplained_posting")  # the ledger posted version 8, no longer there


def test_an_acknowledged_move_stored_at_another_version_is_caught() -> None:
    acks, final, _ = honest()
    g2 = final.games["g2"]
    swapped = (*g2.log[:2], replace(g2.log[3], version=3), replace(g2.log[2], version=4),
               *g2.log[4:])  # fmt: skip
    report = check(acks, replace(final, games={**final.games, "g2": replace(g2, log=swapped)}))
    assert {v.detail for v in report.of("moved")} == {
        "g2-e3 acknowledged at 3, stored at [4]",
        "g2-e4 acknowledged at 4, stored at [3]",
    }


def test_a_duplicated_posting_is_caught() -> None:
    acks, final, seen = honest()
    report = check(acks, replace(final, postings=[*final.postings, ("g2", 4)]), seen)
    assert [(v.kind, v.game_id, v.detail) for v in report.violations] == [
        ("duplicated_posting", "g2", "version 4 posted 2 times")
    ]


def test_an_unposted_transfer_and_a_lost_entry_a_client_saw_are_caught() -> None:
    acks, final, seen = honest()
    report = check(acks, replace(final, postings=[p for p in final.postings if p != ("g1", 2)]),
                   seen)  # fmt: skip
    assert report.counts == {"unposted": 1, "ledger_seen_lost": 1}


def test_a_divergent_replay_is_caught() -> None:
    acks, final, seen = honest()
    g1 = final.games["g1"]
    other = replace(g1, replay_state=b"other")
    report = check(acks, replace(final, games={**final.games, "g1": other}), seen)
    assert [(v.kind, v.game_id) for v in report.violations] == [("divergent_replay", "g1")]
    behind = replace(g1, replay_version=7)
    report = check(acks, replace(final, games={**final.games, "g1": behind}), seen)
    assert report.of("divergent_replay")[0].detail == "engine at version 8, replay at 7"


def test_two_events_at_one_version_and_one_event_twice_are_caught() -> None:
    acks, final, seen = honest()
    g1 = final.games["g1"]
    twice = replace(g1, log=(*g1.log, StoredEvent(9, "g1-e3")))
    conflict = replace(g1, log=(*g1.log, StoredEvent(8, "g1-intruder")))
    report = check(acks, replace(final, games={**final.games, "g1": twice}), seen)
    assert report.of("duplicated_event")[0].detail == "g1-e3 at versions [3, 9]"
    report = check(acks, replace(final, games={**final.games, "g1": conflict}), seen)
    assert report.of("version_conflict")[0].detail == "version 8 holds g1-e8 and g1-intruder"


def test_gaps_failed_audits_and_stuck_games_are_caught() -> None:
    _, final, _ = honest()
    g2 = final.games["g2"]
    holed = replace(g2, log=tuple(e for e in g2.log if e.version != 5), audit_ok=False,
                    audit_summary="FAIL: chain broken at 6", status=Status.STUCK)  # fmt: skip
    report = check([], replace(final, games={**final.games, "g2": holed}))
    assert report.counts == {"gap": 1, "audit_failed": 1, "stuck": 1}
    assert report.of("gap")[0].detail == "versions missing: [5]"
    assert "FAIL: chain broken" in report.describe()


def test_a_playable_unfinished_game_is_fine() -> None:
    acks, final, seen = honest()
    g1 = replace(final.games["g1"], status=Status.PLAYABLE)
    assert check(acks, replace(final, games={**final.games, "g1": g1}), seen).ok


def test_the_state_digest_tells_states_apart() -> None:
    """Equal states give equal digests; a different version, status, seat to act or any
    one view (a seat's or the spectator's) gives another; parts cannot run into each
    other."""
    base = state_digest(8, "active", [1], [b"spectator", b"seat0", b"seat1"])
    assert base == state_digest(8, "active", [1], [b"spectator", b"seat0", b"seat1"])
    others = [
        state_digest(9, "active", [1], [b"spectator", b"seat0", b"seat1"]),
        state_digest(8, "finished", [1], [b"spectator", b"seat0", b"seat1"]),
        state_digest(8, "active", [0], [b"spectator", b"seat0", b"seat1"]),
        state_digest(8, "active", [1], [b"spectator", b"seat0", b"seat1!"]),
        state_digest(8, "active", [1], [b"spectator", b"seat0seat1", b""]),
    ]
    assert len({base, *others}) == len(others) + 1


def test_a_divergent_state_at_the_same_version_is_caught() -> None:
    """The engine and the fold agree on the version but one seat's view differs: caught."""
    acks, final, seen = honest()
    g1 = final.games["g1"]
    engine = state_digest(8, "finished", [], [b"board", b"hand-a", b"hand-b"])
    replay = state_digest(8, "finished", [], [b"board", b"hand-a", b"hand-B"])
    doctored = replace(g1, engine_state=engine, replay_state=replay)
    report = check(acks, replace(final, games={**final.games, "g1": doctored}), seen)
    assert [(v.kind, v.detail) for v in report.violations] == [
        ("divergent_replay", "engine at version 8, replay at 8; states differ")
    ]
