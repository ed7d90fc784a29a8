"""`boulevard-audit`: the standalone auditor's command (the boulevard-auditor distribution,
auditor/pyproject.toml; docs/auditing.md, "Auditing with only the auditor").

    boulevard-audit rules              # the rules versions this auditor hosts, and the hash
                                       # of its own files for each game
    boulevard-audit game LOG.json ...  # audit a game from its GetGameLog pages

LOG.json is what `grpcurl -d '{"game_id": "…"}' HOST boulevard.v1.EngineService/GetGameLog`
prints: one GetGameLogResponse in proto3 JSON per page (several pages may follow one another
in one file, or come in several files, in order). Nothing here talks to a network: the
auditor fetches the log however it likes, and this re-decides it with the rules it names.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from google.protobuf import json_format

from boulevard.api.v1 import engine_pb2
from boulevard.audit.game_log import GameAuditFailed, audit_game_log
from boulevard.games import REGISTRY
from boulevard.games.versions import hosted, rules_digest


def pages(text: str) -> Iterator[engine_pb2.GetGameLogResponse]:
    """Every GetGameLogResponse in `text` (JSON objects one after another)."""
    decoder = json.JSONDecoder()
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return
        obj, at = decoder.raw_decode(text, at)
        yield json_format.ParseDict(
            obj, engine_pb2.GetGameLogResponse(), ignore_unknown_fields=True
        )


def audit_files(paths: Sequence[Path]) -> int:
    envelopes: list[engine_pb2.LoggedEnvelope] = []
    game_id, finished = "", False
    for path in paths:
        for page in pages(path.read_text(encoding="utf-8")):
            game_id = game_id or page.game_id
            if page.game_id != game_id:
                print(f"FAIL {path}: a page of game {page.game_id}, not {game_id}")
                return 1
            envelopes.extend(page.envelopes)
            finished = finished or page.finished
    envelopes.sort(key=lambda e: e.version)
    log = [bytes(e.envelope) for e in envelopes]
    redacted = frozenset(int(e.version) for e in envelopes if e.redacted)
    try:
        report = audit_game_log(game_id, log, redacted=redacted, finished=finished)
    except GameAuditFailed as err:
        print(f"FAIL {game_id}: {err}")
        return 1
    print(f"PASS {report.summary()}; rules version {report.rules_version}")
    return 0


def show_rules() -> int:
    for game in sorted(REGISTRY):
        mine = rules_digest(game)
        for v in hosted(game):
            here = " (these files)" if v.sha256 == mine else ""
            print(f"{game} {v.pin}{here}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="boulevard-audit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("rules", help="the rules versions this auditor hosts")
    game = sub.add_parser("game", help="audit a game from its GetGameLog pages (JSON)")
    game.add_argument("logs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.command == "rules":
        return show_rules()
    return audit_files(args.logs)


if __name__ == "__main__":
    sys.exit(main())
