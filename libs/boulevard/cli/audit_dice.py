"""`boulevard audit dice <game_id>`: check every die roll and shuffle of a finished game
without trusting the operator.

Reads the game's signed outcome log (every record, every signed tree head, the service's
public key) from the dice service's public gRPC API and checks, locally: that the records are
exactly the signed ones (none removed, changed or added); that the server seed was committed
before the client seeds were known and each seat's seed is the one it committed to; that
every outcome re-derives from the revealed seed (`boulevard.fairness`, docs/fairness.md);
and, from the game's own log (the engine's WatchGame), that every recorded outcome was used
by exactly one ChanceResolved, in nonce order, as it was drawn. Prints one PASS line (with
notes, e.g. a seat that never revealed its seed), or the first failure with its code and
nonce. Exit codes: 0 pass, 1 verification failed, 2 could not audit (service
unreachable, unknown game, seed not revealed yet).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

import grpc

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.cli.exits import ExitCode
from boulevard.client.dice import DiceReader
from boulevard.contract.dice_log import PublishedOpening
from boulevard.fairness import RecordedOutcome, VerificationReport
from boulevard.platform import tls
from boulevard.platform.replicas import engine_channel
from boulevard.platform.settings import Settings
from boulevard.seats.watching import each_event

EXIT_PASS = ExitCode.OK
EXIT_FAIL = ExitCode.FAILED
EXIT_ERROR = ExitCode.CANNOT


class Tee(io.StringIO):
    """Prints through to `out` and keeps a copy: the report quotes the audit's verdict."""

    def __init__(self, out: TextIO) -> None:
        super().__init__()
        self.out = out

    def write(self, text: str) -> int:
        self.out.write(text)
        return super().write(text)

    def last(self) -> str:
        lines = [line for line in self.getvalue().splitlines() if line.strip()]
        return lines[-1] if lines else ""


def run(args: argparse.Namespace) -> int:
    settings = Settings()
    address = args.dice or f"{settings.grpc_host}:{settings.dice_port}"
    engine = (
        None if args.no_engine else (args.engine or f"{settings.grpc_host}:{settings.engine_port}")
    )
    dice_key = None
    if args.dice_key:
        try:
            dice_key = bytes.fromhex(args.dice_key)
        except ValueError:
            print("--dice-key must be 64 hex digits", file=sys.stderr)
            return EXIT_ERROR
    said = Tee(sys.stdout)
    with contextlib.redirect_stdout(said):
        code = asyncio.run(
            audit(
                args.game_id,
                address,
                as_json=args.json,
                call_timeout=args.timeout,
                engine=engine,
                dice_key=dice_key,
            )
        )
    if args.html and code != EXIT_ERROR:
        from boulevard.cli.report_data import write_dice_report

        written = write_dice_report(args.html, args.game_id, address, engine, code, said.last())
        print(f"report: {written}")
    return code


@dataclass
class GameUse:
    """What the game's own log says about its dice: the commitments it published in
    GameCreated and the outcomes its ChanceResolved events cite, in log order."""

    server_commitment: str = ""
    seat_commitments: list[str] = field(default_factory=list)
    cited: list[RecordedOutcome] = field(default_factory=list)
    client_seeds: tuple[str, ...] | None = None  # ClientSeedsFixed's, once fixed
    missing_seats: tuple[int, ...] = ()
    reveal_deadline_unix_ms: int | None = None

    def published(self) -> PublishedOpening:
        return PublishedOpening(
            self.server_commitment,
            tuple(self.seat_commitments),
            self.client_seeds,
            self.missing_seats,
            self.reveal_deadline_unix_ms,
        )


async def used_by_game(engine_address: str, game_id: str, call_timeout: float) -> GameUse:
    """The game's dice as its log records them, read through the engine's public WatchGame
    (a finished game's shuffles are no longer hidden)."""
    use = GameUse()
    async with engine_channel(engine_address) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        got = await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id), timeout=call_timeout)
        if got.status != engine_pb2.GAME_STATUS_FINISHED:
            raise ValueError("the game is not finished: its seed is not revealed yet")
        request = engine_pb2.WatchGameRequest(game_id=game_id)
        async for update in each_event(stub, request, timeout=max(call_timeout, 60.0)):
            payload = json.loads(update.event.payload)
            if update.event.type == "GameCreated":
                use.server_commitment = payload["seed_commitment"]
                use.seat_commitments = [s.get("seed_commitment", "") for s in payload["seats"]]
                use.reveal_deadline_unix_ms = int(payload.get("reveal_deadline_unix_ms", 0))
            elif update.event.type == "ClientSeedsFixed":
                use.client_seeds = tuple(str(c) for c in payload["client_seeds"])
                use.missing_seats = tuple(int(m) for m in payload.get("missing_seats", ()))
            elif update.event.type == "ChanceResolved":
                values = tuple(int(v) for v in payload["values"])
                use.cited.append(
                    RecordedOutcome(
                        nonce=int(payload["nonce"]),
                        kind=str(payload["kind"]),
                        count=len(values),
                        sides=int(payload["sides"]),
                        values=values,
                        purpose=str(payload["purpose"]),
                    )
                )
            if update.event.type == "GameFinished":
                break
    return use


async def audit(
    game_id: str,
    address: str,
    *,
    as_json: bool = False,
    call_timeout: float = 10.0,
    engine: str | None = None,
    dice_key: bytes | None = None,
) -> int:
    try:
        use = await used_by_game(engine, game_id, call_timeout) if engine is not None else None
        async with tls.channel(address) as channel:
            reader = DiceReader(channel, timeout=call_timeout)
            # The game's commitments and seeds against the signed dice log itself (not
            # GetCommitment, which is the service's word).
            report = await reader.audit_game(
                game_id,
                cited=use.cited if use else None,
                public_key=dice_key,
                published=use.published() if use else None,
            )
    except ValueError as err:
        message = f"cannot audit dice of {game_id}: {err}"
        if as_json:
            print(json.dumps({"game_id": game_id, "ok": False, "error": message}))
        else:
            print(message, file=sys.stderr)
        return EXIT_ERROR
    except grpc.aio.AioRpcError as err:
        message = f"cannot audit dice of {game_id}: {err.code().name}: {err.details()}"
        if as_json:
            print(json.dumps({"game_id": game_id, "ok": False, "error": message}))
        else:
            print(message, file=sys.stderr)
        return EXIT_ERROR
    _print(game_id, report, as_json)
    return EXIT_PASS if report.ok else EXIT_FAIL


def _print(game_id: str, report: VerificationReport, as_json: bool) -> None:
    if not as_json:
        print(f"{game_id}: {report.describe()}")
        return
    result: dict[str, Any] = {
        "game_id": game_id,
        "ok": report.ok,
        "checked": report.checked,
        "notes": list(report.notes),
    }
    if report.mismatch is not None:
        m = report.mismatch
        result["mismatch"] = {
            "code": m.code,
            "nonce": m.nonce,
            "message": m.message,
            "expected": list(m.expected) if m.expected is not None else None,
            "recorded": list(m.recorded) if m.recorded is not None else None,
        }
    print(json.dumps(result))


if __name__ == "__main__":
    # `python -m boulevard.cli.audit_dice <game_id> …`: `boulevard audit dice` on its own.
    # Imported only when this file is the program (then it is `__main__`, not this module):
    # the commands import this module, so an import of the entry point at the top would
    # make a circle.
    from boulevard.cli.main import main

    sys.exit(main(["audit", "dice", *sys.argv[1:]]))
