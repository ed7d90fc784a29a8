"""Golden histories (tests/golden/): a finished game of every hosted game under every
recorded rules version, as the release that recorded it wrote it (tools/record_golden.py;
the version 1 games by the engine of release 1, commit 3aeded0). Today's code must replay
and audit every one of them: a change that alters how an old game is decided, or how an
old payload reads, fails here — before it meets a real log."""

from __future__ import annotations

import base64
import gzip
from pathlib import Path

import pytest

from boulevard.api.v1 import events_pb2
from boulevard.audit.game_log import audit_game_log
from boulevard.eventlog.store import InMemoryEventStore, NewEvent
from boulevard.games import REGISTRY
from boulevard.games.versions import recorded_versions
from tests.unit.engine.test_engine_core import make_engine

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
CASES = [(game, n) for game in sorted(REGISTRY) for n in sorted(recorded_versions(game))]


def read(game: str, number: int) -> list[bytes]:
    path = GOLDEN / game / f"rules-{number}.log.gz"
    assert path.exists(), (
        f"no golden history of {game} rules {number}: record one with tools/record_golden.py"
    )
    return [base64.b64decode(line) for line in gzip.decompress(path.read_bytes()).split()]


@pytest.mark.parametrize(("game", "number"), CASES, ids=[f"{g}-rules-{n}" for g, n in CASES])
async def test_a_golden_history_replays_and_audits_with_todays_code(game: str, number: int) -> None:
    log = read(game, number)
    first = events_pb2.EventEnvelope.FromString(log[0])
    report = audit_game_log(first.game_id, log, finished=True)
    assert report.finished and report.versions == len(log)
    assert report.rules_version.partition(":")[0] == str(number)
    # The engine folds the same log to the same end, with the rules the log names.
    store = InMemoryEventStore()
    await store.append(
        first.game_id,
        [
            NewEvent(f"golden-{i}", events_pb2.EventEnvelope.FromString(d).type, d)
            for i, d in enumerate(log)
        ],
        0,
    )
    session = await make_engine(store).load(first.game_id)
    assert session.version == len(log) and session.finished is not None
    assert session.created.rules_version in ("", report.rules_version)
    assert session.game.outcome(session.state).finished


def test_the_version_1_histories_are_from_before_pinning() -> None:
    # Written by release 1's engine: no schema version, no rules version.
    for game in REGISTRY:
        first = events_pb2.EventEnvelope.FromString(read(game, 1)[0])
        assert first.schema_version == 0 and b"rules_version" not in first.payload


def test_the_long_shot_version_1_history_does_not_audit_under_version_2(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # It has a re-rolled 0 on the bank's horse, which drew a card under version 1: audited
    # with the newest rules instead of the ones it names, it fails — the pin keeps it valid.
    from boulevard.audit import rules as audit_rules
    from boulevard.audit.game_log import GameAuditFailed
    from boulevard.games.versions import newest

    log = read("long_shot", 1)
    monkeypatch.setattr(audit_rules, "rules_for", lambda game, pin: newest(game))
    with pytest.raises(
        GameAuditFailed, match=r"\(MoveHorses\) gives .*RollResolved.*the log records .*CardDrawn"
    ):
        audit_game_log(events_pb2.EventEnvelope.FromString(log[0]).game_id, log, finished=True)
