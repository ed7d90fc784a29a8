#!/usr/bin/env python3
"""A Boulevard client written from protos/ and docs/clients.md alone.

It queues for a game through matchmaking (bots fill the empty seats), reveals its client
seed, plays legal actions to the end of the game with signed SubmitAction calls while
watching the game, prints the final ranking and checks the dice commitment against the
revealed server seed.

    token=$(boulevard login alice)
    python examples/python/client.py --token "$token"

Needs grpcio, grpcio-tools (only to compile protos/ at start) and cryptography (Ed25519);
see requirements.txt. It imports nothing of Boulevard's own Python code: the messages are
built at run time from the .proto files, as a client in any language would.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import secrets
import struct
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from grpc_tools import protoc

PROTOS = Path(__file__).resolve().parents[2] / "protos"
PACKAGE = "boulevard.v1"


# ---- the protos, compiled at run time ---------------------------------------------------


class Protos:
    """Message classes of protos/boulevard/v1, in a descriptor pool of their own."""

    def __init__(self, root: Path) -> None:
        files = sorted(str(p.relative_to(root)) for p in (root / "boulevard/v1").glob("*.proto"))
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "set.pb"
            include = Path(protoc.__file__).parent / "_proto"
            argv = ["protoc", f"-I{root}", f"-I{include}", "--include_imports"]
            if protoc.main([*argv, f"--descriptor_set_out={out}", *files]) != 0:
                raise SystemExit(f"could not compile the protos in {root}")
            fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
        self.pool = descriptor_pool.DescriptorPool()
        for file in fds.file:
            self.pool.Add(file)

    def __getattr__(self, name: str) -> Any:
        """`protos.GetGameRequest` -> the message class boulevard.v1.GetGameRequest."""
        return message_factory.GetMessageClass(self.pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))

    def enum(self, name: str) -> Any:
        return self.pool.FindEnumTypeByName(f"{PACKAGE}.{name}")


class Stub:
    """Calls `/boulevard.v1.<Service>/<Method>` with the method's request and response types."""

    def __init__(self, protos: Protos, channel: grpc.Channel, service: str) -> None:
        self.protos = protos
        self.channel = channel
        self.service = protos.pool.FindServiceByName(f"{PACKAGE}.{service}")

    def __getattr__(self, method: str) -> Callable[..., Any]:
        m = self.service.methods_by_name[method]
        path = f"/{self.service.full_name}/{m.name}"
        reply = message_factory.GetMessageClass(m.output_type)
        kind = self.channel.unary_stream if m.server_streaming else self.channel.unary_unary
        return kind(path, request_serializer=lambda r: r.SerializeToString(),
                    response_deserializer=reply.FromString)  # fmt: skip


# ---- signing (docs/clients.md, "Signing a move") ----------------------------------------


