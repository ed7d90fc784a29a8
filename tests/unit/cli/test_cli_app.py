"""The `boulevard` command itself: every command's help renders and names its options, shell
completion scripts are generated and complete, the exit-code table is the one the docs show,
and the read commands' JSON documents have the documented keys and values."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from boulevard.api.v1 import engine_pb2, ledger_pb2
from boulevard.api.v1 import matchmaking_pb2 as mm_pb2
from boulevard.cli import audit_dice, audit_game, audit_ledger, healthcheck, reads
from boulevard.cli.app import app
from boulevard.cli.exits import EXIT_CODES, ExitCode
from boulevard.cli.main import main
from boulevard.cli.report import GameLogAudit

ROOT = Path(__file__).resolve().parents[3]
CLI_DOC = ROOT / "docs" / "cli.md"


def commands(
    group: Any = None, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command of the app with its path, groups included."""
    group = group or typer.main.get_command(app)
    yield path, group
    for name, sub in getattr(group, "commands", {}).items():
        yield from commands(sub, (*path, name))


ALL = sorted(path for path, _ in commands())


def test_the_app_has_every_command_the_docs_and_tests_use() -> None:
    leaves = {" ".join(p) for p, c in commands() if not getattr(c, "commands", None)}
    assert leaves >= {
        "up", "login", "issuer rotate", "nats-identities", "tls-certs", "backup", "restore",
        "healthcheck", "play", "watch", "games", "game show", "tickets", "ledger balances",
        "audit ledger", "audit dice", "audit game", "audit all", "exit-codes",
    }  # fmt: skip


@pytest.mark.parametrize("path", ALL, ids=lambda p: " ".join(p) or "boulevard")
def test_help_renders_and_lists_every_option(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("TERMINAL_WIDTH", "200")
    command = dict(commands())[path]
    assert main([*path, "--help"]) == ExitCode.OK
    shown = capsys.readouterr().out
    assert f"Usage: boulevard {' '.join(path)}".rstrip() in shown
    for param in command.params:
        for name in param.opts:
            if name.startswith("--"):
                assert name in shown, f"{' '.join(path)} --help does not list {name}"
    if command.help:
        first = command.help.split("\n\n")[0]
        assert re.sub(r"\s+", " ", first)[:40] in re.sub(r"\s+", " ", shown)
    assert "\x1b[" not in shown  # captured, not a terminal: no colour codes


def test_help_is_plain_text_when_piped_and_says_examples() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", "games", "--help"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stdout and "Examples" in done.stdout
    assert "boulevard games --status finished" in done.stdout


def test_a_usage_error_is_exit_2_naming_the_problem(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "dice"]) == ExitCode.CANNOT == 2
    assert "Missing argument" in capsys.readouterr().err
    assert main(["play", "chess"]) == 2
    assert "unknown game 'chess'" in capsys.readouterr().err
    assert main(["games", "--status", "sleeping"]) == 2
    assert "active, finished" in capsys.readouterr().err
    assert main(["nope"]) == 2
    assert main(["play", "long_shot", "--seats", "2"]) == 2  # before any network call
    assert "Long Shot seats 3-8 players: --seats 3 to 8" in capsys.readouterr().err
    # --game filters by kind; a game id (or a typo) listed nothing and exited 0
    for command in ("games", "tickets"):
        assert main([command, "--game", "g12ecfe4ee9c4c4baad5c792f5bc22cb"]) == 2
        said = capsys.readouterr().err
        assert "unknown game 'g12ecfe4ee9c4c4baad5c792f5bc22cb'" in said, said
        assert "las_vegas" in said and "boulevard game show" in said


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", *args],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_are_generated_for_each_shell(shell: str) -> None:
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    done = _cli("--show-completion", shell, env=env)
    assert done.returncode == 0, done.stderr
    assert "_BOULEVARD_COMPLETE" in done.stdout and "boulevard" in done.stdout


