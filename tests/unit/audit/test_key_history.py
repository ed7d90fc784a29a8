"""The key history auditors pin (issue 25): each new key of a role must be signed by the one
before it, a history must extend the one an auditor kept, and a key the services present
that is not in it fails the audit."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from boulevard.audit.game_log import GameAuditFailed, audit_game_log
from boulevard.audit.keys import HistoryRewritten, KeyHistory, trusted_history, untrusted
from boulevard.audit.signing import SigningKey
from tests.unit.audit.test_evidence import receipt_at
from tests.unit.audit.test_game_log import fails_at, game_id_of, lv_game
from tests.unit.audit.test_operator_seats import BOT_KEY, opened, seats_with_a_bot

__all__ = ["lv_game"]  # an honest game, a fixture

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


def test_the_served_history_is_trusted_as_far_as_it_extends_the_pinned_one() -> None:
    """An auditor pinned the engine's first key; the platform later rotates it (signed by
    the pinned key) and serves the longer history: the audit follows the rotation."""
    pinned = KeyHistory().extended("engine", OLD.public_hex, 1_000, None)
    served = pinned.extended("engine", NEW.public_hex, 2_000, OLD)
    assert trusted_history(pinned, served) == served
    assert trusted_history(None, served) == served  # no pin: the platform's word
    assert trusted_history(pinned, None) == pinned  # nothing served: the pin alone
    assert trusted_history(None, None) is None


def test_a_served_history_that_rewrites_the_pinned_one_is_refused() -> None:
    """The dishonest operator's rewrite: it replaces the engine key the auditor pinned with
    one of its own, and chains its later keys properly from there, so the served history
    verifies on its own. Against the pin it does not: refused, naming the entry."""
    pinned = KeyHistory().extended("engine", OLD.public_hex, 1_000, None)
    rewritten = (
        KeyHistory()
        .extended("engine", OTHER.public_hex, 1_000, None)
        .extended("engine", NEW.public_hex, 2_000, OTHER)
    )
    assert rewritten.problem() is None
    with pytest.raises(HistoryRewritten, match="rewrites the pinned one at entry 0"):
        trusted_history(pinned, rewritten)
    # Dropping the pinned entry, or serving a shorter history, is a rewrite too.
    with pytest.raises(HistoryRewritten, match="at entry 1: pinned the engine key"):
        trusted_history(pinned.extended("engine", NEW.public_hex, 2, OLD), pinned)
    # A served history whose handover is unsigned does not verify, pinned or not.
    unsigned = KeyHistory([*pinned.entries, *KeyHistory().extended(
        "engine", NEW.public_hex, 2_000, None).entries])  # fmt: skip
    for pin in (pinned, None):
        with pytest.raises(HistoryRewritten, match="not signed by the key before it"):
            trusted_history(pin, unsigned)


def test_receipts_signed_before_a_rotation_verify_under_the_history(lv_game: Any) -> None:
    """Receipts of the first half of a game were signed with the engine's old key, those
    after with the new one; the engine presents only the new key. Under the history both
    verify; without it the old ones fail, and a key the history lacks fails by name."""
    log, _, _ = lv_game
    gid = game_id_of(log)
    half = len(log) // 2
    receipts = [receipt_at(log, half, OLD), receipt_at(log, len(log), NEW)]
    with pytest.raises(GameAuditFailed, match="neither the engine's key"):
        audit_game_log(gid, log, engine_key=NEW.public_key, receipts=receipts)
    report = audit_game_log(
        gid, log, engine_key=NEW.public_key, receipts=receipts, engine_keys=[OLD.public_key]
    )
    assert report.receipts == 2
    forged = [receipt_at(log, half, OTHER)]
    fails_at(log, half, "neither the engine's key", engine_key=NEW.public_key,
             receipts=forged, engine_keys=[OLD.public_key])  # fmt: skip
