"""Wiring of the ledger: streams, the LEDGER log, the GAMES poster, the gRPC servicer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

import grpc
import structlog
from nats.aio.client import Client as NATS

from boulevard.api.v1 import ledger_pb2, ledger_pb2_grpc
from boulevard.messaging.lag import sample_forever
from boulevard.messaging.streams import ensure_stream, platform_streams
from services.ledger.book import LedgerBook
from services.ledger.checkpoint import LedgerCheckpoints, open_bucket
from services.ledger.journal_log import LedgerLog
from services.ledger.poster import Poster
from services.ledger.reader import LedgerReader
from services.ledger.server import LedgerServicer
from services.ledger.settings import LedgerSettings, load_signer

log = structlog.get_logger(__name__)


class LedgerApp:
    name = "ledger"
    service_names: Sequence[str] = (
        ledger_pb2.DESCRIPTOR.services_by_name["LedgerService"].full_name,
    )

    def __init__(self, settings: LedgerSettings) -> None:
        self.settings = settings
        self.signer = load_signer(settings)
        self.book = LedgerBook()
        self.poster: Poster | None = None
        self.reader: LedgerReader | None = None
        self._sampling: asyncio.Task[None] | None = None

    async def start(self, nc: NATS) -> None:
        s = self.settings
        js = nc.jetstream()
        streams = platform_streams(s)
        await ensure_stream(js, streams["games"])
        await ensure_stream(js, streams["ledger"])
        journal = LedgerLog(
            nc, s.ledger_stream, s.ledger_subject_prefix, s.ledger_publish_timeout_seconds
        )
        checkpoints = None
        if s.ledger_checkpoint_every:
            checkpoints = LedgerCheckpoints(
                js,
                await open_bucket(js, s.ledger_checkpoint_bucket, s.stream_replicas),
                bucket=s.ledger_checkpoint_bucket,
                stream=s.ledger_stream,
                prefix=s.ledger_subject_prefix,
                signer=self.signer,
                every=s.ledger_checkpoint_every,
            )
        self.poster = Poster(
            nc,
            self.book,
            journal,
            self.signer,
            games_stream=s.games_stream,
            games_prefix=s.games_subject_prefix,
            durable=s.ledger_consumer,
            fetch_batch=s.ledger_fetch_batch,
            sign_every=s.ledger_sign_every,
            sign_interval=s.ledger_sign_interval_seconds,
            ack_wait=s.ledger_ack_wait_seconds,
            checkpoints=checkpoints,
        )
        await self.poster.start()
        # Its GAMES consumer's lag, and the replicas of the streams money depends on.
        self._sampling = asyncio.create_task(
            sample_forever(js, [(s.games_stream, s.ledger_consumer)],
                           [s.games_stream, s.ledger_stream]),
            name="ledger-lag",
        )  # fmt: skip
        self.reader = LedgerReader(self.book, journal, js, s.games_stream, s.games_subject_prefix)
        self.reader.public_key = self.signer.public_key
        log.info("ledger key", key_id=self.signer.key_id, public_key=self.signer.public_key.hex())

    def register(self, server: grpc.aio.Server) -> None:
        assert self.reader is not None, "start() first"
        ledger_pb2_grpc.add_LedgerServiceServicer_to_server(LedgerServicer(self.reader), server)

    async def stop(self) -> None:
        if self._sampling is not None:
            self._sampling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sampling
        if self.poster is not None:
            await self.poster.stop()
