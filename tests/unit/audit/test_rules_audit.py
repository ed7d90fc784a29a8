"""`audit game` re-decides with the rules the log names (audit/rules.py): a log naming a
version this auditor does not host fails at version 1, naming it, and is never re-decided
with other rules; a log from before pinning is audited under version 1."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from boulevard.audit.game_log import audit_game_log
from boulevard.games import REGISTRY
from boulevard.games.codec import Codec
from boulevard.games.upcasting import canonical
from boulevard.games.versions import newest
from tests.unit.audit.test_game_log import envelopes, fails_at, game_id_of, honest_game, rechain

CODEC = Codec(REGISTRY["las_vegas"].event_types)


@pytest.fixture(scope="module")
def game() -> Any:
    return asyncio.run(honest_game("las_vegas", 2, seed=5))


def with_created(log: list[bytes], rules_version: str | None, schema: int) -> list[bytes]:
    envs = envelopes(log)
    plain = CODEC.encode(CODEC.loads(envs[0].payload))
    if rules_version is None:
        del plain["rules_version"]
    else:
        plain["rules_version"] = rules_version
    envs[0].payload = canonical(plain)
    envs[0].schema_version = schema
    return rechain(envs)


def test_an_honest_game_is_audited_under_the_version_it_names(game: Any) -> None:
    log, _, _ = game
    report = audit_game_log(game_id_of(log), log)
    assert report.rules_version == newest("las_vegas").pin


def test_a_version_this_auditor_does_not_host_fails_naming_it(game: Any) -> None:
    log, _, _ = game
    later = "7:" + "ab" * 32
    failed = fails_at(with_created(log, later, 1), 1, "not hosted")
    assert later in failed.message and "releases.json" in failed.message
    other_hash = "1:" + "cd" * 32
    fails_at(with_created(log, other_hash, 1), 1, "cd" * 32)


def test_a_game_from_before_pinning_is_audited_under_version_1(game: Any) -> None:
    log, _, _ = game
    report = audit_game_log(game_id_of(log), with_created(log, None, 0))
    assert report.rules_version.startswith("1:") and report.finished
