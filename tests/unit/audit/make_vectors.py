"""Write docs/auditing-vectors.json from the reference implementation.

    .venv/bin/python -m tests.unit.audit.make_vectors > docs/auditing-vectors.json

Every value is deterministic (Ed25519 signatures are, RFC 8032), so an auditor's own
implementation must reproduce each byte.
"""

from __future__ import annotations

import json
from typing import Any

from boulevard.api.v1 import events_pb2
from boulevard.audit.signing import (
    ZERO_HASH,
    SigningKey,
    chain_hash,
    command_signing_bytes,
    receipt_signing_bytes,
)

PLAYER_SEED = bytes(range(32))
ENGINE_SEED = bytes(range(32, 64))


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
    }


if __name__ == "__main__":
    print(json.dumps(vectors(), indent=1))
