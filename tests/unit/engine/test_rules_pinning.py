"""Every game pins its rules (docs/architecture.md, "Rules versions"): the engine records the
newest version in GameCreated, decides and folds the game with that version for its whole
life, and refuses — by name — a game whose version it does not host; stored envelopes carry
their schema, and a snapshot of another schema is not used."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from boulevard.api.v1 import events_pb2
from boulevard.eventlog.store import InMemoryEventStore
from boulevard.games import REGISTRY
from boulevard.games.upcasting import SCHEMA_VERSION
from boulevard.games.versions import UnknownRulesVersion, newest, rules_for
from boulevard.platform.errors import FailedPrecondition
from services.engine import commands as commands_module
from services.engine import sessions as sessions_module
from services.engine.chain import open_snapshot, seal_snapshot
from services.engine.chance import LocalChance
from services.engine.engine import Engine, MemoryKeyValue
from tests.unit.engine.test_engine_core import make_engine, play_to_end, seats


async def test_a_new_game_records_the_newest_rules_and_every_envelope_its_schema() -> None:
    store = InMemoryEventStore()
    engine = make_engine(store)
    created = await engine.create_game("r1", "las_vegas", seats(2))
    session = await engine.load(created.game_id)
    assert session.created.rules_version == newest("las_vegas").pin
    assert session.game is newest("las_vegas").definition
    for recorded in await store.read(created.game_id):
        assert events_pb2.EventEnvelope.FromString(recorded.data).schema_version == SCHEMA_VERSION


async def test_a_game_of_rules_this_engine_does_not_host_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = InMemoryEventStore()
    # An engine of a later release records a version this one does not have.
    later = dataclasses.replace(newest("las_vegas"), number=99, sha256="ab" * 32)
    monkeypatch.setattr(commands_module, "for_release", lambda game, release: later)
    monkeypatch.setattr(sessions_module, "rules_for", lambda game, pin: later)
    created = await make_engine(store).create_game("r2", "las_vegas", seats(2))
    monkeypatch.undo()
    with pytest.raises(
        FailedPrecondition, match=r"las_vegas rules version 99:(ab){32} is not hosted"
    ):
        await make_engine(store).load(created.game_id)


async def test_a_sealed_snapshot_carries_the_rules_and_another_schemas_is_not_used() -> None:
    store = InMemoryEventStore()
    engine = make_engine(store, snapshot_every=10)
    created = await engine.create_game("r3", "las_vegas", seats(2))
    await play_to_end(engine, created.game_id, created.tokens, seed=1)
    raw = await engine.snapshots.get(created.game_id)
    assert raw is not None
    opened = open_snapshot(engine.receipt_key, raw)
    assert opened is not None
    body = json.loads(opened[0])
    assert body["schema_version"] == SCHEMA_VERSION
    assert body["created"]["rules_version"] == newest("las_vegas").pin
    # The same snapshot claiming an older schema: rebuilt from the log, not counted forged.
    body["schema_version"] = 0
    body["finished"] = None  # were it used, the game would not be over
    stale = seal_snapshot(engine.receipt_key, json.dumps(body).encode())
    await engine.snapshots.put(created.game_id, stale)
    engine._sessions.clear()  # as after a restart: the next load reads the snapshot
    session = await engine.load(created.game_id)
    assert session.finished is not None and engine.forged_snapshots == 0
    assert session.created.rules_version == newest("las_vegas").pin


def test_every_game_is_hosted_at_its_newest_version() -> None:
    for name in REGISTRY:
        assert newest(name).definition.name == name


async def test_during_a_rolling_upgrade_new_games_can_keep_the_old_releases_rules() -> None:
    # engine_new_games_rules_release: the new engines create games an old engine (which
    # decides every game with its own rules) may still serve.
    kept = Engine(
        InMemoryEventStore(),
        LocalChance(random.Random(1)),
        MemoryKeyValue(),
        b"k" * 32,
        rules_release="1",
    )
    created = await kept.create_game("r4", "long_shot", seats(3))
    session = await kept.load(created.game_id)
    assert session.created.rules_version == rules_for("long_shot", "").pin  # version 1
    assert session.game is rules_for("long_shot", "").definition
    newest_engine = make_engine()
    created = await newest_engine.create_game("r5", "long_shot", seats(3))
    assert (await newest_engine.load(created.game_id)).created.rules_version == newest(
        "long_shot"
    ).pin


def test_an_unknown_release_to_keep_fails_the_start() -> None:
    with pytest.raises(UnknownRulesVersion, match="no release '9'"):
        Engine(
            InMemoryEventStore(),
            LocalChance(random.Random(1)),
            MemoryKeyValue(),
            b"k" * 32,
            rules_release="9",
        )