def test_completion_completes_commands_and_game_names() -> None:
    def complete(words: str, cword: int) -> list[str]:
        env = {**os.environ, "_BOULEVARD_COMPLETE": "complete_bash",
               "COMP_WORDS": words, "COMP_CWORD": str(cword)}  # fmt: skip
        done = _cli(env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("boulevard au", 1) == ["audit"]
    assert complete("boulevard audit ", 2) == ["ledger", "dice", "game", "all"]
    assert complete("boulevard play lo", 2) == ["long_shot", "lords_of_vegas"]
    assert "--status" in complete("boulevard games --", 2)


def test_the_bash_script_completes_in_bash() -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("needs bash")
    boulevard = Path(sys.executable).parent / "boulevard"
    if not boulevard.exists():
        pytest.skip(f"needs the installed console script {boulevard}")
    script = (
        f"source <({boulevard} --show-completion bash); "
        f"COMP_WORDS=(boulevard ledger b); COMP_CWORD=2; "
        f'_boulevard_completion {boulevard}; echo "${{COMPREPLY[@]}}"'
    )
    env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    done = subprocess.run(
        [bash, "-c", script], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert done.stdout.split() == ["balances"], done.stdout + done.stderr


# -- exit codes -------------------------------------------------------------------------------


def test_every_module_uses_the_one_exit_code_table() -> None:
    assert [int(c) for c, _, _ in EXIT_CODES] == [0, 1, 2, 130]
    for module in (audit_dice, audit_ledger):
        assert (module.EXIT_PASS, module.EXIT_FAIL, module.EXIT_ERROR) == (0, 1, 2)
    assert (healthcheck.SERVING, healthcheck.NOT_SERVING, healthcheck.USAGE) == (0, 1, 2)


def test_the_docs_show_the_exit_code_table() -> None:
    text = CLI_DOC.read_text()
    rows = re.findall(r"^\| `(\d+)` \| (\w+) \| (.+?) \|$", text, re.M)
    assert [(int(c), n, m) for c, n, m in rows] == [(int(c), n, m) for c, n, m in EXIT_CODES]


def test_exit_codes_command_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["exit-codes", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == [{"code": int(c), "name": n, "meaning": m} for c, n, m in EXIT_CODES]


# -- JSON documents ---------------------------------------------------------------------------


def test_games_json() -> None:
    finished, active = engine_pb2.GAME_STATUS_FINISHED, engine_pb2.GAME_STATUS_ACTIVE
    games = [
        engine_pb2.GameSummary(
            game_id="g1", game="las_vegas", status=finished, version=42, player_ids=["ann", "bob"]
        ),
        engine_pb2.GameSummary(game_id="g2", game="long_shot", status=active, version=3),
    ]
    assert reads.games_json(games, truncated=True) == {
        "games": [
            {"game_id": "g1", "game": "las_vegas", "status": "finished", "version": 42,
             "player_ids": ["ann", "bob"]},
            {"game_id": "g2", "game": "long_shot", "status": "active", "version": 3,
             "player_ids": []},
        ],
        "count": 2,
        "truncated": True,
    }  # fmt: skip


def test_tickets_json_never_carries_a_player_token() -> None:
    assigned = mm_pb2.Ticket(
        ticket_id="t1", player_id="ann", game="las_vegas", min_seats=2, max_seats=4,
        status=mm_pb2.TICKET_STATUS_ASSIGNED, game_id="g1", seat=0, player_token="secret",
        created_unix_ms=1, updated_unix_ms=2, expires_unix_ms=3,
    )  # fmt: skip
    waiting = mm_pb2.Ticket(ticket_id="t2", player_id="ann", game="long_shot",
                            status=mm_pb2.TICKET_STATUS_WAITING, status_reason="")  # fmt: skip
    document = reads.tickets_json([assigned, waiting], truncated=False)
    assert "secret" not in json.dumps(document)
    assert document == {
        "tickets": [
            {"ticket_id": "t1", "player_id": "ann", "game": "las_vegas", "status": "assigned",
             "min_seats": 2, "max_seats": 4, "game_id": "g1", "seat": 0, "created_unix_ms": 1,
             "updated_unix_ms": 2, "expires_unix_ms": 3, "status_reason": ""},
            {"ticket_id": "t2", "player_id": "ann", "game": "long_shot", "status": "waiting",
             "min_seats": 0, "max_seats": 0, "game_id": "", "seat": None, "created_unix_ms": 0,
             "updated_unix_ms": 0, "expires_unix_ms": 0, "status_reason": ""},
        ],
        "count": 2,
        "truncated": False,
    }  # fmt: skip


def test_balances_json_totals_the_book() -> None:
    bank, player = ledger_pb2.ACCOUNT_KIND_BANK, ledger_pb2.ACCOUNT_KIND_PLAYER
    reply = ledger_pb2.GetBalancesResponse(
        balances=[
            ledger_pb2.Balance(book="g1", account="bank", kind=bank, amount=-30),
            ledger_pb2.Balance(book="g1", account="seat:0", kind=player, amount=20),
            ledger_pb2.Balance(book="g1", account="seat:1", kind=player, amount=10),
        ],
        tree_size=7,
    )
    assert reads.balances_json("g1", reply) == {
        "book": "g1",
        "tree_size": 7,
        "balances": [
            {"account": "bank", "kind": "bank", "amount": -30},
            {"account": "seat:0", "kind": "player", "amount": 20},
            {"account": "seat:1", "kind": "player", "amount": 10},
        ],
        "total": 0,
    }


def test_game_json_and_the_board_as_watch_draws_it(capsys: pytest.CaptureFixture[str]) -> None:
    got = engine_pb2.GetGameResponse(
        game_id="g1", game="las_vegas", version=9, status=engine_pb2.GAME_STATUS_FINISHED,
        view=engine_pb2.GameView(rendered="CASINO 1: $60,000\nlegend: …"),
    )  # fmt: skip
    finished = {"ranking": [[1], [0]], "scores": [10, 30], "player_ids": ["ann", "bob"]}
    shown = reads.GameShown(got, ["ann", "bob"], finished)
    assert reads.game_json(shown) == {
        "game_id": "g1", "game": "las_vegas", "status": "finished", "version": 9, "to_act": [],
        "player_ids": ["ann", "bob"], "board": "CASINO 1: $60,000\nlegend: …",
        "ranking": [[1], [0]], "scores": [10, 30],
    }  # fmt: skip
    reads.show_game(shown)
    out = capsys.readouterr().out
    assert "CASINO 1: $60,000" in out and "legend: …" in out
    assert "game over — 1. bob (30)   2. ann (10)" in out
    live = reads.GameShown(
        engine_pb2.GetGameResponse(game_id="g2", game="las_vegas", to_act=[1],
                                   status=engine_pb2.GAME_STATUS_ACTIVE),
        ["ann", "bob"], None,
    )  # fmt: skip
    assert reads.game_json(live)["ranking"] is None
    reads.show_game(live)
    assert "to act: bob (seat 1)" in capsys.readouterr().out


def test_audit_ledger_and_audit_all_json() -> None:
    report = audit_ledger.AuditReport(ok=False, failure="entry 3: unbalanced", entries=5, heads=2)
    assert audit_ledger.report_json(report, "h:1", "", "FAIL entry 3: unbalanced") == {
        "ok": False, "reachable": True, "address": "h:1", "game": None, "entries": 5,
        "heads": 2, "games_reconciled": 0, "failure": "entry 3: unbalanced",
        "verdict": "FAIL entry 3: unbalanced", "report": None,
    }  # fmt: skip
    logs = [GameLogAudit("g1", True, "ok"), GameLogAudit("g2", False, "FAIL game at version 4", 4)]
    assert audit_game.all_json(logs, "PASS ledger: ok", False) == {
        "ok": False, "audited": 2, "failed": 1,
        "games": [
            {"game_id": "g1", "ok": True, "verdict": "ok", "failed_at": None},
            {"game_id": "g2", "ok": False, "verdict": "FAIL game at version 4", "failed_at": 4},
        ],
        "ledger": {"ok": True, "verdict": "PASS ledger: ok"}, "report": None,
    }  # fmt: skip


def test_healthcheck_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        healthcheck, "check", lambda *_a, **_k: (healthcheck.NOT_SERVING, "unhealthy: x")
    )
    # Port 1, where nothing listens: unhealthy even if a change reached the network past the
    # fake (an engine of `make run` may hold 50052 on this machine).
    assert healthcheck.main(["127.0.0.1:1", "boulevard.v1.EngineService", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "target": "127.0.0.1:1", "service": "boulevard.v1.EngineService", "healthy": False,
        "message": "unhealthy: x",
    }  # fmt: skip
    assert main(["healthcheck", "127.0.0.1:1", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["healthy"] is False


def test_reads_call_with_the_token_chosen(tmp_path: Path) -> None:
    from boulevard.cli.login import local_issuer
    from boulevard.platform.settings import Settings

    settings = Settings()
    assert reads.resolve_caller(None, False, tmp_path, settings) == reads.Caller()  # no issuer
    assert reads.resolve_caller("tok", False, tmp_path, settings).token == "tok"
    local_issuer(settings, tmp_path)
    made = reads.resolve_caller(None, False, tmp_path, settings)
    assert made.token and "local issuer" in made.source
    assert reads.resolve_caller("tok", True, tmp_path, settings) == reads.Caller()  # --anonymous


def test_the_docs_describe_every_command_and_option() -> None:
    text = CLI_DOC.read_text()
    for path, command in commands():
        if getattr(command, "commands", None):
            continue
        heading = f"### `boulevard {' '.join(path)}`"
        assert heading in text, f"docs/cli.md has no section {heading}"
        section = text.split(heading, 1)[1].split("\n### ", 1)[0]
        for param in command.params:
            for name in param.opts:
                if name.startswith("--") and name != "--help":
                    assert f"`{name}`" in section, f"docs/cli.md: {heading} lacks {name}"


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_on_a_terminal_and_none_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    from boulevard.cli import output

    def shown() -> str:
        screen = FakeTerminal()
        monkeypatch.setattr(sys, "stdout", screen)
        output.table("t", ("a", "b"), [(1, 2)])
        return screen.getvalue()

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert "\x1b[1;36m" in shown()  # a coloured header
    monkeypatch.setenv("NO_COLOR", "1")
    assert not re.search(r"\x1b\[[0-9;]*3[0-9]m", shown())  # no colour at all


def test_an_empty_book_says_how_books_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    """`ledger balances --game <typo>` printed an empty table and "over 0 accounts": a book
    nobody wrote to. It now says a game's book is its game id, and counts in the singular."""
    reads.show_balances(reads.balances_json("gnope", ledger_pb2.GetBalancesResponse(tree_size=9)))
    said = capsys.readouterr().out
    assert "total 0 over 0 accounts" in said
    assert "no ledger entry names book 'gnope' yet (a game's book is its game id" in said
    one = ledger_pb2.Balance(book="g1", account="bank", kind=ledger_pb2.ACCOUNT_KIND_BANK)
    reads.show_balances(reads.balances_json("g1", ledger_pb2.GetBalancesResponse(balances=[one])))
    said = capsys.readouterr().out
    assert "over 1 account\n" in said and "no ledger entry" not in said
    caller = reads.Caller()
    reads.show_games({"games": [], "count": 1, "truncated": False}, caller)
    assert "1 game; as: no token" in capsys.readouterr().out


def test_login_without_an_issuer_says_where_it_looked_on_stderr(tmp_path: Path) -> None:
    """Run from another folder, `boulevard login` said "start the platform with `boulevard
    up` first" on stdout, exit 1, though the platform was up: `$(boulevard login alice)` then
    sent that sentence as a token. It names the folder and the way out, on stderr, exit 2."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "BOULEVARD_DATA_DIR"}
    done = subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", "login", "alice"],
        capture_output=True, text=True, timeout=60, check=False, env=env, cwd=elsewhere,
    )  # fmt: skip
    assert done.returncode == ExitCode.CANNOT, done.stderr
    assert done.stdout == ""
    assert f"no local issuer in {elsewhere / '.data'}" in done.stderr
    assert "--data-dir" in done.stderr
    bad_ttl = _cli("login", "alice", "--ttl", "0")
    assert bad_ttl.returncode == 2 and bad_ttl.stdout == "" and "--ttl" in bad_ttl.stderr


def test_the_full_screen_apps_refuse_a_pipe(tmp_path: Path) -> None:
    """`boulevard play` and `watch --tui` with their output piped wrote the screen's escape
    codes into the pipe; they now say they need a terminal (exit 2) and start nothing."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOULEVARD_")}
    env["BOULEVARD_ENGINE_PORT"] = env["BOULEVARD_MATCHMAKING_PORT"] = "1"  # nothing there
    for args in (["play", "las_vegas", "--token", "t"], ["watch", "g1", "--tui"]):
        done = subprocess.run(
            [sys.executable, "-m", "boulevard.cli.main", *args],
            capture_output=True, text=True, timeout=60, check=False, env=env,
            stdin=subprocess.DEVNULL, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "\x1b" not in done.stdout + done.stderr
        assert "is a full-screen app: run it in a terminal" in done.stderr


def test_watch_says_why_it_cannot_on_stderr() -> None:
    """`boulevard watch <id> > game.txt` put "cannot watch …" into the file, as if a move."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOULEVARD_")}
    done = _cli("watch", "g1", "--engine", "127.0.0.1:1", env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("cannot watch g1 at 127.0.0.1:1: UNAVAILABLE")
    assert "is the platform up (make run, or boulevard up)?" in done.stderr
    assert "boulevard --tls-ca <data-dir>/tls/ca.pem" in done.stderr  # a TLS port says no more
    shown = _cli("game", "show", "g1", "--engine", "127.0.0.1:1", env=env)
    assert shown.returncode == 2 and "is the platform up" in shown.stderr
