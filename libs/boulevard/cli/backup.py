"""`boulevard backup STREAM FILE` and `boulevard restore FILE`: a JetStream stream to a file
and back, online, through JetStream's own snapshot and restore API (what `nats stream
backup`/`restore` use), so no extra binary is needed.

The file: the magic line `BOULEVARD-STREAM-BACKUP 1`, one JSON line with the stream's
config and state as the server gave them, then the server's snapshot bytes (opaque: an
S2-compressed archive of the stream's store, with the server's own checksums). Restore
refuses to overwrite an existing stream. Both connect as the `admin` NATS identity, which
may back up and restore but not delete a stream: restore into a fresh server (a lost node,
a new machine) or have the NATS operator delete the stream first, on purpose.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

MAGIC = b"BOULEVARD-STREAM-BACKUP 1\n"
CHUNK = 128 * 1024


class BackupError(Exception):
    pass


def _api_reply(msg: Msg) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads(msg.data or b"{}")
    error = reply.get("error")
    if error:
        raise BackupError(f"{error.get('description', error)} (code {error.get('err_code')})")
    return reply


async def backup_stream(nc: NATS, stream: str, path: Path, timeout: float = 30.0) -> int:
    """Write `stream` to `path` (atomically: a temporary file renamed at the end); the
    number of snapshot bytes."""
    inbox = nc.new_inbox()
    chunks: asyncio.Queue[Msg] = asyncio.Queue()

    async def on_chunk(msg: Msg) -> None:
        await chunks.put(msg)

    sub = await nc.subscribe(inbox, cb=on_chunk)
    try:
        request = {"deliver_subject": inbox, "chunk_size": CHUNK}
        header = _api_reply(
            await nc.request(
                f"$JS.API.STREAM.SNAPSHOT.{stream}", json.dumps(request).encode(), timeout
            )
        )
        meta = {"config": header["config"], "state": header["state"]}
        tmp = path.with_name(path.name + ".partial")
        size = 0
        # Owner-only: a GAMES backup holds the hidden order of running games' shuffles,
        # a LEDGER or KV one what only the services may read (docs/security.md).
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # an older .partial left behind keeps no wider mode
        with open(fd, "wb") as out:  # noqa: ASYNC230 - a local file, written as chunks come
            out.write(MAGIC)
            out.write(json.dumps(meta, separators=(",", ":")).encode() + b"\n")
            while True:
                msg = await asyncio.wait_for(chunks.get(), timeout)
                if not msg.data:  # the end (the server's headers say so too)
                    break
                out.write(msg.data)
                size += len(msg.data)
                if msg.reply:  # flow control: the server waits for these acks
                    await nc.publish(msg.reply, b"")
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(path)
        return size
    finally:
        await sub.unsubscribe()


def read_backup(path: Path) -> tuple[dict[str, Any], bytes]:
    data = path.read_bytes()
    if not data.startswith(MAGIC):
        raise BackupError(f"{path} is not a Boulevard stream backup")
    meta_line, sep, snapshot = data[len(MAGIC) :].partition(b"\n")
    if not sep:
        raise BackupError(f"{path} is truncated")
    meta: dict[str, Any] = json.loads(meta_line)
    return meta, snapshot


async def restore_stream(nc: NATS, path: Path, timeout: float = 30.0) -> dict[str, Any]:
    """Create the backed-up stream from `path`; the restored stream's state."""
    meta, snapshot = read_backup(path)
    stream = meta["config"]["name"]
    try:
        await nc.jetstream().stream_info(stream)
    except nats.js.errors.NotFoundError:
        pass
    else:
        raise BackupError(f"stream {stream} exists; delete it first to restore over it")
    reply = _api_reply(
        await nc.request(f"$JS.API.STREAM.RESTORE.{stream}", json.dumps(meta).encode(), timeout)
    )
    deliver = reply["deliver_subject"]
    for start in range(0, len(snapshot), CHUNK):
        _api_reply(await nc.request(deliver, snapshot[start : start + CHUNK], timeout))
    done = _api_reply(await nc.request(deliver, b"", timeout * 4))  # the end: it builds now
    state: dict[str, Any] = done.get("state", {})
    return state


async def _connect() -> NATS:
    """As the `admin` identity (its seed from BOULEVARD_NATS_NKEY_SEED or
    <data_dir>/nats-identities/admin.nk), over TLS when a CA is configured."""
    from boulevard.messaging.identities import ADMIN, inbox_prefix
    from boulevard.platform.settings import Settings
    from boulevard.platform.tls import client_ssl_context, nats_tls_url

    settings = Settings()
    url, tls = settings.nats_url, None
    if settings.tls_ca_file is not None:
        url, tls = nats_tls_url(url), client_ssl_context(settings.tls_ca_file)
    return await nats.connect(
        url.split(",") if "," in url else url,
        tls=tls,
        nkeys_seed_str=settings.nats_seed(ADMIN),
        inbox_prefix=inbox_prefix(ADMIN),
        connect_timeout=5,
        max_reconnect_attempts=0,
    )


def _run_backup(args: argparse.Namespace) -> int:
    async def go() -> int:
        nc = await _connect()
        try:
            return await backup_stream(nc, args.stream, args.file)
        finally:
            await nc.close()

    try:
        size = asyncio.run(go())
    except (BackupError, OSError, TimeoutError, RuntimeError, nats.errors.Error) as exc:
        print(f"backup failed: {exc}")
        return 1
    print(f"backed up {args.stream} to {args.file} ({size:,} bytes of snapshot)")
    return 0


def _run_restore(args: argparse.Namespace) -> int:
    async def go() -> dict[str, Any]:
        nc = await _connect()
        try:
            return await restore_stream(nc, args.file)
        finally:
            await nc.close()

    try:
        state = asyncio.run(go())
    except (BackupError, OSError, TimeoutError, RuntimeError, nats.errors.Error) as exc:
        print(f"restore failed: {exc}")
        return 1
    print(f"restored from {args.file}: {state.get('messages', 0)} messages, "
          f"last sequence {state.get('last_seq', 0)}")  # fmt: skip
    return 0
