"""Write docs/auditing-vectors.json from the reference implementation.

    .venv/bin/python -m tests.unit.audit.make_vectors > docs/auditing-vectors.json

Every value is deterministic (Ed25519 signatures are, RFC 8032), so an auditor's own
implementation must reproduce each byte.
"""

from __future__ import annotations

import json
from typing import Any

from boulevard.accounting.merkle import MerkleTree
from boulevard.accounting.treehead import TreeHeadSigner
from boulevard.api.v1 import dice_pb2, events_pb2
from boulevard.audit.signing import (
    ZERO_HASH,
    SigningKey,
    chain_hash,
    command_signing_bytes,
    receipt_signing_bytes,
)

PLAYER_SEED = bytes(range(32))
ENGINE_SEED = bytes(range(32, 64))
DICE_SEED = bytes(range(64, 96))


def command_case(name: str, game_id: str, seat: int, version: int, key: str, action: bytes) -> Any:
    signer = SigningKey(PLAYER_SEED)
    message = command_signing_bytes(game_id, seat, version, key, action)
    return {
        "name": name,
        "seed": PLAYER_SEED.hex(),
        "public_key": signer.public_hex,
        "game_id": game_id,
        "seat": seat,
        "expected_version": version,
        "idempotency_key": key,
        "action": action.hex(),
        "signing_bytes": message.hex(),
        "signature": signer.sign(message).hex(),
    }


def chain_case() -> Any:
    """Three envelopes of a tiny log, each naming the previous one's chain hash."""
    payloads = [
        ("GameCreated", b'{"type":"GameCreated"}'),
        ("CommandAccepted", b'{"type":"CommandAccepted"}'),
        ("DicePlaced", b'{"type":"DicePlaced"}'),
    ]
    out, prev = [], ZERO_HASH
    for version, (kind, payload) in enumerate(payloads, start=1):
        env = events_pb2.EventEnvelope(
            event_id=f"e{version}", type=kind, game_id="g-0001", game="las_vegas",
            version=version, time_unix_ms=1_700_000_000_000 + version,
            causation_id="cmd:k1" if version > 1 else "create:g-0001",
            correlation_id="g-0001", payload=payload, prev_hash=prev,
        )  # fmt: skip
        stored = env.SerializeToString()
        out.append({"version": version, "prev_hash": prev.hex(), "stored": stored.hex(),
                    "chain_hash": chain_hash(stored).hex()})  # fmt: skip
        prev = chain_hash(stored)
    return {"name": "three envelopes", "envelopes": out}


def receipt_case(time_unix_ms: int = 0) -> Any:
    """A v1 receipt (untimed) or, with `time_unix_ms`, a v2 one."""
    engine = SigningKey(ENGINE_SEED)
    head = chain_hash(b"example")
    message = receipt_signing_bytes("g-0001", 42, head, time_unix_ms)
    timed = {"time_unix_ms": time_unix_ms} if time_unix_ms else {}
    return {
        "name": "a receipt at version 42" + (" given at a time (v2)" if time_unix_ms else ""),
        **timed,
        "seed": ENGINE_SEED.hex(),
        "public_key": engine.public_hex,
        "key_id": engine.key_id,
        "game_id": "g-0001",
        "version": 42,
        "chain_head": head.hex(),
        "signing_bytes": message.hex(),
        "signature": engine.sign(message).hex(),
    }


def _dice_leaf(**record: Any) -> bytes:
    return dice_pb2.DiceRecord(**record).SerializeToString()


def _dice_head(game_id: str, leaves: list[bytes], signer: TreeHeadSigner) -> dict[str, Any]:
    """The head GameFinished records over `leaves` (its `dice_head` payload field)."""
    tree = MerkleTree()
    for data in leaves:
        tree.append(data)
    sth = signer.sign(
        tree.size, tree.root(), 1_764_590_400_000, log_id=game_id,
        head_type="boulevard.dice.tree_head.v1",
    )  # fmt: skip
    return {
        "key_id": sth.head.key_id,
        "root_hash": sth.head.root_hash.hex(),
        "signature": sth.signature.hex(),
        "timestamp_unix_ms": sth.head.timestamp_unix_ms,
        "tree_size": sth.head.tree_size,
    }


def dice_anchor_cases() -> Any:
    """GameFinished's dice head against a served dice log (docs/auditing.md, "The dice
    anchor"): `ok` says whether the head anchors exactly the leaves before the reveal."""
    gid = "g-0001"
    dice, other = TreeHeadSigner(DICE_SEED), TreeHeadSigner(ENGINE_SEED)
    before = [
        _dice_leaf(opened=dice_pb2.DiceCommitment(game_id=gid, commitment="ab" * 32)),
        _dice_leaf(seeds=dice_pb2.DiceClientSeeds(game_id=gid, client_seeds=["s0", ""])),
        _dice_leaf(outcome=dice_pb2.DiceOutcome(game_id=gid, nonce=0, values=[3], sides=6)),
        _dice_leaf(outcome=dice_pb2.DiceOutcome(game_id=gid, nonce=1, values=[5], sides=6)),
    ]
    reveal = _dice_leaf(revealed=dice_pb2.DiceReveal(game_id=gid, server_seed="cd" * 32))
    rerolled = dice_pb2.DiceOutcome(game_id=gid, nonce=1, values=[6], sides=6)
    changed = [*before[:3], _dice_leaf(outcome=rerolled)]
    extra = _dice_leaf(outcome=dice_pb2.DiceOutcome(game_id=gid, nonce=2, values=[1], sides=6))
    head = _dice_head(gid, before, dice)
    forged = {**head, "signature": _dice_head(gid, before[:3], dice)["signature"]}
    cases = [
        ("the head over the leaves before the reveal", head, [*before, reveal], True),
        ("an outcome changed and the log re-signed", head, [*changed, reveal], False),
        ("an outcome added after the game ended", head, [*before, extra, reveal], False),
        ("a leaf removed", head, [*before[:3], reveal], False),
        ("a signature over another head", forged, [*before, reveal], False),
        ("signed by another key", _dice_head(gid, before, other), [*before, reveal], False),
    ]
    return {
        "game_id": gid,
        "public_key": dice.public_key.hex(),
        "cases": [
            {"name": name, "dice_head": h, "leaves": [x.hex() for x in leaves], "ok": ok}
            for name, h, leaves, ok in cases
        ],
    }


def vectors() -> Any:
    return {
        "doc": "docs/auditing.md",
        "commands": [
            command_case(
                "a Las Vegas PlaceDice", "g-0001", 1, 7, "k1", bytes.fromhex("5a060a0408011003")
            ),
            command_case("any version, unicode key", "match-xyz", 0, 0, "clé-€", b""),
        ],
        "chain": chain_case(),
        "receipts": [receipt_case(), receipt_case(1_764_590_400_123)],
        "dice_anchors": dice_anchor_cases(),
    }


if __name__ == "__main__":
    print(json.dumps(vectors(), indent=1))
