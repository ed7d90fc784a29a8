"""The published test vectors (docs/auditing-vectors.json) hold for the reference code, and
each value follows from the documented byte layout, not only from our functions."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

from boulevard.audit.dice_anchor import anchor_problem
from boulevard.audit.signing import SigningKey, verify
from boulevard.games.base import DiceHeadRef
from boulevard.games.codec import from_plain
from tests.unit.audit.make_vectors import vectors

PATH = Path(__file__).resolve().parents[3] / "docs" / "auditing-vectors.json"


def lp(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b


def test_the_checked_in_vectors_are_what_the_code_computes() -> None:
    assert json.loads(PATH.read_text()) == vectors()


def test_command_bytes_follow_the_documented_layout() -> None:
    for case in json.loads(PATH.read_text())["commands"]:
        by_hand = (
            lp(b"boulevard.game.command.v1")
            + lp(case["game_id"].encode())
            + struct.pack(">I", case["seat"])
            + struct.pack(">Q", case["expected_version"])
            + lp(case["idempotency_key"].encode())
            + lp(bytes.fromhex(case["action"]))
        )
        assert by_hand.hex() == case["signing_bytes"]
        key = SigningKey(bytes.fromhex(case["seed"]))
        assert key.public_hex == case["public_key"]
        assert verify(key.public_key, bytes.fromhex(case["signature"]), by_hand)
        assert not verify(key.public_key, bytes.fromhex(case["signature"]), by_hand + b"\x00")


def test_the_chain_and_receipts_follow_the_documented_layout() -> None:
    data = json.loads(PATH.read_text())
    prev = bytes(32)
    for e in data["chain"]["envelopes"]:
        stored = bytes.fromhex(e["stored"])
        assert bytes.fromhex(e["prev_hash"]) == prev
        assert prev in stored or prev == bytes(32)  # field 11 carries it
        prev = hashlib.sha256(b"boulevard.game.chain.v1\x00" + stored).digest()
        assert prev.hex() == e["chain_hash"]
    assert {"time_unix_ms" in r for r in data["receipts"]} == {True, False}
    for r in data["receipts"]:
        timed = "time_unix_ms" in r  # v2: the time the engine accepted it, signed too
        by_hand = (
            lp(b"boulevard.game.receipt.v2" if timed else b"boulevard.game.receipt.v1")
            + lp(r["game_id"].encode())
            + struct.pack(">Q", r["version"])
            + bytes.fromhex(r["chain_head"])
            + (struct.pack(">q", r["time_unix_ms"]) if timed else b"")
        )
        assert by_hand.hex() == r["signing_bytes"]
        public = bytes.fromhex(r["public_key"])
        assert hashlib.sha256(public).hexdigest() == r["key_id"]
        assert verify(public, bytes.fromhex(r["signature"]), by_hand)


def test_the_dice_anchor_vectors_pass_and_fail_as_they_say() -> None:
    anchors = json.loads(PATH.read_text())["dice_anchors"]
    key = bytes.fromhex(anchors["public_key"])
    keys = {hashlib.sha256(key).hexdigest(): key}
    for case in anchors["cases"]:
        head = from_plain(DiceHeadRef, case["dice_head"])
        leaves = [bytes.fromhex(x) for x in case["leaves"]]
        problem = anchor_problem(anchors["game_id"], head, leaves, keys)
        assert (problem is None) == case["ok"], (case["name"], problem)