def lp(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def command_bytes(game_id: str, seat: int, expected_version: int, key: str, action: bytes) -> bytes:
    return b"".join((
        lp(b"boulevard.game.command.v1"), lp(game_id.encode()), struct.pack(">I", seat),
        struct.pack(">Q", expected_version), lp(key.encode()), lp(action),
    ))  # fmt: skip


# ---- the client -------------------------------------------------------------------------


def channel_to(address: str, ca_file: str | None) -> grpc.Channel:
    if ca_file:
        creds = grpc.ssl_channel_credentials(Path(ca_file).read_bytes())
        return grpc.secure_channel(address, creds)
    return grpc.insecure_channel(address)


def retrying(call: Callable[[], Any], what: str, attempts: int = 8) -> Any:
    """Retry UNAVAILABLE (the platform says: nothing is wrong with the request) with backoff.
    The request is the same object each time, so its idempotency key is the same."""
    for attempt in range(attempts):
        try:
            return call()
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.UNAVAILABLE or attempt == attempts - 1:
                raise
            print(f"{what}: UNAVAILABLE ({err.details()}); retrying", flush=True)
            time.sleep(min(0.2 * 2**attempt, 3.0))
    raise AssertionError("unreachable")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--token",
        default=os.environ.get("BOULEVARD_TOKEN", ""),
        help="your player JWT (`boulevard login <name>`); default $BOULEVARD_TOKEN",
    )
    p.add_argument("--matchmaking", default="127.0.0.1:50051", help="HOST:PORT (%(default)s)")
    p.add_argument("--engine", default="127.0.0.1:50052", help="HOST:PORT (%(default)s)")
    p.add_argument("--dice", default="127.0.0.1:50053", help="HOST:PORT (%(default)s)")
    p.add_argument("--ledger", default="127.0.0.1:50054", help="HOST:PORT (%(default)s)")
    p.add_argument(
        "--tls-ca", default=None, help="CA file of `boulevard up --tls` (.data/tls/ca.pem)"
    )
    p.add_argument(
        "--game", default="las_vegas",
        help="las_vegas (default), lords_of_vegas, long_shot or vegas_showdown",
    )  # fmt: skip
    p.add_argument(
        "--seats", type=int, default=2,
        help="table size, bots fill the rest (default 2; Las Vegas 2-5, Lords of Vegas 2-4, "
        "Long Shot 3-8, Vegas Showdown 3-5)",
    )  # fmt: skip
    p.add_argument("--bot-fill", type=int, default=1, help="seconds before bots fill the table")
    p.add_argument("--protos", type=Path, default=PROTOS, help="the .proto files' root")
    p.add_argument(
        "--evidence", type=Path, default=None,
        help="write the seat's evidence file here (receipts, the dice log's and the ledger's "
        "heads), for "
        "`boulevard audit game --evidence` (docs/auditing.md)",
    )  # fmt: skip
    args = p.parse_args(argv)  # fmt: skip
    if not args.token:
        p.error("no token: pass --token or set BOULEVARD_TOKEN (`boulevard login <name>`)")

    protos = Protos(args.protos)
    auth = (("authorization", f"Bearer {args.token}"),)  # exactly one space, no other form
    mm = Stub(protos, channel_to(args.matchmaking, args.tls_ca), "MatchmakingService")
    engine = Stub(protos, channel_to(args.engine, args.tls_ca), "EngineService")
    dice = Stub(protos, channel_to(args.dice, args.tls_ca), "DiceService")
    Ticket = protos.enum("TicketStatus").values_by_name

    # 1. A key to sign moves with, and a client seed committed to before the dice exist.
    key = Ed25519PrivateKey.generate()
    public_hex = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
    client_seed = secrets.token_hex(16)
    commitment = hashlib.sha256(client_seed.encode("utf-8")).hexdigest()

    # 2. Queue. The same request_id makes a retry return the same ticket.
    create = protos.CreateTicketRequest(
        request_id=uuid.uuid4().hex, game=args.game, min_seats=args.seats,
        max_seats=args.seats, bot_fill_after_seconds=args.bot_fill,
        client_seed_commitment=commitment, public_key=public_hex,
    )  # fmt: skip
    ticket = retrying(lambda: mm.CreateTicket(create, metadata=auth, timeout=10), "CreateTicket")
    ticket = ticket.ticket
    print(f"ticket {ticket.ticket_id} for {ticket.player_id}: waiting", flush=True)

    # 3. Wait for ASSIGNED: the game exists then, and the ticket carries our seat token.
    watch = mm.WatchTicket(protos.WatchTicketRequest(ticket_id=ticket.ticket_id),
                           metadata=auth, timeout=120)  # fmt: skip
    for update in watch:
        ticket = update.ticket
        if ticket.status in (Ticket["TICKET_STATUS_CANCELLED"].number,
                             Ticket["TICKET_STATUS_EXPIRED"].number):  # fmt: skip
            print(f"ticket ended: {ticket.status_reason}", file=sys.stderr)
            return 1
        if ticket.status == Ticket["TICKET_STATUS_ASSIGNED"].number:
            break
    game_id, seat, token = ticket.game_id, ticket.seat, ticket.player_token
    print(f"game_id: {game_id}", flush=True)
    print(f"seat: {seat}", flush=True)

    # 4. Reveal the seed: the game's dice wait for every seat (or the reveal deadline).
    reveal = protos.RevealSeedRequest(game_id=game_id, player_token=token, client_seed=client_seed)
    revealed = retrying(lambda: engine.RevealSeed(reveal, timeout=10), "RevealSeed")
    print(f"seed revealed at version {revealed.version} (all seats: {revealed.all_revealed})")
    # What the engine signed it accepted for this seat, kept as evidence (docs/auditing.md).
    accepted = [{"kind": "reveal", "client_seed": client_seed,
                 "receipt": receipt_json(revealed.receipt)}]  # fmt: skip

    # 5. Watch the game; whenever a view says it is our turn, play a legal action.
    commitment_of_dice = ""
    finished: dict[str, Any] = {}
    moves = 0
    receipts = []
    updates: Iterator[Any] = engine.WatchGame(
        protos.WatchGameRequest(game_id=game_id, player_token=token, from_version=0), timeout=600
    )
    for update in updates:
        event = update.event
        payload = json.loads(event.payload)
        if event.type == "GameCreated":
            commitment_of_dice = payload["seed_commitment"]
            print(f"dice commitment {commitment_of_dice}")
        elif event.type == "GameFinished":
            finished = payload
        if not update.HasField("view") or seat not in update.to_act:
            continue
        legal = engine.ListLegalActions(
            protos.ListLegalActionsRequest(game_id=game_id, player_token=token), timeout=10
        )
        if not legal.actions:
            continue  # the view was older than the game: a newer burst is on its way
        action = random.choice(list(legal.actions))
        request = protos.SubmitActionRequest(
            game_id=game_id, player_token=token, action=action,
            expected_version=legal.version, idempotency_key=uuid.uuid4().hex,
        )  # fmt: skip
        signed = command_bytes(game_id, seat, legal.version, request.idempotency_key,
                               action.SerializeToString(deterministic=True))  # fmt: skip
        request.signature = key.sign(signed)
        try:
            reply = retrying(lambda r=request: engine.SubmitAction(r, timeout=10), "SubmitAction")
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.ABORTED:
                continue  # the game moved on since we looked: the next view says what now
            raise
        moves += 1
        receipts.append(reply.receipt)
        accepted.append({"kind": "action", "idempotency_key": request.idempotency_key,
                         "receipt": receipt_json(reply.receipt)})  # fmt: skip
        played = text_format.MessageToString(action, as_one_line=True)
        print(f"v{reply.version}: played {played}", flush=True)

    if not finished:
        print("the watch ended before the game did", file=sys.stderr)
        return 1

    # 6. The result, and the dice checked against the commitment made before any roll.
    ids, scores = finished["player_ids"], finished["scores"]
    places = [" = ".join(f"{ids[s]} ({scores[s]})" for s in group) for group in finished["ranking"]]
    print(f"game over after {moves} moves of ours; last receipt at v{receipts[-1].version}")
    print("ranking: " + "   ".join(f"{i}. {who}" for i, who in enumerate(places, start=1)))
    seed = ""
    for _ in range(50):  # the seed is revealed just after GameFinished is recorded
        try:
            got = dice.GetReveal(protos.GetRevealRequest(game_id=game_id), timeout=10)
            seed = got.reveal.server_seed
            break
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.FAILED_PRECONDITION:
                raise
            time.sleep(0.1)
    ok = hashlib.sha256(bytes.fromhex(seed)).hexdigest() == commitment_of_dice
    print(f"dice: revealed seed {'matches' if ok else 'DOES NOT MATCH'} the commitment")
    if args.evidence:
        # The signed heads the dice service and the ledger show now: kept, they are what a
        # dice log or journal rewritten and re-signed later contradicts.
        heads = dice.GetLogHeads(protos.GetLogHeadsRequest(game_id=game_id), timeout=10)
        ledger = Stub(protos, channel_to(args.ledger, args.tls_ca), "LedgerService")
        head = ledger_head_over_end(protos, ledger, game_id)
        ledger_heads = [head.SerializeToString().hex()] if head is not None else []
        evidence = {"game_id": game_id, "seat": seat, "accepted": accepted,
                    "ledger_heads": ledger_heads,
                    "dice_heads": [h.SerializeToString().hex() for h in heads.heads]}  # fmt: skip
        args.evidence.write_text(json.dumps(evidence, indent=1) + "\n")
        print(f"evidence: {args.evidence}")
    result = {"game_id": game_id, "seat": seat, "ranking": finished["ranking"],
              "player_ids": ids, "scores": scores, "dice_ok": ok}  # fmt: skip
    print("result: " + json.dumps(result))
    return 0 if ok else 1


