"""The published test vectors (docs/fairness-vectors.json) hold for the reference
implementation and for a second, independent one written from docs/fairness.md alone."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest

from boulevard import fairness
from boulevard.fairness import GameSeeds, OutcomeStream
from boulevard.games.base import ChanceKind

VECTORS_PATH = Path(__file__).resolve().parents[3] / "docs" / "fairness-vectors.json"
VECTORS: dict[str, Any] = json.loads(VECTORS_PATH.read_text(encoding="utf-8"))
CASES = VECTORS["cases"]


# --- an independent implementation, from the steps in docs/fairness.md -----------------


def doc_combined(client_seeds: list[str]) -> bytes:
    parts = sorted(s.encode("utf-8") for s in client_seeds)
    return hashlib.sha256(b"".join(len(p).to_bytes(4, "big") + p for p in parts)).digest()


def doc_block(seed: bytes, combined: bytes, game_id: str, nonce: int, block: int) -> bytes:
    g = game_id.encode("utf-8")
    msg = combined + len(g).to_bytes(4, "big") + g + nonce.to_bytes(8, "big")
    return hmac.new(seed, msg + block.to_bytes(4, "big"), hashlib.sha256).digest()


class DocStream:
    def __init__(self, seed: bytes, combined: bytes, game_id: str, nonce: int) -> None:
        self.args = (seed, combined, game_id, nonce)
        self.data = b""
        self.offset = 0
        self.block = 0

    def raw(self) -> int:
        if self.offset + 4 > len(self.data):
            self.data += doc_block(*self.args, self.block)
            self.block += 1
        value = int.from_bytes(self.data[self.offset : self.offset + 4], "big")
        self.offset += 4
        return value

    def uniform(self, n: int) -> int:
        limit = 2**32 - (2**32 % n)
        while True:
            x = self.raw()
            if x < limit:
                return x % n


def doc_outcome(case: dict[str, Any], nonce: int, kind: str, count: int, sides: int) -> list[int]:
    seed = bytes.fromhex(case["server_seed"])
    s = DocStream(seed, doc_combined(case["client_seeds"]), case["game_id"], nonce)
    if kind == "roll":
        return [1 + s.uniform(sides) for _ in range(count)]
    a = list(range(count))
    for i in range(count - 1, 0, -1):
        j = s.uniform(i + 1)
        a[i], a[j] = a[j], a[i]
    return a


# --- the checks -----------------------------------------------------------------------------


def test_the_file_names_the_scheme() -> None:
    assert VECTORS["scheme"] == fairness.SCHEME_VERSION


def test_kinds_are_the_games_chance_kinds() -> None:
    assert fairness.ROLL == ChanceKind.ROLL and fairness.SHUFFLE == ChanceKind.SHUFFLE


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_commitment_and_combined_seed(case: dict[str, Any]) -> None:
    seed = bytes.fromhex(case["server_seed"])
    assert fairness.commitment(seed) == case["commitment"]
    assert hashlib.sha256(seed).hexdigest() == case["commitment"]
    assert fairness.combine_client_seeds(case["client_seeds"]).hex() == case["combined_client_seed"]
    assert doc_combined(case["client_seeds"]).hex() == case["combined_client_seed"]
    # seat order does not matter
    reordered = list(reversed(case["client_seeds"]))
    assert fairness.combine_client_seeds(reordered).hex() == case["combined_client_seed"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_blocks(case: dict[str, Any]) -> None:
    seed = bytes.fromhex(case["server_seed"])
    combined = bytes.fromhex(case["combined_client_seed"])
    for b in case["blocks"]:
        args = (combined, case["game_id"], b["nonce"], b["block"])
        assert fairness.block_message(*args).hex() == b["message"]
        assert fairness.block_bytes(seed, *args).hex() == b["hmac"]
        assert doc_block(seed, *args).hex() == b["hmac"]
        if b["block"] < 8:
            blocks = fairness.outcome_blocks(seed, combined, case["game_id"], b["nonce"])
            assert [next(blocks) for _ in range(b["block"] + 1)][-1].hex() == b["hmac"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_outcomes(case: dict[str, Any]) -> None:
    seeds = GameSeeds.of(bytes.fromhex(case["server_seed"]), case["client_seeds"], case["game_id"])
    for o in case["outcomes"]:
        expected = o["values"]
        assert list(seeds.derive(o["nonce"], o["kind"], o["count"], o["sides"])) == expected
        assert doc_outcome(case, o["nonce"], o["kind"], o["count"], o["sides"]) == expected
        stream = seeds.stream(o["nonce"])
        assert [stream.next_raw() for _ in range(8)] == o["first_raw_u32"]
        if o["kind"] == "shuffle":
            assert sorted(expected) == list(range(o["count"]))


@pytest.mark.parametrize("opening", VECTORS["openings"], ids=lambda o: o["name"])
def test_opening(opening: dict[str, Any]) -> None:
    """Commitments are SHA-256 of the UTF-8 seed; a missing or uncommitted seat plays with
    the empty seed; the outcomes follow from the seeds used (independently, from the doc)."""
    seed = bytes.fromhex(opening["server_seed"])
    assert hashlib.sha256(seed).hexdigest() == opening["commitment"]
    commitments, used = [], []
    for seat in opening["seats"]:
        if seat["seed_commitment"]:
            digest = hashlib.sha256(seat["client_seed"].encode("utf-8")).hexdigest()
            assert digest == seat["seed_commitment"]
            assert fairness.client_seed_commitment(seat["client_seed"]) == digest
        commitments.append(seat["seed_commitment"])
        used.append(seat["client_seed"] if seat["revealed"] else "")
    assert used == opening["client_seeds_used"]
    assert doc_combined(used).hex() == opening["combined_client_seed"]
    case = {
        "server_seed": opening["server_seed"],
        "client_seeds": used,
        "game_id": opening["game_id"],
    }
    for o in opening["outcomes"]:
        assert doc_outcome(case, o["nonce"], o["kind"], o["count"], o["sides"]) == o["values"]
    report = fairness.verify_game(
        commitment=opening["commitment"],
        revealed_seed_hex=opening["server_seed"],
        client_seeds=used,
        game_id=opening["game_id"],
        outcomes=[
            fairness.RecordedOutcome(o["nonce"], o["kind"], o["count"], o["sides"],
                                     tuple(o["values"]))
            for o in opening["outcomes"]
        ],
        client_seed_commitments=commitments,
        missing_seats=opening["missing_seats"],
    )  # fmt: skip
    assert report.ok, report.describe()
    assert bool(report.notes) == (
        used != [s["client_seed"] for s in opening["seats"]] or "" in commitments
    )


def test_uniform_draws() -> None:
    case = next(c for c in CASES if c["name"] == VECTORS["uniform"]["case"])
    seed = bytes.fromhex(case["server_seed"])
    combined = bytes.fromhex(case["combined_client_seed"])
    for d in VECTORS["uniform"]["draws"]:
        ours = OutcomeStream(seed, combined, case["game_id"], d["nonce"])
        assert [ours.uniform(d["n"]) for _ in d["results"]] == d["results"]
        assert ours.raw_draws == d["raw_draws_consumed"]
        theirs = DocStream(seed, combined, case["game_id"], d["nonce"])
        assert [theirs.uniform(d["n"]) for _ in d["results"]] == d["results"]


def test_vectors_include_a_rejection_and_a_shuffle() -> None:
    draws = VECTORS["uniform"]["draws"]
    assert any(d["raw_draws_consumed"] > len(d["results"]) for d in draws)
    assert any(o["kind"] == "shuffle" and o["count"] >= 49 for o in CASES[0]["outcomes"])


def test_file_is_what_the_generator_writes() -> None:
    from tests.unit.fairness.make_vectors import build

    assert build() == VECTORS


def test_the_reference_implementation_printed_in_the_doc_matches_the_vectors() -> None:
    doc = (VECTORS_PATH.parent / "fairness.md").read_text(encoding="utf-8")
    section = doc.split("## A reference implementation", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/fairness.md", "exec"), namespace)
    for case in CASES:
        combined = namespace["combined"](case["client_seeds"])
        assert combined.hex() == case["combined_client_seed"]
        for o in case["outcomes"]:
            stream = namespace["Stream"](
                bytes.fromhex(case["server_seed"]), combined, case["game_id"], o["nonce"]
            )
            if o["kind"] == "roll":
                values = namespace["roll"](stream, o["count"], o["sides"])
            else:
                values = namespace["shuffle"](stream, o["count"])
            assert values == o["values"]
