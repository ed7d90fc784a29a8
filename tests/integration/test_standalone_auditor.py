"""The standalone auditor (auditor/pyproject.toml): built from this tree, installed alone
into a fresh venv — no gRPC, no NATS, no services — it audits a recorded game from its
GetGameLog pages, with the rules version the game names, and fails naming a version it does
not host (docs/auditing.md, "Auditing with only the auditor")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from google.protobuf import json_format

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.audit.signing import chain_hash
from boulevard.games.upcasting import canonical
from boulevard.games.versions import rules_for
from tests.unit.audit.test_game_log import rechain
from tests.unit.audit.test_golden_histories import read

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import build_auditor  # noqa: E402


def install_auditor(tmp: Path) -> Path:
    """The bin folder of a fresh venv in `tmp` holding only the auditor wheel built from
    this tree (and its two dependencies, protobuf and cryptography)."""
    wheel = build_auditor.build(tmp / "wheels")
    venv.create(tmp / "venv", with_pip=True)
    pip = tmp / "venv" / "bin" / "pip"
    subprocess.run([str(pip), "install", "--quiet", str(wheel)], check=True, timeout=300)
    return tmp / "venv" / "bin"


@pytest.fixture(scope="module")
def auditor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_auditor(tmp_path_factory.mktemp("auditor"))


def pages_json(log: list[bytes], finished: bool = True) -> str:
    first = events_pb2.EventEnvelope.FromString(log[0])
    response = engine_pb2.GetGameLogResponse(
        game_id=first.game_id,
        game=first.game,
        envelopes=[
            engine_pb2.LoggedEnvelope(version=i, envelope=data, chain_hash=chain_hash(data))
            for i, data in enumerate(log, start=1)
        ],
        last_version=len(log),
        finished=finished,
    )
    return json_format.MessageToJson(response)


# Outside this tree and without PYTHONPATH: only what the venv holds can be imported.
ALONE = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def run(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "boulevard-audit"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=bin_dir,
        env=ALONE,
    )


def test_the_auditor_installs_without_grpc_or_nats(auditor: Path) -> None:
    for module in ("grpc", "nats", "services", "boulevard.platform", "boulevard.client"):
        probe = subprocess.run(
            [str(auditor / "python"), "-c", f"import {module}"],
            capture_output=True,
            timeout=60,
            cwd=auditor,
            env=ALONE,
        )
        assert probe.returncode != 0, f"{module} is importable in the auditor's venv"
    shown = run(auditor, "rules")
    assert shown.returncode == 0, shown.stderr
    assert f"long_shot {rules_for('long_shot', '').pin}" in shown.stdout


@pytest.mark.parametrize(("game", "number"), [("long_shot", 1), ("long_shot", 2), ("las_vegas", 1)])
def test_it_audits_a_recorded_game_with_the_rules_it_names(
    auditor: Path, tmp_path: Path, game: str, number: int
) -> None:
    path = tmp_path / "log.json"
    path.write_text(pages_json(read(game, number)))
    result = run(auditor, "game", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS")
    assert f"rules version {number}:" in result.stdout


def test_it_fails_naming_a_rules_version_it_does_not_host(auditor: Path, tmp_path: Path) -> None:
    envs = [events_pb2.EventEnvelope.FromString(d) for d in read("las_vegas", 1)]
    created = json.loads(envs[0].payload)
    created["rules_version"] = "9:" + "e" * 64  # a later release's
    envs[0].payload = canonical(created)
    envs[0].schema_version = 1
    path = tmp_path / "log.json"
    path.write_text(pages_json(rechain(envs)))
    result = run(auditor, "game", str(path))
    assert result.returncode == 1
    assert "FAIL" in result.stdout and "9:" + "e" * 64 in result.stdout, result.stdout
