"""The engine's key-value buckets on JetStream KV (snapshots, the games index)."""

from __future__ import annotations

import json

from nats.aio.client import Client as NATS
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import BucketNotFoundError, KeyNotFoundError
from nats.js.kv import KeyValue as NatsKeyValue


class JetStreamKeyValue:
    def __init__(self, kv: NatsKeyValue, nc: NATS | None = None, bucket: str = "") -> None:
        self.kv = kv
        self.nc = nc
        self.bucket = bucket

    @classmethod
    async def open(cls, nc: NATS, bucket: str, replicas: int = 1) -> JetStreamKeyValue:
        js = nc.jetstream()
        try:
            kv = await js.key_value(bucket)
        except BucketNotFoundError:
            kv = await js.create_key_value(
                KeyValueConfig(
                    bucket=bucket, history=1, storage=StorageType.FILE, replicas=replicas
                )
            )
        return cls(kv, nc, bucket)

    async def get(self, key: str) -> bytes | None:
        try:
            entry = await self.kv.get(key)
        except KeyNotFoundError:
            return None
        return entry.value

    async def put(self, key: str, value: bytes) -> int:
        """Store `value` under `key`; the revision it got (its sequence in the bucket's
        stream)."""
        revision: int = await self.kv.put(key, value)
        return revision

    async def keys(self) -> list[str]:
        """Every key in the bucket, sorted. Read from the bucket's stream state (STREAM.INFO
        with a subjects filter, paged), not with nats-py's `kv.keys()`: its watcher can
        signal the end of the initial replay early while other keys are being written
        (nats.py #842, #995) and return a partial list — a game missing from ListGames.
        ListGames no longer calls this (it reads the in-memory games index, games_index.py);
        bench/list_games.py measures it as the former per-call cost."""
        if self.nc is None:
            return sorted(await self._watched_keys())
        prefix = f"$KV.{self.bucket}."
        keys: list[str] = []
        while True:
            reply = await self.nc.request(
                f"$JS.API.STREAM.INFO.KV_{self.bucket}",
                json.dumps({"subjects_filter": f"{prefix}>", "offset": len(keys)}).encode(),
                timeout=10,
            )
            info = json.loads(reply.data)
            if "error" in info:
                raise RuntimeError(f"listing {self.bucket}: {info['error']}")
            subjects = (info.get("state") or {}).get("subjects") or {}
            keys.extend(subject[len(prefix) :] for subject in subjects)
            if not subjects or len(keys) >= int(info.get("total", 0)):
                return sorted(keys)

    async def _watched_keys(self) -> list[str]:
        try:
            return list(await self.kv.keys())
        except Exception as exc:  # nats-py raises NoKeysError on an empty bucket
            if type(exc).__name__ == "NoKeysError":
                return []
            raise
