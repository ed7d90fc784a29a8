"""Write docs/fairness-vectors.json from the reference implementation.

    .venv/bin/python -m tests.unit.fairness.make_vectors > docs/fairness-vectors.json

The tests check the file both against `boulevard.fairness` and against an independent
re-implementation written from docs/fairness.md alone (test_vectors.py), so a change of the
scheme cannot slip through by regenerating this file.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from boulevard.fairness import (
    GameSeeds,
    OutcomeStream,
    block_bytes,
    block_message,
    client_seed_commitment,
    combine_client_seeds,
    commitment,
)

CASES: list[dict[str, Any]] = [
    {
        "name": "counting seed, three players",
        "server_seed": bytes(range(32)).hex(),
        "client_seeds": ["alice:7f3a", "bob", ""],
        "game_id": "g-0001",
        "outcomes": [
            ("roll", 1, 6),
            ("roll", 2, 6),
            ("roll", 5, 6),
            ("roll", 3, 10),
            ("roll", 1, 1),
            ("roll", 4, 3_000_000_000),
            ("shuffle", 52, 0),
            ("roll", 20, 6),
            ("shuffle", 49, 0),
            ("shuffle", 1, 0),
            ("roll", 1, 4294967296),
        ],
    },
    {
        "name": "hashed seed, UTF-8 client seeds, one player",
        "server_seed": hashlib.sha256(b"boulevard test vector 2").hexdigest(),
        "client_seeds": ["żółw🎲"],
        "game_id": "las_vegas/2026-11-29/Ω",
        "outcomes": [("roll", 6, 6), ("roll", 8, 6), ("shuffle", 10, 0), ("roll", 1, 37)],
    },
    {
        "name": "no client seeds",
        "server_seed": hashlib.sha256(b"boulevard test vector 3").hexdigest(),
        "client_seeds": [],
        "game_id": "x",
        "outcomes": [("roll", 2, 6)],
    },
]


OPENINGS: list[dict[str, Any]] = [
    {
        "name": "every seat revealed",
        "committed": ["alice:7f3a", "bob", "żółw🎲"],
        "missing_seats": [],
    },
    {
        "name": "seat 1 did not reveal by the deadline",
        "committed": ["alice:7f3a", "bob", "żółw🎲"],
        "missing_seats": [1],
    },
    {
        "name": "seat 2 committed to no seed (empty commitment)",
        "committed": ["alice:7f3a", "bob", None],
        "missing_seats": [],
    },
]


def build_openings() -> list[dict[str, Any]]:
    """The opening (docs/fairness.md, "The opening"): what each seat commits to, which seeds
    the derivation then uses, and the first outcomes they give."""
    server_seed = hashlib.sha256(b"boulevard opening vector").digest()
    game_id = "g-opening"
    out = []
    for case in OPENINGS:
        seats = []
        used = []
        for seat, seed in enumerate(case["committed"]):
            missing = seat in case["missing_seats"]
            seats.append(
                {
                    "seat": seat,
                    "client_seed": seed or "",
                    "seed_commitment": client_seed_commitment(seed) if seed is not None else "",
                    "revealed": seed is not None and not missing,
                }
            )
            used.append("" if missing or seed is None else seed)
        seeds = GameSeeds.of(server_seed, used, game_id)
        out.append(
            {
                "name": case["name"],
                "server_seed": server_seed.hex(),
                "commitment": commitment(server_seed),
                "game_id": game_id,
                "seats": seats,
                "missing_seats": case["missing_seats"],
                "client_seeds_used": used,
                "combined_client_seed": combine_client_seeds(used).hex(),
                "outcomes": [
                    {"nonce": 0, "kind": "shuffle", "count": 10, "sides": 0,
                     "values": list(seeds.shuffle(0, 10))},
                    {"nonce": 1, "kind": "roll", "count": 2, "sides": 6,
                     "values": list(seeds.roll(1, 2, 6))},
                ],
            }
        )  # fmt: skip
    return out


def build() -> dict[str, Any]:
    cases = []
    for case in CASES:
        seed = bytes.fromhex(case["server_seed"])
        combined = combine_client_seeds(case["client_seeds"])
        seeds = GameSeeds.of(seed, case["client_seeds"], case["game_id"])
        outcomes = []
        for nonce, (kind, count, sides) in enumerate(case["outcomes"]):
            stream = seeds.stream(nonce)
            raws = [stream.next_raw() for _ in range(8)]
            outcomes.append(
                {
                    "nonce": nonce,
                    "kind": kind,
                    "count": count,
                    "sides": sides,
                    "values": list(seeds.derive(nonce, kind, count, sides)),
                    "first_raw_u32": raws,
                }
            )
        cases.append(
            {
                "name": case["name"],
                "server_seed": case["server_seed"],
                "client_seeds": case["client_seeds"],
                "game_id": case["game_id"],
                "commitment": commitment(seed),
                "combined_client_seed": combined.hex(),
                "blocks": [
                    {
                        "nonce": nonce,
                        "block": block,
                        "message": block_message(combined, case["game_id"], nonce, block).hex(),
                        "hmac": block_bytes(seed, combined, case["game_id"], nonce, block).hex(),
                    }
                    for nonce, block in ((0, 0), (0, 1), (1, 0), (2**40 + 5, 3))
                ],
                "outcomes": outcomes,
            }
        )
    uniform = []
    seed0 = bytes.fromhex(CASES[0]["server_seed"])
    combined0 = combine_client_seeds(CASES[0]["client_seeds"])
    for n in (6, 10, 3_000_000_000):
        stream = OutcomeStream(seed0, combined0, CASES[0]["game_id"], 7)
        draws = [stream.uniform(n) for _ in range(12)]
        uniform.append(
            {
                "nonce": 7,
                "n": n,
                "results": draws,
                "raw_draws_consumed": stream.raw_draws,
            }
        )
    return {
        "scheme": "boulevard-fairness-v1",
        "doc": "docs/fairness.md",
        "cases": cases,
        "openings": build_openings(),
        "uniform": {
            "case": CASES[0]["name"],
            "note": "12 successive uniform(n) draws from one stream, with the number of "
            "4-byte raw values read (rejections included)",
            "draws": uniform,
        },
    }


if __name__ == "__main__":
    print(json.dumps(build(), indent=1, ensure_ascii=False))
