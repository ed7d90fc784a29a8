"""The page tells a game in the same words as the terminal: web/src/story.ts (a port of
boulevard.client.table.Table's words and the games' describers) gives, line for line, what
Table.words gives, over every golden history (tests/golden/, as old releases wrote them)
and bot-played games of the four games at their smallest and largest tables."""

from __future__ import annotations

import base64
import gzip
import json
import random
import subprocess
from pathlib import Path
from typing import Any

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.client.table import Table
from boulevard.games import REGISTRY
from boulevard.games.base import GameConfig, transfers_of
from boulevard.games.codec import Codec
from boulevard.games.playout import playout
from tests.browser.conftest import ROOT, WebBuild

GOLDEN = ROOT / "tests" / "golden"


def golden_cases() -> list[tuple[str, list[bytes]]]:
    cases = []
    for path in sorted(GOLDEN.glob("*/rules-*.log.gz")):
        log = [base64.b64decode(line) for line in gzip.decompress(path.read_bytes()).split()]
        cases.append((path.parent.name, log))
    return cases


def played_case(game: str, players: int, seed: int) -> tuple[str, list[bytes]]:
    """A bot-played game as a stream of envelopes, after a GameCreated naming its seats."""
    definition = REGISTRY[game]
    codec = Codec((*definition.event_types, *definition.command_types))
    created = {
        "game": game,
        "seats": [{"player_id": f"p{i}", "seat": i} for i in range(players)],
        "seed_commitment": "ab" * 32,
    }
    envelopes = [events_pb2.EventEnvelope(type="GameCreated", payload=json.dumps(created).encode())]
    played = playout(
        definition, GameConfig(players), random.Random(seed), definition.bots["random"]
    )
    for event in played.events:
        envelopes.append(
            events_pb2.EventEnvelope(
                type=codec.type_name(event),
                payload=codec.dumps(event),
                transfers=[
                    events_pb2.Transfer(source=t.source, target=t.target, amount=t.amount)
                    for t in transfers_of(event)
                ],
            )
        )
    envelopes.append(
        events_pb2.EventEnvelope(type="GameFinished", payload=b'{"reason":"it ended"}')
    )
    return game, [e.SerializeToString() for e in envelopes]


def terminal_lines(game: str, log: list[bytes]) -> list[str]:
    table = Table(game, out=lambda _line: None)
    return [
        table.words(engine_pb2.WatchGameResponse(event=events_pb2.EventEnvelope.FromString(d)))
        for d in log
    ]


def page_lines(web_build: WebBuild, cases: list[tuple[str, list[bytes]]], tmp: Path) -> Any:
    path = tmp / "cases.json"
    path.write_text(
        json.dumps(
            [
                {"game": game, "envelopes": [base64.b64encode(d).decode() for d in log]}
                for game, log in cases
            ]
        )
    )
    done = subprocess.run(
        [web_build.node, str(web_build.web / "build" / "story.mjs"), str(path)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_page_tells_every_game_in_the_terminals_words(
    web_build: WebBuild, tmp_path: Path
) -> None:
    cases = golden_cases()
    assert {game for game, _ in cases} == set(REGISTRY)
    for game, definition in sorted(REGISTRY.items()):
        for players in sorted({definition.min_players, definition.max_players}):
            cases.append(played_case(game, players, seed=players))
    page = page_lines(web_build, cases, tmp_path)
    told = 0
    for (game, log), lines in zip(cases, page, strict=True):
        expected = terminal_lines(game, log)
        for i, (ours, theirs) in enumerate(zip(lines, expected, strict=True)):
            assert ours == theirs, f"{game} event {i}: page {ours!r}, terminal {theirs!r}"
        told += sum(1 for line in expected if line)
    # Not a comparison of empty lines: the games were told (thousands of lines).
    assert told > 1000
