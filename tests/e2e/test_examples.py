"""The client examples (examples/python, examples/node) play whole games against the real
platform, started as `boulevard up` starts it (its local issuer, `boulevard login`), and each
game they played then passes `boulevard audit game`: what docs/clients.md teaches is enough
to write a client the platform accepts and an auditor can check."""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from boulevard.api.v1 import (
    engine_pb2,
    engine_pb2_grpc,
    events_pb2,
    ledger_pb2,
    ledger_pb2_grpc,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
)
from boulevard.contract import mapping
from boulevard.games import REGISTRY
from boulevard.games.base import GameConfig
from boulevard.games.playout import playout
from boulevard.messaging.server import free_port
from boulevard.platform.identity import bearer
from boulevard.seats.signing import signed_submit
from tests.support.keys import seat_key
from tests.support.processes import address, lines_until, service_env, stop_up
from tests.unit.docs.test_clients_doc import vectors as DOC_VECTORS

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PYTHON_CLIENT = ROOT / "examples" / "python" / "client.py"
NODE_DIR = ROOT / "examples" / "node"


@dataclass
class Up:
    env: dict[str, str]

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "boulevard.cli.main", *args],
            env=self.env, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip

    def login(self, name: str) -> str:
        done = self.cli("login", name)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def addresses(self) -> list[str]:
        return [
            "--matchmaking", address(self.env, "matchmaking"),
            "--engine", address(self.env, "engine"),
            "--dice", address(self.env, "dice"),
            "--ledger", address(self.env, "ledger"),
        ]  # fmt: skip


@contextlib.contextmanager
def running_up(data_dir: Path, *flags: str) -> Iterator[Up]:
    """`boulevard up --no-demo` on free ports until the block ends."""
    env = service_env(None, data_dir)
    env["BOULEVARD_EMBEDDED_NATS_PORT"] = str(free_port())
    proc = subprocess.Popen(
        [sys.executable, "-m", "boulevard.cli.main", "up", "--no-demo", *flags],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        lines = lines_until(proc, "platform up", 60)
        assert any("platform up" in line for line in lines), "".join(lines)
        yield Up(env)
    finally:
        stop_up(proc)


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    with running_up(tmp_path_factory.mktemp("examples") / "data") as platform:
        yield platform


@pytest.fixture(scope="module")
def node_client() -> list[str]:
    """`npm ci` in examples/node (as on a fresh clone), then the command that runs it."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"{'node' if node is None else 'npm'} is not installed")
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=NODE_DIR, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [node, str(NODE_DIR / "client.js")]


PYTHON = [sys.executable, str(PYTHON_CLIENT)]


def start(command: list[str], up: Up, player: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*command, "--token", up.login(player), *up.addresses(), *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> dict[str, object]:
    """Wait for an example to end; check what it printed and return its result line."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the example did not finish:\n{out[-3000:]}\n{err[-3000:]}") from None
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    lines = out.splitlines()
    game_id = next(line.removeprefix("game_id: ") for line in lines if line.startswith("game_id: "))
    assert any(line.startswith("ranking: 1. ") for line in lines), out[-2000:]
    assert "dice: revealed seed matches the commitment" in lines
    played = [line for line in lines if ": played " in line]
    assert played, out[-2000:]
    (result_line,) = [line for line in lines if line.startswith("result: ")]
    result: dict[str, object] = json.loads(result_line.removeprefix("result: "))
    assert result["game_id"] == game_id and result["dice_ok"] is True
    return result


def audited(up: Up, game_id: str) -> str:
    done = up.cli("audit", "game", game_id, timeout=90)
    # Exit code 0 is the audit's PASS (docs/auditing.md); the words are for people.
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS" in done.stdout and game_id in done.stdout, done.stdout
    return done.stdout


def check_against_bots(result: dict[str, object], player: str) -> None:
    ids = result["player_ids"]
    assert isinstance(ids, list) and len(ids) == 2
    assert ids[int(str(result["seat"]))] == player
    assert next(p for p in ids if p != player).startswith("bot-")
    ranking = result["ranking"]
    assert isinstance(ranking, list)
    assert sorted(s for group in ranking for s in group) == [0, 1]


