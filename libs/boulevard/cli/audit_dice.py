"""`boulevard audit dice <game_id>`: check every die roll and shuffle of a finished game
without trusting the operator.

Reads the commitment, the recorded outcomes and the revealed seed from the dice service's
public gRPC API and re-derives each outcome locally with `boulevard.fairness` (the same
procedure as docs/fairness.md). Prints one PASS line, or the first outcome that does not
match with its nonce. Exit codes: 0 pass, 1 verification failed, 2 could not audit (service
unreachable, unknown game, seed not revealed yet).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any

import grpc

from boulevard.client.dice import DiceReader
from boulevard.fairness import VerificationReport
from boulevard.platform.settings import Settings

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_ERROR = 2

SubParsers = argparse._SubParsersAction


def add_parser(subparsers: SubParsers[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add `audit dice` to a CLI. Give it the top-level subparsers: an `audit` command is
    created, or reused if another module (e.g. `audit ledger`) added it first."""
    audit = subparsers.choices.get("audit")
    if audit is None:
        audit = subparsers.add_parser(
            "audit", help="verify a game's dice or money without trusting the operator"
        )
    audit_commands = _subparsers_of(audit)
    if audit_commands is None:
        audit_commands = audit.add_subparsers(dest="audit_command", required=True, metavar="WHAT")
    parser = audit_commands.add_parser(
        "dice",
        help="re-derive every roll and shuffle of a game from its revealed seed",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _arguments(parser)
    parser.set_defaults(func=run)
    return parser


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("game_id", help="the game to audit")
    parser.add_argument(
        "--dice",
        metavar="HOST:PORT",
        default=None,
        help="the dice service's gRPC address (default: BOULEVARD_GRPC_HOST and "
        "BOULEVARD_DICE_PORT, i.e. 127.0.0.1:50053)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per call")


def _subparsers_of(parser: argparse.ArgumentParser) -> SubParsers[argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def run(args: argparse.Namespace) -> int:
    address = args.dice
    if address is None:
        settings = Settings()
        address = f"{settings.grpc_host}:{settings.dice_port}"
    return asyncio.run(audit(args.game_id, address, as_json=args.json, call_timeout=args.timeout))


async def audit(
    game_id: str, address: str, *, as_json: bool = False, call_timeout: float = 10.0
) -> int:
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            report = await DiceReader(channel, timeout=call_timeout).audit_game(game_id)
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
    result: dict[str, Any] = {"game_id": game_id, "ok": report.ok, "checked": report.checked}
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


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m boulevard.cli.audit_dice <game_id>`, the same command on its own."""
    parser = argparse.ArgumentParser(
        prog="boulevard audit dice",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
