"""Ledger checkpoints on a real nats-server: a restart from a checkpoint reaches the same
state as reading all of LEDGER; a SIGKILL between checkpoints loses nothing; a forged or
stale checkpoint is detected, counted, and the ledger rebuilds from the whole log."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from prometheus_client import REGISTRY

from boulevard.accounting import TreeHeadSigner
from boulevard.cli.audit_ledger import audit
from boulevard.cli.main import main as boulevard_cli
from boulevard.client.ledger import LedgerClient
from boulevard.platform.server import RunningService
from services.ledger import checkpoint as cp
from services.ledger.app import LedgerApp
from services.ledger.book import LedgerBook
from services.ledger.journal_log import LedgerLog
from services.ledger.poster import Poster
from tests.integration.ledger.support import (
    SEED_HEX,
    LedgerProcess,
    ledger_client,
    ledger_settings,
    money_events,
    publish_envelopes,
    running_ledger,
    synthetic_games,
    wait_for_size,
)
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration

BUCKET = "ledger_checkpoint"
SIGNER = TreeHeadSigner(bytes.fromhex(SEED_HEX))  # the tests' ledger key


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 64 entries, so a few hundred entries make several full chunks and a tail
    (the services in these tests run in this process, except the SIGKILLed one)."""
    monkeypatch.setattr(cp, "CHUNK", 64)


def checkpoint_count(outcome: str, reason: str = "") -> float:
    value = REGISTRY.get_sample_value(
        "boulevard_ledger_checkpoints_total", {"outcome": outcome, "reason": reason}
    )
    return value or 0.0


def rejections() -> float:
    """Checkpoints refused (the alarm), whatever the reason."""
    return sum(
        sample.value
        for family in REGISTRY.collect()
        if family.name == "boulevard_ledger_checkpoints"
        for sample in family.samples
        if sample.name.endswith("_total") and sample.labels.get("outcome") == "rejected"
    )


def rebuild_of(service: RunningService) -> tuple[str, int]:
    app = service.app
    assert isinstance(app, LedgerApp) and app.poster is not None
    return app.poster.last_rebuild