def audited_with_evidence(up: Up, game_id: str, evidence: Path) -> None:
    """The seat's evidence file — its reveal's and moves' receipts, the dice log's and the
    ledger's heads — checks out with the game's audit, and so do its seats against the
    match the matchmaker formed (a bot's among them) and every key against the key history
    the platform serves."""
    kept = json.loads(evidence.read_text())
    kinds = [a["kind"] for a in kept["accepted"]]
    assert kinds[0] == "reveal" and kinds.count("reveal") == 1 and "action" in kinds, kinds
    assert kept["dice_heads"] and kept["ledger_heads"], kept
    # The ledger head kept covers the game's anchor: it commits to the game's whole log.
    head = ledger_pb2.SignedTreeHead.FromString(bytes.fromhex(kept["ledger_heads"][-1]))
    with grpc.insecure_channel(address(up.env, "ledger")) as channel:
        entries = ledger_pb2_grpc.LedgerServiceStub(channel).ListEntries(
            ledger_pb2.ListEntriesRequest(game_id=game_id, page_size=1000), timeout=10
        )
    anchors = [e.seq for e in entries.entries if e.event_type == "GameFinished" and not e.postings]
    assert len(anchors) == 1 and head.tree_size >= anchors[0], (anchors, head)
    # The keys `boulevard up` published (engine, dice, ledger, bots), pinned by the auditor
    # from what the engine serves: every key the audit meets is in them.
    pinned = evidence.with_name("keys.json")
    pin = up.cli("keys", "pin", str(pinned), "--engine", address(up.env, "engine"))
    assert pin.returncode == 0, pin.stdout + pin.stderr
    served = json.loads(pinned.read_text())["keys"]
    assert {k["role"] for k in served} == {"engine", "dice", "ledger", "bots"}, served
    done = up.cli(
        "audit", "game", game_id, "--evidence", str(evidence), "--trust", str(pinned),
        "--matchmaking", address(up.env, "matchmaking"), timeout=90,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "receipts agree" in done.stdout, done.stdout


def test_the_python_example_plays_a_game_against_a_bot_to_the_end(up: Up, tmp_path: Path) -> None:
    evidence = tmp_path / "evidence.json"
    result = finish(start(PYTHON, up, "py-alice", "--evidence", str(evidence)))
    check_against_bots(result, "py-alice")
    audited(up, str(result["game_id"]))
    audited_with_evidence(up, str(result["game_id"]), evidence)


def test_the_python_example_says_why_a_call_was_refused(up: Up) -> None:
    """Long Shot seats 3 to 8 and the example's --seats is 2 by default: it printed a gRPC
    traceback; it now prints the status and the server's reason in one line."""
    proc = start(PYTHON, up, "py-dora", "--game", "long_shot")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, out + err
    assert "Traceback" not in err
    assert err.strip() == "error: INVALID_ARGUMENT: Long Shot seats 3-8 players; asked for 2-2"


def test_the_node_example_plays_a_game_against_a_bot_to_the_end(
    up: Up, node_client: list[str], tmp_path: Path
) -> None:
    evidence = tmp_path / "evidence.json"
    result = finish(start(node_client, up, "node-bob", "--evidence", str(evidence)))
    check_against_bots(result, "node-bob")
    audited(up, str(result["game_id"]))
    audited_with_evidence(up, str(result["game_id"]), evidence)


def test_the_two_examples_play_each_other(up: Up, node_client: list[str]) -> None:
    """Both at one table and no bots: one of them signs for seat 1, whose moves carry a
    non-zero seat in the action (the canonical encoding's test), and each sees the other's
    moves only through WatchGame."""
    python = start(PYTHON, up, "py-carol", "--bot-fill", "0")
    node = start(node_client, up, "node-dave", "--bot-fill", "0")
    a, b = finish(python), finish(node)
    assert a["game_id"] == b["game_id"]
    assert {a["seat"], b["seat"]} == {0, 1}
    assert sorted(a["player_ids"]) == ["node-dave", "py-carol"]  # type: ignore[arg-type]
    assert a["ranking"] == b["ranking"] and a["scores"] == b["scores"]
    audited(up, str(a["game_id"]))


@dataclass
class TlsUp:
    up: Up
    ca: Path


@pytest.fixture(scope="module")
def tls_up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsUp]:
    """docs/clients.md, "TLS": `boulevard up --tls`; clients verify with <data-dir>/tls/ca.pem
    and connect to 127.0.0.1 with no name override (that a plaintext client is refused is
    tests/e2e/test_tls.py's)."""
    data = tmp_path_factory.mktemp("examples-tls") / "data"
    with running_up(data, "--tls") as platform:
        yield TlsUp(platform, data / "tls" / "ca.pem")


