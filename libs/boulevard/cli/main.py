"""The `boulevard` command."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from boulevard.cli import (
    audit_dice,
    audit_game,
    audit_ledger,
    backup,
    nats_identities,
    play,
    tls_certs,
    up,
    watch,
)
from boulevard.platform import tls


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="boulevard",
        description="Boulevard: run, play and audit Vegas board games on NATS and gRPC.",
    )
    parser.add_argument(
        "--tls-ca",
        metavar="FILE",
        default=None,
        help="verify the services' TLS certificates with this CA (default: "
        "BOULEVARD_TLS_CA_FILE; plaintext gRPC when neither is set)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    up.add_parser(sub)
    nats_identities.add_parser(sub)
    tls_certs.add_parser(sub)
    watch.add_parser(sub)
    backup.add_parsers(sub)
    play.add_parser(sub)
    audit = sub.add_parser(
        "audit", help="verify a game's dice or the money ledger without trusting the operator"
    )
    audit_sub = audit.add_subparsers(dest="audit_command", required=True, metavar="WHAT")
    audit_ledger.add_parser(audit_sub)
    audit_dice.add_parser(sub)  # finds `audit` and adds `dice` beside `ledger`
    audit_game.add_parser(sub)  # `game` and `all`
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.tls_ca:
        # Read by every gRPC channel the commands open (boulevard.platform.tls.channel).
        os.environ[tls.CA_ENV] = str(args.tls_ca)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
