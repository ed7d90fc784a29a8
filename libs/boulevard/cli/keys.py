"""`boulevard keys history` and `boulevard keys pin` (docs/auditing.md, "Pinned keys").

`keys history` is the operator's: it publishes the platform's keys as a key history. It
reads each role's current key from the data dir (`<data_dir>/{engine,dice,ledger,bots}/
signing-key`, the files the services make on first start; `boulevard up` passes the bot
key it keeps in secrets.env) and extends FILE (by default `<data_dir>/keys/history.json`,
the file the engine serves in GetEngineKeyResponse.key_history; made when missing): a role
whose current key is already its last entry is left as it is; a new key is added signed by
the previous one, whose seed is given with `--previous ROLE=SEEDFILE` (kept from before the
rotation). Only public keys and signatures are written. Exit codes: 0 written, 2 cannot (a
missing previous key, an unreadable file).

`keys pin` is the auditor's: it fetches the history the platform serves and keeps it in
FILE. A first pin takes the platform's word (and says so); later pins accept the served
history only if it verifies and extends the kept one, so a key the operator swapped in
since is refused. Exit codes: 0 pinned, 1 the served history rewrites the kept one or does
not verify, 2 cannot (no history served, an unreachable engine, an unreadable file).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import grpc

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.audit.keys import (
    ROLES,
    HistoryRewritten,
    KeyHistory,
    key_history_path,
    trusted_history,
)
from boulevard.audit.signing import SigningKey
from boulevard.cli.exits import ExitCode
from boulevard.platform.replicas import engine_channel
from boulevard.platform.settings import Settings


def publish(
    data_dir: Path,
    out: Path,
    previous: dict[str, SigningKey] | None = None,
    current: dict[str, SigningKey] | None = None,
    now_unix_ms: int | None = None,
) -> KeyHistory:
    """Extend the history at `out` (made when missing) with each role's current key: from
    `current` when given there, else from the data dir's key file (a role with neither is
    left out). Written atomically. ValueError when `out` does not verify or a changed key
    has no `previous` key to sign it."""
    history = KeyHistory.loads(out.read_text(encoding="utf-8")) if out.exists() else KeyHistory()
    problem = history.problem()
    if problem:
        raise ValueError(f"{out} does not verify: {problem}")
    now = int(time.time() * 1000) if now_unix_ms is None else now_unix_ms
    for role in ROLES:
        key = (current or {}).get(role)
        path = data_dir / role / "signing-key"
        if key is None and path.exists():
            key = SigningKey.from_hex(path.read_text())
        if key is None:
            print(f"note: no {role} key at {path}: left out", file=sys.stderr)
            continue
        history = history.extended(role, key.public_hex, now, (previous or {}).get(role))
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.write_text(history.dumps(), encoding="utf-8")
    partial.replace(out)  # the engine reads it on every GetEngineKey: never half a file
    return history


def run(args: argparse.Namespace) -> int:
    data_dir: Path = args.data_dir or Settings().data_dir
    out: Path = args.out or key_history_path(data_dir)
    try:
        previous = {}
        for item in args.previous or ():
            role, _, path = item.partition("=")
            if role not in ROLES or not path:
                raise ValueError(
                    f"--previous {item!r}: expected ROLE=SEEDFILE, ROLE one of {ROLES}"
                )
            previous[role] = SigningKey.from_hex(Path(path).read_text())
        history = publish(data_dir, out, previous)
    except (OSError, ValueError, KeyError) as err:
        print(f"cannot write the key history: {err}", file=sys.stderr)
        return ExitCode.CANNOT
    for role in ROLES:
        if history.keys(role):
            print(f"{role}: {history.current(role)} ({len(history.keys(role))} key(s))")
    print(f"key history: {out}")
    return ExitCode.OK


async def served_history(address: str, timeout: float) -> KeyHistory | None:
    """The key history the platform serves (GetEngineKey), None when it publishes none.
    ValueError (or KeyError) on a served document that is not a key history."""
    async with engine_channel(address) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        got = await stub.GetEngineKey(engine_pb2.GetEngineKeyRequest(), timeout=timeout)
    return KeyHistory.loads(got.key_history) if got.key_history else None


def pin(args: argparse.Namespace) -> int:
    trust: Path = args.trust
    address: str = args.engine or f"{Settings().grpc_host}:{Settings().engine_port}"
    try:
        kept = KeyHistory.loads(trust.read_text(encoding="utf-8")) if trust.exists() else None
        served = asyncio.run(served_history(address, args.timeout))
    except (OSError, ValueError, KeyError) as err:
        print(f"cannot pin the key history: {err}", file=sys.stderr)
        return ExitCode.CANNOT
    except grpc.aio.AioRpcError as err:
        print(f"cannot pin the key history: {err.code().name}: {err.details()}", file=sys.stderr)
        return ExitCode.CANNOT
    if served is None:
        print(f"cannot pin the key history: the engine at {address} serves none", file=sys.stderr)
        return ExitCode.CANNOT
    try:
        history = trusted_history(kept, served)
    except HistoryRewritten as err:
        print(f"FAIL {err}")
        return ExitCode.FAILED
    assert history is not None  # served is not None
    added = len(history.entries) - (len(kept.entries) if kept else 0)
    trust.write_text(history.dumps(), encoding="utf-8")
    if kept is None:
        print(f"pinned {len(history.entries)} key(s) in {trust}: the platform's word, from now on")
    else:
        print(f"PASS the served key history extends {trust}: {added} key(s) added")
    return ExitCode.OK
