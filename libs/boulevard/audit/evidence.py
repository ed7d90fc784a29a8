"""What a player keeps during a game, and what it proves afterwards (docs/auditing.md,
"Evidence a player keeps"). Pure: no I/O; the CLI reads the file and fetches what the
checks compare with.

An evidence file is one seat's record of a game, as JSON:

    {"game_id": …, "seat": n,
     "accepted": [{"kind": "action", "idempotency_key": k, "receipt": {…}},
                  {"kind": "reveal", "client_seed": s, "receipt": {…}},
                  {"kind": "reclaim", "expected_version": v, "receipt": {…}},
                  {"kind": "timeout", "receipt": {…}}, …],
     "dice_heads": [hex of a DiceTreeHead, …], "ledger_heads": [hex of a SignedTreeHead, …]}

Each entry of `accepted` is a call the engine answered with its signed receipt: the seat's
command with that idempotency key, its client seed, or its reclaim of the seat from the
platform's bot (ReclaimSeat, signed for that version), was in the log by the receipt's
version; a `timeout` entry is the player stream's receipt for the seat's own timeout
(WatchPlayerResponse.receipt): its SeatTimedOut was in the log by then. The heads are the
dice log's and the ledger's signed heads the client saw while playing. With the operator
holding every service key, these are what it cannot re-sign:

- a receipt binds the log's chain head at its version, so a rewritten history (re-chained
  and re-signed) contradicts it; and what the receipt was given for must be in the log by
  then, so a reveal (or move) accepted and later dropped shows;
- a kept head must be a prefix of what the service serves later (a consistency proof), so
  a dice log or ledger rewritten and re-signed — two histories under one key — shows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.audit.signing import Receipt

ACTION = "action"
REVEAL = "reveal"
RECLAIM = "reclaim"
TIMEOUT = "timeout"  # not a call: the player stream's receipt for the seat's timeout
KINDS = (ACTION, REVEAL, RECLAIM, TIMEOUT)


@dataclass(frozen=True, slots=True)
class Accepted:
    """One call the engine accepted for the seat, with the receipt it answered."""

    kind: str  # one of KINDS
    receipt: Receipt
    idempotency_key: str = ""  # ACTION: the command's key
    client_seed: str = ""  # REVEAL: the seed revealed
    expected_version: int = 0  # RECLAIM: the version the seat signed its reclaim for

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "receipt": self.receipt.to_json()}
        if self.kind == ACTION:
            data["idempotency_key"] = self.idempotency_key
        elif self.kind == REVEAL:
            data["client_seed"] = self.client_seed
        elif self.kind == RECLAIM:
            data["expected_version"] = self.expected_version
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Accepted:
        kind = str(data["kind"])
        if kind not in KINDS:
            raise ValueError(f"unknown kind of accepted call {kind!r}")
        return cls(
            kind,
            Receipt.from_json(data["receipt"]),
            idempotency_key=str(data.get("idempotency_key", "")),
            client_seed=str(data.get("client_seed", "")),
            expected_version=int(data.get("expected_version", 0)),
        )


@dataclass
class Evidence:
    """One seat's evidence of one game (see the module's docstring)."""

    game_id: str
    seat: int
    accepted: list[Accepted] = field(default_factory=list)
    dice_heads: list[bytes] = field(default_factory=list)  # serialized DiceTreeHead
    ledger_heads: list[bytes] = field(default_factory=list)  # serialized SignedTreeHead

    @property
    def receipts(self) -> list[Receipt]:
        return [a.receipt for a in self.accepted]

    def to_json(self) -> dict[str, Any]:
        return {
            "game_id": self.game_id,
            "seat": self.seat,
            "accepted": [a.to_json() for a in self.accepted],
            "dice_heads": [h.hex() for h in self.dice_heads],
            "ledger_heads": [h.hex() for h in self.ledger_heads],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Evidence:
        return cls(
            str(data["game_id"]),
            int(data["seat"]),
            [Accepted.from_json(a) for a in data.get("accepted", ())],
            [bytes.fromhex(h) for h in data.get("dice_heads", ())],
            [bytes.fromhex(h) for h in data.get("ledger_heads", ())],
        )

    @classmethod
    def loads(cls, text: str) -> Evidence:
        """Raises ValueError (or KeyError) on a file that is not evidence."""
        return cls.from_json(json.loads(text))


def receipt_from_pb(pb: engine_pb2.Receipt) -> Receipt:
    """A receipt as the engine answers it (SubmitAction, RevealSeed), as kept."""
    return Receipt(
        pb.game_id,
        pb.version,
        bytes(pb.chain_head),
        pb.key_id,
        bytes(pb.signature),
        pb.time_unix_ms,
    )


def receipt_to_pb(receipt: Receipt) -> engine_pb2.Receipt:
    """A receipt as the engine answers it (the inverse of `receipt_from_pb`)."""
    return engine_pb2.Receipt(
        game_id=receipt.game_id,
        version=receipt.version,
        chain_head=receipt.chain_head,
        key_id=receipt.key_id,
        signature=receipt.signature,
        time_unix_ms=receipt.time_unix_ms,
    )


def contradiction(evidence: Evidence, log: Sequence[bytes]) -> tuple[int, str] | None:
    """Where the log (envelope bytes as served, version 1 first) contradicts what the engine
    signed it accepted for the seat: (version, what is wrong), or None. The receipts' own
    signatures and chain heads are checked with the log's other receipts (game_log)."""
    envelopes: dict[int, events_pb2.EventEnvelope] = {}
    for i, data in enumerate(log):
        try:
            envelopes[i + 1] = events_pb2.EventEnvelope.FromString(data)
        except DecodeError:
            continue  # the chain check names it
    for a in sorted(evidence.accepted, key=lambda a: a.receipt.version):
        r = a.receipt
        if r.game_id != evidence.game_id:
            return (
                r.version,
                f"the evidence of game {evidence.game_id} holds a receipt for {r.game_id}",
            )
        at = envelopes.get(r.version)
        if at is None:
            return r.version, (
                f"the engine signed a receipt at version {r.version}; the log ends at "
                f"{len(log)}: history was deleted"
            )
        if r.time_unix_ms and r.time_unix_ms != at.time_unix_ms:
            return r.version, (
                f"the engine's receipt says it accepted version {r.version} at "
                f"{r.time_unix_ms}; the log's envelope says {at.time_unix_ms}"
            )
        upto = [envelopes[v] for v in sorted(envelopes) if v <= r.version]
        if a.kind == REVEAL and not any(_reveals(e, evidence.seat, a.client_seed) for e in upto):
            return r.version, (
                f"the engine signed that seat {evidence.seat}'s client seed was revealed by "
                f"version {r.version}, but the log holds no such reveal: the reveal was "
                "dropped"
            )
        if a.kind == ACTION and not any(
            _accepts(e, evidence.seat, a.idempotency_key) for e in upto
        ):
            return r.version, (
                f"the engine signed that seat {evidence.seat}'s command "
                f"{a.idempotency_key!r} was accepted by version {r.version}, but the log "
                "holds no such command"
            )
        if a.kind == RECLAIM and not any(
            _reclaims(e, evidence.seat, a.expected_version) for e in upto
        ):
            return r.version, (
                f"the engine signed that seat {evidence.seat} took its seat back (signed for "
                f"version {a.expected_version}) by version {r.version}, but the log holds no "
                "such reclaim: the platform's bot kept playing it"
            )
        if a.kind == TIMEOUT and not any(_times_out(e, evidence.seat) for e in upto):
            return r.version, (
                f"the engine signed that seat {evidence.seat} had timed out by version "
                f"{r.version}, but the log holds no such timeout"
            )
    return None


def _payload(env: events_pb2.EventEnvelope) -> dict[str, Any]:
    try:
        data = json.loads(env.payload)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _reveals(env: events_pb2.EventEnvelope, seat: int, seed: str) -> bool:
    if env.type != "ClientSeedRevealed":
        return False
    p = _payload(env)
    return p.get("seat") == seat and p.get("client_seed") == seed


def _accepts(env: events_pb2.EventEnvelope, seat: int, key: str) -> bool:
    if env.type != "CommandAccepted":
        return False
    p = _payload(env)
    return p.get("seat") == seat and p.get("idempotency_key") == key


def _reclaims(env: events_pb2.EventEnvelope, seat: int, expected_version: int) -> bool:
    if env.type != "SeatReclaimed":
        return False
    p = _payload(env)
    return p.get("seat") == seat and p.get("expected_version") == expected_version


def _times_out(env: events_pb2.EventEnvelope, seat: int) -> bool:
    return env.type == "SeatTimedOut" and _payload(env).get("seat") == seat
