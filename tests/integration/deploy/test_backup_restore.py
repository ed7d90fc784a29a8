"""A stream survives a backup and a restore: `boulevard backup GAMES FILE` while the server
runs, `boulevard restore FILE` into a fresh server (the machine was lost), and every event
reads back the same, with the same sequences (so the expected-version appends go on where
they were). A restore never overwrites a live stream, and a damaged file is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from boulevard.cli.backup import BackupError, backup_stream, read_backup, restore_stream
from boulevard.eventlog.jetstream import JetStreamEventStore
from boulevard.eventlog.store import NewEvent
from boulevard.messaging.streams import StreamSpec, ensure_stream
from tests.support.nats import TestNats

pytestmark = pytest.mark.integration


async def fill(nc: NATS, games: int = 20, events: int = 30) -> JetStreamEventStore:
    await ensure_stream(nc.jetstream(), StreamSpec("GAMES", ("game.>",)))
    store = JetStreamEventStore(nc, "GAMES", "game")
    for g in range(games):
        for v in range(0, events, 3):
            batch = [NewEvent(f"g{g}-e{v + i}", "Thing", os.urandom(64)) for i in range(3)]
            await store.append(f"g{g}", batch, v)
    return store


async def everything(store: JetStreamEventStore, games: int = 20) -> dict[str, list[tuple]]:
    out = {}
    for g in range(games):
        out[f"g{g}"] = [(r.version, r.event_id, r.data) for r in await store.read(f"g{g}", 1)]
    return out


async def test_backup_delete_restore_gives_back_every_event(
    nc: NATS, nats_server: TestNats, tmp_path: Path
) -> None:
    store = await fill(nc)
    before = await everything(store)
    info = await nc.jetstream().stream_info("GAMES")
    backup = tmp_path / "games.backup"
    (tmp_path / "games.backup.partial").write_bytes(b"left by a crashed backup")
    (tmp_path / "games.backup.partial").chmod(0o644)
    size = await backup_stream(nc, "GAMES", backup)
    assert size > 0
    # Owner-only, whatever the umask or a leftover partial file: it holds running games'
    # hidden shuffles.
    assert backup.stat().st_mode & 0o777 == 0o600
    meta, _ = read_backup(backup)
    assert meta["config"]["name"] == "GAMES"
    assert meta["state"]["messages"] == info.state.messages

    with pytest.raises(BackupError, match="exists"):
        await restore_stream(nc, backup)  # never over a live stream

    fresh = TestNats(tmp_path / "new-machine" / "nats").start()
    try:
        nc2 = await fresh.connect()
        state = await restore_stream(nc2, backup)
        assert state["messages"] == info.state.messages
        assert state["last_seq"] == info.state.last_seq
        restored = JetStreamEventStore(nc2, "GAMES", "game")
        assert await everything(restored) == before
        # and appends go on from where the games were
        await restored.append("g0", [NewEvent("g0-next", "Thing", b"x")], 30)
        assert (await restored.read("g0", 31))[0].event_id == "g0-next"
        await nc2.close()
    finally:
        fresh.stop()


async def test_a_damaged_backup_is_refused(nc: NATS, tmp_path: Path) -> None:
    await fill(nc, games=3)
    backup = tmp_path / "games.backup"
    await backup_stream(nc, "GAMES", backup)
    data = bytearray(backup.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the snapshot
    damaged = tmp_path / "damaged.backup"
    damaged.write_bytes(bytes(data))
    fresh = TestNats(tmp_path / "new-machine" / "nats").start()
    try:
        nc2 = await fresh.connect()
        with pytest.raises(BackupError):
            await restore_stream(nc2, damaged)
        await nc2.close()
    finally:
        fresh.stop()
    (tmp_path / "not-a-backup").write_bytes(b"hello")
    with pytest.raises(BackupError, match="not a Boulevard stream backup"):
        read_backup(tmp_path / "not-a-backup")


def test_the_cli_backs_up_and_restores(nats_server: TestNats, tmp_path: Path) -> None:
    import asyncio

    async def prepare() -> None:
        nc = await nats_server.connect()
        await fill(nc, games=2)
        await nc.close()

    asyncio.run(prepare())
    env = {
        **os.environ,
        "NATS_URL": nats_server.url,
        "BOULEVARD_NATS_IDENTITIES_DIR": str(nats_server.identities_dir),
    }
    cli = [sys.executable, "-m", "boulevard.cli.main"]
    backup = tmp_path / "g.backup"
    done = subprocess.run([*cli, "backup", "GAMES", str(backup)], env=env,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "backed up GAMES" in done.stdout
    again = subprocess.run([*cli, "restore", str(backup)], env=env,
                           capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert again.returncode == 1 and "exists" in again.stdout
