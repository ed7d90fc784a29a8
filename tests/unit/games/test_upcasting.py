"""Upcasters (boulevard.games.upcasting): old payloads are read as today's without their
bytes changing; the audit holds each payload to its own schema's canonical form."""

from __future__ import annotations

import pytest

from boulevard.audit.rules import RulesCheckFailed, stored_event
from boulevard.games import REGISTRY
from boulevard.games.base import GameConfig, GameCreated, RulesError
from boulevard.games.codec import Codec
from boulevard.games.upcasting import SCHEMA_VERSION, UPCASTERS, canonical, read_stored, upcast

CODEC = Codec(REGISTRY["las_vegas"].event_types)
CREATED = GameCreated("las_vegas", GameConfig(2), (), "c" * 64, rules_version="1:" + "0" * 64)


def before_pinning() -> bytes:
    """A GameCreated as engines before schema 1 wrote it: no rules_version key."""
    plain = CODEC.encode(CREATED)
    del plain["rules_version"]
    return canonical(plain)


def test_a_game_created_before_pinning_reads_as_version_1() -> None:
    old = before_pinning()
    event, today = stored_event(CODEC, old, 0)
    assert event.rules_version == ""
    assert today == CODEC.dumps(event)
    assert CODEC.load_stored(old, 0) == event


def test_todays_payload_at_todays_schema_is_unchanged() -> None:
    payload = CODEC.dumps(CREATED)
    assert stored_event(CODEC, payload, SCHEMA_VERSION) == (CREATED, payload)


def test_a_payload_claiming_an_older_schema_than_its_shape_fails() -> None:
    # Today's GameCreated labelled schema 0: its rules_version predates the field.
    with pytest.raises(RulesCheckFailed, match="its schema predates the field"):
        stored_event(CODEC, CODEC.dumps(CREATED), 0)


def test_a_payload_of_an_old_schema_lacking_a_field_at_todays_schema_fails() -> None:
    # Labelled schema 1 but written without the field: not canonical at schema 1.
    with pytest.raises(RulesCheckFailed, match="not the canonical JSON"):
        stored_event(CODEC, before_pinning(), SCHEMA_VERSION)


def test_a_schema_from_a_later_release_is_refused() -> None:
    with pytest.raises(RulesError, match="written by a newer release"):
        read_stored(CODEC.dumps(CREATED), SCHEMA_VERSION + 1)


def test_the_chain_is_pure_and_leaves_other_types_alone() -> None:
    plain = {"type": "CasinoBuilt", "x": 1}
    assert upcast(dict(plain), 0) == plain
    assert all(1 <= u.to_schema <= SCHEMA_VERSION and u.why for u in UPCASTERS)


@pytest.mark.parametrize("schema", [0, SCHEMA_VERSION])
def test_a_key_given_twice_or_spaces_fail_at_any_schema(schema: int) -> None:
    old = before_pinning() if schema == 0 else CODEC.dumps(CREATED)
    doubled = old.replace(b'{"config"', b'{"config":{"options":[],"players":9},"config"', 1)
    spaced = old.replace(b",", b", ", 1)
    for payload in (doubled, spaced):
        assert payload != old
        with pytest.raises(RulesCheckFailed, match="canonical"):
            stored_event(CODEC, payload, schema)
