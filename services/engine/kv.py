"""The engine's key-value buckets on JetStream KV (snapshots, the games index)."""

from __future__ import annotations

from nats.aio.client import Client as NATS
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import BucketNotFoundError, KeyNotFoundError
from nats.js.kv import KeyValue as NatsKeyValue


class JetStreamKeyValue:
    def __init__(self, kv: NatsKeyValue) -> None:
        self.kv = kv

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
        return cls(kv)

    async def get(self, key: str) -> bytes | None:
        try:
            entry = await self.kv.get(key)
        except KeyNotFoundError:
            return None
        return entry.value

    async def put(self, key: str, value: bytes) -> None:
        await self.kv.put(key, value)

    async def keys(self) -> list[str]:
        try:
            return sorted(await self.kv.keys())
        except Exception as exc:  # nats-py raises NoKeysError on an empty bucket
            if type(exc).__name__ == "NoKeysError":
                return []
            raise
