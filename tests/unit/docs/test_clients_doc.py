"""docs/clients.md says what a client in any language must compute and send; these tests
recompute its facts with the server's own code (and, where the page gives a formula, with
that formula written out again here), so the guide cannot drift from the platform."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import struct
from pathlib import Path
from types import ModuleType

import pytest

from boulevard.api.v1 import dice_pb2, engine_pb2, las_vegas_pb2, ledger_pb2
from boulevard.api.v1 import matchmaking_pb2 as mm_pb2
from boulevard.audit.signing import SigningKey, command_signing_bytes, verify
from boulevard.fairness import client_seed_commitment
from boulevard.platform.limits import limits_table
from boulevard.platform.settings import Settings
from services.dice.app import DiceApp
from services.engine.app import EngineApp
from services.engine.engine import game_id_for
from services.ledger.app import LedgerApp
from services.matchmaking.app import MatchmakingApp

ROOT = Path(__file__).resolve().parents[3]
DOC = (ROOT / "docs" / "clients.md").read_text()
SERVICES = {
    "MatchmakingService": (mm_pb2, MatchmakingApp, "matchmaking"),
    "EngineService": (engine_pb2, EngineApp, "engine"),
    "DiceService": (dice_pb2, DiceApp, "dice"),
    "LedgerService": (ledger_pb2, LedgerApp, "ledger"),
}


def section(title: str) -> str:
    return DOC.split(f"\n## {title}", 1)[1].split("\n## ", 1)[0]


def vectors() -> dict[str, str]:
    block = re.search(r"```text\n(.*?)```", section("Test vectors"), re.S)
    assert block is not None
    pairs = (line.split("=", 1) for line in block.group(1).splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def example_client() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "example_client", ROOT / "examples" / "python" / "client.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_operator_game_id_is_the_documented_digest_of_caller_and_request_id() -> None:
    v = vectors()
    sub, request_id = v["operator_sub"], v["create_request_id"]
    written_out = "g" + hashlib.sha256(f"create\0{sub}\0{request_id}".encode()).hexdigest()[:31]
    assert v["operator_game_id"] == written_out == game_id_for(sub, request_id)
    assert len(written_out) == 32
    # Another operator's same request id names another game.
    assert game_id_for(sub + "x", request_id) != written_out


def test_the_seed_commitment_is_lowercase_hex_sha256_of_the_utf8_seed() -> None:
    v = vectors()
    seed = v["client_seed"]
    expected = hashlib.sha256(seed.encode("utf-8")).hexdigest()
    assert v["client_seed_commitment"] == expected == client_seed_commitment(seed)


def _place_dice(seat: int) -> engine_pb2.Action:
    return engine_pb2.Action(
        las_vegas=las_vegas_pb2.LasVegasAction(
            place_dice=las_vegas_pb2.LasVegasPlaceDice(seat=seat, number=4)
        )
    )


def test_the_action_bytes_are_the_canonical_encoding_without_default_fields() -> None:
    v = vectors()
    assert _place_dice(1).SerializeToString(deterministic=True).hex() == v["action_bytes"]
    assert _place_dice(0).SerializeToString(deterministic=True).hex() == v["action_seat0_bytes"]
    assert v["action_seat0_bytes"] in DOC.replace(" ", "")  # the inline example agrees


def test_the_signing_bytes_and_signature_are_what_the_engine_verifies() -> None:
    v = vectors()
    game_id, seat = v["game_id"], int(v["seat"])
    version, key_text = int(v["expected_version"]), v["idempotency_key"]
    action = bytes.fromhex(v["action_bytes"])

    def lp(data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + data

    written_out = b"".join((
        lp(b"boulevard.game.command.v1"), lp(game_id.encode()), struct.pack(">I", seat),
        struct.pack(">Q", version), lp(key_text.encode()), lp(action),
    ))  # fmt: skip
    server = command_signing_bytes(game_id, seat, version, key_text, action)
    assert v["signing_bytes"] == written_out.hex() == server.hex()
    key = SigningKey(bytes.fromhex(v["seat_key_seed"]))
    assert key.public_hex == v["seat_public_key"]
    signature = bytes.fromhex(v["signature"])
    assert key.sign_command(game_id, seat, version, key_text, action) == signature
    assert verify(key.public_key, signature, server)
    # The Python example signs the same bytes.
    assert example_client().command_bytes(game_id, seat, version, key_text, action) == server


def test_the_limits_table_is_the_code_s() -> None:
    rows = set()
    for line in section("Limits").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`") and cells[0].count("`") == 2:
            rows.add((cells[0].strip("`"), cells[1], cells[2]))
    assert rows == set(limits_table())


def test_every_rpc_of_the_four_services_has_its_example() -> None:
    documented: dict[str, set[str]] = {}
    for name in SERVICES:
        text = section("Every RPC, with an example").split(f"### {name}", 1)[1].split("\n### ")[0]
        documented[name] = set(re.findall(r"^\*\*(\w+)\*\*", text, re.M)) | {
            m for pair in re.findall(r"^\*\*(\w+)\*\* / \*\*(\w+)\*\*", text, re.M) for m in pair
        }
    for name, (module, _app, _setting) in SERVICES.items():
        methods = {m.name for m in module.DESCRIPTOR.services_by_name[name].methods}
        assert methods == documented[name], name


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_health_names_and_default_ports_are_the_services(name: str) -> None:
    module, app, setting = SERVICES[name]
    full_name = module.DESCRIPTOR.services_by_name[name].full_name
    assert tuple(app.service_names) == (full_name,)
    assert f'`""`, `{full_name}`' in section("Health")
    port = Settings.model_fields[f"{setting}_port"].default  # not the environment's
    assert f"| `{name}` | 127.0.0.1:{port} | `BOULEVARD_{setting.upper()}_PORT` |" in DOC


def test_the_owner_of_a_game_is_the_documented_rendezvous_score() -> None:
    """ "Several engine replicas": the score written out again from the page's formula is
    the one every Boulevard client routes by, and the highest score owns the game."""
    from boulevard.contract.routing import ranked, score

    text = DOC.split("\n### Several engine replicas", 1)[1].split("\n## ", 1)[0]
    assert 'SHA-256("boulevard/engine-route/v1\\0"' in text

    def documented(replica: str, game_id: str) -> int:
        r, g = replica.encode("utf-8"), game_id.encode("utf-8")
        data = b"boulevard/engine-route/v1\0" + struct.pack(">I", len(r)) + r
        data += struct.pack(">I", len(g)) + g
        return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")

    replicas = ["engine-0.engine-headless:50052", "engine-1.engine-headless:50052"]
    for game_id in ("g55b3d5a1ad102da2037ce3575320c8b", "é", "game-7"):
        for replica in replicas:
            assert documented(replica, game_id) == score(replica, game_id)
        by_score = sorted(replicas, key=lambda r: -documented(r, game_id))
        assert list(ranked(game_id, replicas)) == by_score
        assert list(ranked(game_id, replicas[::-1])) == by_score  # the order given: none