async def observed(client: LedgerClient, game_ids: set[str]) -> dict[str, Any]:
    """Everything a client can see of the ledger's state."""
    head, _, size = await client.tree_head()
    heads = [(h.head.tree_size, h.head.root_hash) async for h in client.tree_heads()]
    entries = [(e.seq, e.hash) async for e in client.entries()]
    proofs = await client.inclusion_proofs(
        head.head.tree_size, sorted({0, 1, size // 2, head.head.tree_size - 1})
    )
    return {
        "size": size,
        "heads": heads,
        "entries": entries,
        "balances": {g: await client.balances(g) for g in sorted(game_ids)},
        "proofs": proofs,
        "consistency": await client.consistency_proof(1, head.head.tree_size),
    }


async def test_a_restart_from_a_checkpoint_sees_what_a_full_rebuild_sees(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    first, _ = synthetic_games(games=6, events_per_game=60, seed=11)
    second, _ = synthetic_games(games=3, events_per_game=20, seed=12)
    games = {e.game_id for e in first + second}
    settings = ledger_settings(nats_server.url, tmp_path, ledger_checkpoint_every=50)
    await publish_envelopes(nc, first)
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        assert rebuild_of(service) == ("log", 0)
        await wait_for_size(client, money_events(first))
    loaded = checkpoint_count("loaded")
    # A tail after the checkpoint the clean stop wrote: the restart posts it on top.
    await publish_envelopes(nc, second)
    total = money_events(first + second)
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        source, from_checkpoint = rebuild_of(service)
        assert source == "checkpoint" and from_checkpoint == money_events(first)
        await wait_for_size(client, total)
        after_checkpoint = await observed(client, games)
        # `boulevard audit ledger`, against the key known out of band, passes.
        argv = ["audit", "ledger", "--address", service.address, "--no-reconcile",
                "--public-key", SIGNER.public_key.hex()]  # fmt: skip
        assert await asyncio.to_thread(boulevard_cli, argv) == 0
    assert checkpoint_count("loaded") == loaded + 1
    # Again from the new checkpoint (tail: nothing), and once from the whole log.
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        assert rebuild_of(service) == ("checkpoint", total)
        assert await observed(client, games) == after_checkpoint
    no_checkpoints = ledger_settings(nats_server.url, tmp_path, ledger_checkpoint_every=0)
    async with (
        running_ledger(no_checkpoints) as service,
        ledger_client(service.address) as client,
    ):
        assert rebuild_of(service) == ("log", 0)
        assert await observed(client, games) == after_checkpoint
    assert after_checkpoint["size"] == total > 3 * 64  # several full chunks and a tail


async def test_sigkill_between_checkpoints_loses_nothing(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    # Enough entries that the kill lands well before the end: with 30 games (2,362 entries)
    # a CI run's ledger posted them all between the check below and the kill.
    envelopes, expected = synthetic_games(games=120, events_per_game=120, seed=13)
    total = money_events(envelopes)
    await publish_envelopes(nc, envelopes)
    env = {"BOULEVARD_LEDGER_CHECKPOINT_EVERY": "500", "BOULEVARD_LOG_LEVEL": "info"}
    process = LedgerProcess(nats_server.url, tmp_path, **env).start()
    try:
        # Killed once a checkpoint is stored and entries are being posted after it.
        while True:
            assert process.process is not None and process.process.poll() is None, (
                process.log.read_text()
            )
            checkpointed = await stored_manifest_size(nc)
            if checkpointed >= 500 and await entry_messages(nc) - checkpointed >= 100:
                break
            await asyncio.sleep(0.005)
        process.kill()
        posted = await entry_messages(nc)
        assert posted < total, "killed too late to be between checkpoints"
        assert await stored_manifest_size(nc) < posted, "no tail after the checkpoint"
        process = LedgerProcess(nats_server.url, tmp_path, **env).start()
        async with ledger_client(process.address) as client:
            await wait_for_size(client, total)
            keys = [(e.game_id, e.version) async for e in client.entries()]
            assert len(keys) == len(set(keys)) == total
            for game_id in {e.game_id for e in envelopes}:
                want = {a: v for (g, a), v in expected.items() if g == game_id}
                assert await client.balances(game_id) == want
            report = await audit(client, reconcile_games=False, say=lambda _: None)
            assert report.ok, report.failure
    finally:
        process.stop()
    rebuilt = [
        json.loads(line)
        for line in process.log.read_text().splitlines()
        if '"ledger rebuilt"' in line
    ]
    assert rebuilt[-1]["source"] == "checkpoint" and rebuilt[-1]["from_checkpoint"] >= 500
    assert await entry_messages(nc) == total


async def test_a_checkpoint_write_cut_short_leaves_the_previous_one_whole(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    """What a SIGKILL in the middle of a checkpoint write leaves: the next chunk and the
    other state slot half written, the manifest not yet. The start uses the previous
    checkpoint, which names neither."""
    envelopes, _ = synthetic_games(games=5, events_per_game=60, seed=16)
    games = {e.game_id for e in envelopes}
    await publish_envelopes(nc, envelopes)
    settings = ledger_settings(nats_server.url, tmp_path, ledger_checkpoint_every=50)
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        await wait_for_size(client, money_events(envelopes))
        honest = await observed(client, games)
    stored = await Stored.read(nc)
    other = "a" if stored.body["state_slot"] == "b" else "b"
    await stored.kv.put(f"s.{other}.0", b"\x00\x00\x10\x00 half a state")
    await stored.kv.put(f"e.{stored.body['chunks']}.0", b"half a chunk")
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        assert rebuild_of(service) == ("checkpoint", honest["size"])
        assert await observed(client, games) == honest


async def entry_messages(nc: NATS) -> int:
    info = await nc.jetstream().stream_info("LEDGER", subjects_filter="ledger.entry.>")
    return sum((info.state.subjects or {}).values())


async def stored_manifest_size(nc: NATS) -> int:
    try:
        kv = await nc.jetstream().key_value(BUCKET)
        entry = await kv.get(cp.MANIFEST)
    except Exception:  # no bucket or no manifest yet
        return 0
    return int(json.loads(entry.value or b"{}")["body"]["tree_size"])


# Forgeries ------------------------------------------------------------------------------


class Stored:
    """The stored checkpoint, as whoever can write the bucket sees it (here: admin)."""

    def __init__(self, kv: Any, manifest: dict[str, Any]) -> None:
        self.kv = kv
        self.manifest = manifest
        self.body: dict[str, Any] = manifest["body"]

    @classmethod
    async def read(cls, nc: NATS) -> Stored:
        kv = await nc.jetstream().key_value(BUCKET)
        return cls(kv, json.loads((await kv.get(cp.MANIFEST)).value or b""))

    async def blob(self, key: str) -> bytes:
        parts: list[bytes] = []

        async def get(p: int) -> bytes | None:
            try:
                return (await self.kv.get(f"{key}.{p}")).value
            except Exception:
                return None

        p = 0
        while (part := await get(p)) is not None:
            parts.append(part)
            p += 1
        return cp._unframe(key, lambda i: parts[i] if i < len(parts) else None)

    async def put_blob(self, key: str, blob: bytes) -> None:
        for p, part in enumerate(cp._frame(blob)):
            await self.kv.put(f"{key}.{p}", part)

    async def state(self) -> tuple[dict[str, Any], bytes]:
        raw = zlib.decompress(await self.blob(f"s.{self.body['state_slot']}"))
        (length,) = struct.unpack_from("<I", raw)
        return json.loads(raw[4 : 4 + length]), raw[4 + length :]

    async def put_state(self, doc: dict[str, Any], tail: bytes) -> None:
        body = json.dumps(doc, separators=(",", ":")).encode()
        state = zlib.compress(struct.pack("<I", len(body)) + body + tail, 1)
        await self.put_blob(f"s.{self.body['state_slot']}", state)
        self.body["state_digest"] = hashlib.sha256(state).hexdigest()

    async def save(self, *, sign: bool) -> None:
        """Store the manifest: re-signed with the ledger's key (an attacker who stole it,
        so only the checks against LEDGER stand in the way), or with the old signature."""
        signature = SIGNER.sign_document(self.body).hex() if sign else self.manifest["signature"]
        manifest = {"body": self.body, "signature": signature}
        await self.kv.put(cp.MANIFEST, json.dumps(manifest).encode())


async def more_money_for_seat_0(s: Stored, *, sign: bool) -> None:
    doc, tail = await s.state()
    for item in doc["balances"]:
        if item[1] == "seat:0":
            item[2] += 1000
            break
    await s.put_state(doc, tail)
    await s.save(sign=sign)


async def wrong_frontier(s: Stored) -> None:
    s.body["frontier"][0] = hashlib.sha256(b"forged").hexdigest()
    await s.save(sign=True)


async def wrong_leaf(s: Stored) -> None:
    """A leaf hash changed in a full chunk, its digest recomputed: only the signed root
    can tell."""
    blob = bytearray(await s.blob("e.1"))
    blob[8 + 32 * 5] ^= 0xFF  # a byte of the sixth leaf hash
    await s.put_blob("e.1", bytes(blob))
    digests = []
    for i in range(s.body["chunks"]):
        digests.append(hashlib.sha256(await s.blob(f"e.{i}")).digest())
    s.body["chunks_digest"] = cp._chain(digests).hex()
    await s.save(sign=True)


async def past_the_end(s: Stored) -> None:
    for field in ("stream_seq", "head_stream_seq", "last_entry_stream_seq"):
        s.body[field] += 10_000
    await s.save(sign=True)


async def head_elsewhere(s: Stored) -> None:
    """The head sequence pointed at the last entry instead (a stale or mismatched
    manifest): LEDGER holds no such head there."""
    s.body["head_stream_seq"] = s.body["last_entry_stream_seq"] + 0
    s.body["last_entry_stream_seq"] -= 1
    await s.save(sign=True)


async def other_key(s: Stored) -> None:
    signature = TreeHeadSigner(bytes(32)).sign_document(s.body).hex()
    await s.kv.put(cp.MANIFEST, json.dumps({"body": s.body, "signature": signature}).encode())


async def another_stream(s: Stored) -> None:
    """A genuine checkpoint of another LEDGER (one replaced since, say)."""
    s.body["stream"] = "LEDGER_BEFORE_THE_RESTORE"
    await s.save(sign=True)


async def garbage(s: Stored) -> None:
    await s.kv.put(cp.MANIFEST, b"\x00 not json")


FORGERIES: dict[str, tuple[Callable[[Stored], Any], str]] = {
    "changed balance, old signature": (lambda s: more_money_for_seat_0(s, sign=False), "signature"),
    "changed balance, re-signed": (lambda s: more_money_for_seat_0(s, sign=True), "state"),
    "wrong frontier": (wrong_frontier, "frontier"),
    "wrong leaf hash": (wrong_leaf, "leaves"),
    "sequence past the end of LEDGER": (past_the_end, "beyond_log"),
    "head at the wrong sequence": (head_elsewhere, "head_mismatch"),
    "signed with another key": (other_key, "signature"),
    "made for another stream": (another_stream, "other_stream"),
    "not a manifest": (garbage, "malformed"),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
async def test_a_forged_checkpoint_is_detected_and_the_ledger_rebuilds(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path, forgery: str
) -> None:
    forge, reason = FORGERIES[forgery]
    envelopes, _ = synthetic_games(games=5, events_per_game=60, seed=14)
    games = {e.game_id for e in envelopes}
    await publish_envelopes(nc, envelopes)
    settings = ledger_settings(nats_server.url, tmp_path, ledger_checkpoint_every=50)
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        await wait_for_size(client, money_events(envelopes))
        honest = await observed(client, games)
    stored = await Stored.read(nc)
    assert stored.body["chunks"] >= 2
    await forge(stored)
    rejected = checkpoint_count("rejected", reason)
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        assert rebuild_of(service) == ("log", 0), "the forged checkpoint was used"
        assert checkpoint_count("rejected", reason) == rejected + 1
        assert await observed(client, games) == honest
        report = await audit(client, reconcile_games=False, say=lambda _: None)
        assert report.ok, report.failure
    # The clean stop wrote an honest checkpoint over it, which the next start uses.
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        assert rebuild_of(service) == ("checkpoint", honest["size"])
        assert await observed(client, games) == honest


async def test_a_checkpoint_the_bucket_cannot_answer_for_is_retried_not_an_alarm(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    """The on-call false alarm of issue 29: during a failover the bucket's read times out.
    That is "unreadable, will retry" (counted apart, no LEDGER ALARM), and the retry, once
    NATS answers again, loads the checkpoint instead of re-reading the whole log. The
    timeout here is real: the nats-server is paused with SIGSTOP while the ledger reads."""
    process = getattr(nats_server, "process", None)
    if process is None:
        pytest.skip("needs the nats-server binary's process (BOULEVARD_TEST_NATS=docker)")
    envelopes, _ = synthetic_games(games=4, events_per_game=60, seed=15)
    await publish_envelopes(nc, envelopes)
    settings = ledger_settings(nats_server.url, tmp_path, ledger_checkpoint_every=50)
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        await wait_for_size(client, money_events(envelopes))
        size = (await client.tree_head())[2]
    js = nc.jetstream(timeout=1.0)  # the reads that time out while the server is paused
    checkpoints = cp.LedgerCheckpoints(
        js,
        await js.key_value(BUCKET),
        bucket=BUCKET,
        stream=settings.ledger_stream,
        prefix=settings.ledger_subject_prefix,
        signer=SIGNER,
        every=50,
    )
    journal = LedgerLog(nc, settings.ledger_stream, settings.ledger_subject_prefix, 5.0)
    poster = Poster(
        nc, LedgerBook(), journal, SIGNER, games_stream=settings.games_stream,
        games_prefix=settings.games_subject_prefix, durable="unused", checkpoints=checkpoints,
        checkpoint_read_attempts=3, checkpoint_retry_seconds=2.0,
    )  # fmt: skip
    rejected = rejections()
    unreadable = checkpoint_count("unreadable", "TimeoutError")
    os.kill(process.pid, signal.SIGSTOP)
    try:
        loading = asyncio.create_task(poster._load_checkpoint())
        while checkpoint_count("unreadable", "TimeoutError") == unreadable:
            assert not loading.done(), "the read did not time out while NATS was paused"
            await asyncio.sleep(0.05)
    finally:
        os.kill(process.pid, signal.SIGCONT)
    assert await loading, "the retry after NATS answered again did not load the checkpoint"
    assert poster.book.size == size
    assert checkpoint_count("unreadable", "TimeoutError") == unreadable + 1
    assert rejections() == rejected  # no alarm


async def test_a_checkpoint_never_readable_falls_back_to_the_whole_log_without_an_alarm(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    """A bucket that never answers (here: read through a connection closed after the
    bucket was opened, so every read fails) costs only the full rebuild, after a bounded
    number of tries; still no alarm, because nothing shows that anyone wrote it."""
    envelopes, _ = synthetic_games(games=2, events_per_game=40, seed=16)
    await publish_envelopes(nc, envelopes)
    settings = ledger_settings(nats_server.url, tmp_path, ledger_checkpoint_every=20)
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        await wait_for_size(client, money_events(envelopes))
        size = (await client.tree_head())[2]
    lost = await nats_server.connect()  # type: ignore[attr-defined]
    js = lost.jetstream(timeout=1.0)
    checkpoints = cp.LedgerCheckpoints(
        js, await js.key_value(BUCKET), bucket=BUCKET, stream=settings.ledger_stream,
        prefix=settings.ledger_subject_prefix, signer=SIGNER, every=20,
    )  # fmt: skip
    await lost.close()
    journal = LedgerLog(nc, settings.ledger_stream, settings.ledger_subject_prefix, 5.0)
    poster = Poster(
        nc, LedgerBook(), journal, SIGNER, games_stream=settings.games_stream,
        games_prefix=settings.games_subject_prefix, durable="unused", checkpoints=checkpoints,
        checkpoint_read_attempts=2, checkpoint_retry_seconds=0.1,
    )  # fmt: skip
    rejected = rejections()
    await poster.rebuild()
    assert poster.last_rebuild == ("log", 0) and poster.book.size == size
    assert rejections() == rejected
