"""The key history auditors pin (issue 25): each new key of a role must be signed by the one
before it, a history must extend the one an auditor kept, and a key the services present
that is not in it fails the audit."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from boulevard.audit.game_log import audit_game_log
from boulevard.audit.keys import KeyHistory, untrusted
from boulevard.audit.signing import SigningKey
from tests.unit.audit.test_game_log import fails_at
from tests.unit.audit.test_operator_seats import BOT_KEY, opened, seats_with_a_bot

OLD, NEW, OTHER = (SigningKey(bytes([n]) * 32) for n in (1, 2, 3))


def test_a_rotation_is_signed_by_the_key_before_it() -> None:
    first = KeyHistory().extended("engine", OLD.public_hex, 1_000, None)
    rotated = first.extended("engine", NEW.public_hex, 2_000, OLD)
    assert rotated.problem() is None and rotated.extends(first)
    assert rotated.keys("engine") == [OLD.public_hex, NEW.public_hex]
    assert KeyHistory.loads(rotated.dumps()) == rotated
    assert rotated.extended("engine", NEW.public_hex, 3_000, None) is rotated  # no change
    with pytest.raises(ValueError, match="must be signed by the current one"):
        first.extended("engine", NEW.public_hex, 2_000, OTHER)


def test_a_key_swapped_in_without_the_old_keys_signature_is_refused() -> None:
    """The operator replaces the engine key with one of its own and signs the handover
    with the new key (it no longer has, or will not use, the old one)."""
    first = KeyHistory().extended("engine", OLD.public_hex, 1_000, None)
    forged = KeyHistory().extended("engine", NEW.public_hex, 1_000, None)
    swapped = KeyHistory([*first.entries, *forged.entries])
    problem = swapped.problem()
    assert problem is not None and "not signed by the key before it" in problem
    edited = dataclasses.replace(first.extended("engine", NEW.public_hex, 2, OLD).entries[1],
                                 since_unix_ms=5)  # fmt: skip
    assert KeyHistory([first.entries[0], edited]).problem() is not None
    # A history the auditor kept, then one that drops or rewrites it, does not extend it.
    assert not forged.extends(first)


def test_a_key_not_in_the_pinned_history_fails() -> None:
    history = KeyHistory().extended("engine", OLD.public_hex, 1, None)
    assert untrusted(history, "engine", OLD.public_hex) is None
    problem = untrusted(history, "engine", OTHER.public_hex)
    assert problem is not None and "not in the pinned key history" in problem
    assert untrusted(history, "ledger", OLD.public_hex) is not None  # roles are apart


def test_bot_seats_must_carry_a_pinned_bot_key() -> None:
    log = asyncio.run(opened(seats_with_a_bot(), reveal=(0, 1)))
    history = KeyHistory().extended("bots", OTHER.public_hex, 1, None)
    fails_at(log, 1, "not the platform's bot key", bot_keys=history.keys("bots"))
    pinned = history.extended("bots", BOT_KEY.public_hex, 2, OTHER)
    assert audit_game_log("m1", log, bot_keys=pinned.keys("bots")).bot_seats == (1,)