def test_the_python_example_plays_over_tls_with_the_local_ca(tls_up: TlsUp) -> None:
    assert tls_up.ca.is_file()
    finish(start(PYTHON, tls_up.up, "py-tls", "--tls-ca", str(tls_up.ca)))


def test_the_node_example_plays_over_tls_with_the_local_ca(
    tls_up: TlsUp, node_client: list[str]
) -> None:
    finish(start(node_client, tls_up.up, "node-tls", "--tls-ca", str(tls_up.ca)))


NODE_ENCODE = r"""
const { encodeAction, commandBytes, loadTypes } = require('./client.js');
const types = loadTypes(process.argv[1]);
const Action = types.lookupType('boulevard.v1.Action');
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
// Each action as @grpc/proto-loader hands it to the client (the same toObject options), and
// as a client might build it by hand: every field written out, defaults included.
const encoded = (defaults) => input.wire.map((hex) => encodeAction(types, Action.toObject(
  Action.decode(Buffer.from(hex, 'hex')),
  { longs: String, enums: String, defaults, oneofs: true })).toString('hex'));
const actions = encoded(false);
const handBuilt = encoded(true);
const v = input.vector;
const signing = commandBytes(v.game_id, Number(v.seat), v.expected_version, v.idempotency_key,
  Buffer.from(v.action_bytes, 'hex')).toString('hex');
console.log(JSON.stringify({ actions, handBuilt, signing }));
"""


def actions_of(game: Any, per_game: int) -> list[engine_pb2.Action]:
    """Distinct legal actions met in one random playout of `game` (at most `per_game`)."""
    seen: dict[bytes, engine_pb2.Action] = {}
    bot = game.bots["random"]

    def recording(view: Any, legal: Any, seat: int, rng: random.Random) -> Any:
        for command in legal:
            action = mapping.command_to_action(game, command)
            if len(seen) < per_game:
                seen.setdefault(action.SerializeToString(deterministic=True), action)
        return bot(view, legal, seat, rng)

    playout(game, GameConfig(game.max_players), random.Random(game.name), recording)
    return list(seen.values())


def every_games_actions(per_game: int = 400) -> list[engine_pb2.Action]:
    """Every game's actions (every kind of field: oneofs, zero seats, repeated lots,
    optional values)."""
    found: list[engine_pb2.Action] = []
    for name, game in sorted(REGISTRY.items()):
        actions = actions_of(game, per_game)
        assert len(actions) > 5, name
        found.extend(actions)
    return found


def test_the_node_examples_encoding_is_the_engines_over_every_games_actions(
    node_client: list[str],
) -> None:
    """docs/clients.md, "Signing a move": what the Node example signs is the bytes the
    engine verifies over (Python's deterministic encoding), for every game's actions as
    proto-loader decodes them; and its signing bytes are the page's test vector."""
    actions = every_games_actions()
    vector = DOC_VECTORS()
    feed = {
        "wire": [a.SerializeToString().hex() for a in actions],
        "vector": vector,
    }
    done = subprocess.run(
        [node_client[0], "-e", NODE_ENCODE, str(ROOT / "protos")],
        cwd=NODE_DIR, input=json.dumps(feed), capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout)
    expected = [a.SerializeToString(deterministic=True).hex() for a in actions]
    for form in ("actions", "handBuilt"):
        wrong = [(e, n) for e, n in zip(expected, answer[form], strict=True) if e != n]
        assert not wrong, f"{form}: {len(wrong)} of {len(expected)} differ, e.g. {wrong[:3]}"
    assert answer["signing"] == vector["signing_bytes"]


