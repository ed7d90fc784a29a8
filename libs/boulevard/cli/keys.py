"""`boulevard keys history`: the operator publishes the platform's keys as a key history
(docs/auditing.md, "Pinned keys") for auditors to keep and pin with `audit … --trust FILE`.

It reads each role's current key from the data dir (`<data_dir>/{engine,dice,ledger,bots}/
signing-key`, the files the services make on first start) and extends FILE (made when
missing): a role whose current key is already its last entry is left as it is; a new key
is added signed by the previous one, whose seed is given with `--previous ROLE=SEEDFILE`
(kept from before the rotation). Only public keys and signatures are written.
Exit codes: 0 written, 2 cannot (a missing previous key, an unreadable file).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from boulevard.audit.keys import ROLES, KeyHistory
from boulevard.audit.signing import SigningKey
from boulevard.cli.exits import ExitCode
from boulevard.platform.settings import Settings


def run(args: argparse.Namespace) -> int:
    data_dir: Path = args.data_dir or Settings().data_dir
    out: Path = args.out
    try:
        history = KeyHistory.loads(out.read_text(encoding="utf-8")) if out.exists() else None
        previous = {}
        for item in args.previous or ():
            role, _, path = item.partition("=")
            if role not in ROLES or not path:
                raise ValueError(
                    f"--previous {item!r}: expected ROLE=SEEDFILE, ROLE one of {ROLES}"
                )
            previous[role] = SigningKey.from_hex(Path(path).read_text())
        history = history or KeyHistory()
        problem = history.problem()
        if problem:
            raise ValueError(f"{out} does not verify: {problem}")
        now = int(time.time() * 1000)
        for role in ROLES:
            path = data_dir / role / "signing-key"
            if not path.exists():
                print(f"note: no {role} key at {path}: left out", file=sys.stderr)
                continue
            current = SigningKey.from_hex(path.read_text())
            history = history.extended(role, current.public_hex, now, previous.get(role))
    except (OSError, ValueError) as err:
        print(f"cannot write the key history: {err}", file=sys.stderr)
        return ExitCode.CANNOT
    out.write_text(history.dumps(), encoding="utf-8")
    for role in ROLES:
        if history.keys(role):
            print(f"{role}: {history.current(role)} ({len(history.keys(role))} key(s))")
    print(f"key history: {out}")
    return ExitCode.OK
