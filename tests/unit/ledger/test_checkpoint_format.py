"""The ledger checkpoint's binary forms and settings (no server needed)."""

from __future__ import annotations

import re

import pytest

from services.ledger import checkpoint as cp
from services.ledger.settings import LedgerSettings


def test_checkpoint_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        LedgerSettings(ledger_checkpoint_every=-1)
    with pytest.raises(ValueError, match="pattern"):
        LedgerSettings(ledger_checkpoint_bucket="a.b")
    assert re.fullmatch(r"[A-Za-z0-9_-]+", LedgerSettings().ledger_checkpoint_bucket)


def test_entry_chunks_round_trip_and_refuse_garbage() -> None:
    leaves = bytes(range(32)) * 3
    blob = cp.encode_entries(leaves, [5, 9, 12], ["g-1", "g-2", "g-1"], [1, 1, 2])
    records = cp.decode_entries(blob)
    assert records.leaves == leaves and list(records.stream_seqs) == [5, 9, 12]
    assert records.game_ids == ["g-1", "g-2", "g-1"] and list(records.versions) == [1, 1, 2]
    assert len(cp.decode_entries(cp.encode_entries(b"", [], [], []))) == 0
    for bad in (b"", b"XXXX\x01\x00\x00\x00", blob[:40], blob[:-3]):
        with pytest.raises(cp.CheckpointRejected):
            cp.decode_entries(bad)
    with pytest.raises(ValueError, match="one leaf hash"):
        cp.encode_entries(leaves, [1, 2], ["g", "g", "g"], [1, 2, 3])


def test_blobs_are_framed_in_parts_and_leftover_parts_are_ignored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cp, "PART", 10)
    blob = bytes(range(95))
    parts = cp._frame(blob)
    assert len(parts) == 11 and all(len(p) <= 10 for p in parts)
    stored = [*parts, b"left over from a longer blob"]
    assert cp._unframe("k", lambda i: stored[i] if i < len(stored) else None) == blob
    with pytest.raises(cp.CheckpointRejected, match="part 3"):
        cp._unframe("k", lambda i: parts[i] if i < 3 else None)
    with pytest.raises(cp.CheckpointRejected, match="not in the bucket"):
        cp._unframe("k", lambda i: None)