# ---- what docs/clients.md says, checked against the same running platform -------------------


def rpc_error(call: Callable[[], object]) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    code: grpc.StatusCode = caught.value.code()  # type: ignore[attr-defined]
    return code


def test_the_guides_ids_retries_and_health_hold(up: Up) -> None:
    """docs/clients.md, "Ids", "Idempotency and retries", "Blind client seeds", "Health",
    "The bearer JWT" and "The WatchGame stream", each claim tried once on the real services."""
    done = up.cli("login", "doc-olga", "--role", "operator")
    assert done.returncode == 0
    operator = done.stdout.strip()
    engine = engine_pb2_grpc.EngineServiceStub(grpc.insecure_channel(address(up.env, "engine")))
    health = health_pb2_grpc.HealthStub(grpc.insecure_channel(address(up.env, "engine")))
    mm = matchmaking_pb2_grpc.MatchmakingServiceStub(
        grpc.insecure_channel(address(up.env, "matchmaking"))
    )

    # Health: "" and the full service name; any other name is NOT_FOUND.
    for name in ("", "boulevard.v1.EngineService"):
        reply = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    assert (
        rpc_error(
            lambda: health.Check(health_pb2.HealthCheckRequest(service="EngineService"), timeout=5)
        )
        == grpc.StatusCode.NOT_FOUND
    )

    # The bearer header is exactly `authorization: Bearer <jwt>`.
    player = up.login("doc-alice")
    ticket = matchmaking_pb2.CreateTicketRequest(
        game="las_vegas", public_key=seat_key(0).public_hex
    )
    for wrong in (f"bearer {player}", f"Bearer  {player}", player):
        assert (
            rpc_error(
                lambda w=wrong: mm.CreateTicket(ticket, metadata=(("authorization", w),), timeout=5)
            )
            == grpc.StatusCode.UNAUTHENTICATED
        )

    # Operator game ids: "g" + sha256("create\0" + sub + "\0" + request_id)[:31]; a retry
    # returns the same game.
    request_id = f"doc-{uuid.uuid4().hex}"
    seed = "alice's seed"
    create = engine_pb2.CreateGameRequest(
        request_id=request_id, game="las_vegas",
        seats=[
            engine_pb2.SeatAssignment(
                seat=0, player_id="doc-alice", public_key=seat_key(0).public_hex,
                client_seed_commitment=hashlib.sha256(seed.encode()).hexdigest(),
            ),
            engine_pb2.SeatAssignment(
                seat=1, player_id="doc-bob", public_key=seat_key(1).public_hex
            ),
        ],
    )  # fmt: skip
    created = engine.CreateGame(create, metadata=bearer(operator), timeout=10)
    digest = hashlib.sha256(f"create\0doc-olga\0{request_id}".encode()).hexdigest()
    game_id = created.game_id
    assert game_id == "g" + digest[:31]
    assert engine.CreateGame(create, metadata=bearer(operator), timeout=10).game_id == game_id
    tokens = list(created.player_tokens)

    # Blind seeds: a wrong seed is INVALID_ARGUMENT; the right one, twice, succeeds.
    def reveal(text: str) -> engine_pb2.RevealSeedResponse:
        request = engine_pb2.RevealSeedRequest(
            game_id=game_id, player_token=tokens[0], client_seed=text
        )
        reply: engine_pb2.RevealSeedResponse = engine.RevealSeed(request, timeout=10)
        return reply

    assert rpc_error(lambda: reveal("another seed")) == grpc.StatusCode.INVALID_ARGUMENT
    assert reveal(seed).all_revealed  # seat 1 committed to no seed
    assert reveal(seed).all_revealed

    def turn() -> tuple[int, engine_pb2.ListLegalActionsResponse]:
        for _ in range(100):
            state = engine.GetGame(engine_pb2.GetGameRequest(game_id=game_id), timeout=10)
            if state.to_act:
                seat = state.to_act[0]
                legal = engine.ListLegalActions(
                    engine_pb2.ListLegalActionsRequest(game_id=game_id, player_token=tokens[seat]),
                    timeout=10,
                )
                return seat, legal
            time.sleep(0.05)
        raise AssertionError("nobody to act")

    def signed(
        seat: int, action: engine_pb2.Action, version: int, key: str
    ) -> engine_pb2.SubmitActionRequest:
        return signed_submit(game_id, tokens[seat], seat, seat_key(seat), action, version, key)

    seat, legal = turn()
    first = signed(seat, legal.actions[0], legal.version, "doc-move-1")
    applied = engine.SubmitAction(first, timeout=10)
    assert {e.causation_id for e in applied.events} == {"cmd:doc-move-1"}
    assert applied.events[0].type == "CommandAccepted"

    # A stale expected_version with a new key: ABORTED, nothing applied.
    stale = signed(seat, legal.actions[0], legal.version, "doc-move-stale")
    assert applied.version > legal.version
    assert rpc_error(lambda: engine.SubmitAction(stale, timeout=10)) == grpc.StatusCode.ABORTED

    # Another move, then the first request again (its old expected version): the first
    # result, with the game's version now; and a new action under the used key: the same.
    other, legal2 = turn()
    engine.SubmitAction(signed(other, legal2.actions[0], legal2.version, "doc-move-2"), timeout=10)
    now = engine.GetGame(engine_pb2.GetGameRequest(game_id=game_id), timeout=10).version
    late = engine.SubmitAction(first, timeout=10)
    assert [e.event_id for e in late.events] == [e.event_id for e in applied.events]
    assert late.version == now > applied.version
    seat3, legal3 = turn()
    reused = signed(seat3, legal3.actions[-1], legal3.version, "doc-move-1")
    assert seat3 == seat  # Las Vegas: turns alternate, and both seats still have dice
    again = engine.SubmitAction(reused, timeout=10)
    assert [e.event_id for e in again.events] == [e.event_id for e in applied.events]
    assert engine.GetGame(engine_pb2.GetGameRequest(game_id=game_id), timeout=10).version == now

    # WatchGame from a version: that version first; GameCreated's causation is create:<id>.
    stream = engine.WatchGame(
        engine_pb2.WatchGameRequest(game_id=game_id, from_version=applied.events[0].version),
        timeout=10,
    )
    first_update = next(iter(stream))
    stream.cancel()
    assert first_update.event.version == applied.events[0].version
    log = engine.GetGameLog(engine_pb2.GetGameLogRequest(game_id=game_id, page_size=1), timeout=10)
    envelope = events_pb2.EventEnvelope.FromString(log.envelopes[0].envelope)
    assert envelope.causation_id == f"create:{request_id}"
    assert envelope.correlation_id == game_id

    # Play it out; a retry after the end still returns the first result, and a watch of the
    # finished game sends every event up to GameFinished, then ends.
    n = 0
    while engine.GetGame(engine_pb2.GetGameRequest(game_id=game_id), timeout=10).status != (
        engine_pb2.GAME_STATUS_FINISHED
    ):
        seat_n, legal_n = turn()
        engine.SubmitAction(
            signed(seat_n, legal_n.actions[0], legal_n.version, f"doc-end-{n}"), timeout=10
        )
        n += 1
    after = engine.SubmitAction(first, timeout=10)
    assert [e.event_id for e in after.events] == [e.event_id for e in applied.events]
    watched = list(engine.WatchGame(engine_pb2.WatchGameRequest(game_id=game_id), timeout=30))
    assert [u.event.version for u in watched] == list(range(1, after.version + 1))
    assert watched[-1].event.type == "GameFinished" and watched[-1].HasField("view")