def ledger_head_over_end(protos: Protos, ledger: Stub, game_id: str, seconds: float = 30) -> Any:
    """The ledger's signed tree head once it covers the game's anchor: the entry (no
    postings, event type GameFinished) that records the game's final chain head. The ledger
    signs about a second after it posts, so this waits for it; after `seconds` it settles for
    the latest head, saying so (None: the ledger has signed nothing yet)."""
    deadline = time.monotonic() + seconds
    while True:
        anchor = anchor_seq(protos, ledger, game_id)
        try:
            head = ledger.GetTreeHead(protos.GetTreeHeadRequest(), timeout=10).head
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.NOT_FOUND:  # NOT_FOUND: nothing signed yet
                raise
            head = None
        if anchor and head is not None and head.tree_size >= anchor:
            return head
        if time.monotonic() >= deadline:
            print("note: the ledger signed no head over the game's end in time", file=sys.stderr)
            return head
        time.sleep(0.2)


def anchor_seq(protos: Protos, ledger: Stub, game_id: str) -> int:
    """The journal position of the game's anchor entry (0: not posted yet)."""
    token = ""
    while True:
        page = ledger.ListEntries(
            protos.ListEntriesRequest(game_id=game_id, page_size=1000, page_token=token),
            timeout=10,
        )
        for entry in page.entries:
            if entry.event_type == "GameFinished" and not entry.postings:
                return int(entry.seq)
        if not page.next_page_token:
            return 0
        token = page.next_page_token


def receipt_json(receipt: Any) -> dict[str, Any]:
    """A receipt as an evidence file keeps it: bytes as lowercase hex."""
    return {"game_id": receipt.game_id, "version": receipt.version,
            "chain_head": receipt.chain_head.hex(), "key_id": receipt.key_id,
            "signature": receipt.signature.hex(), "time_unix_ms": receipt.time_unix_ms}  # fmt: skip


if __name__ == "__main__":
    try:
        sys.exit(main())
    except grpc.RpcError as err:  # a refused call: its status says why, a traceback does not
        print(f"error: {err.code().name}: {err.details()}", file=sys.stderr)  # type: ignore[attr-defined]
        sys.exit(1)
