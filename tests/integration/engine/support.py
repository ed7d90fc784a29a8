"""A small platform of its own for the engine's audit tests: a real nats-server (the test's
own, never the shared e2e one: these tests forge and rewrite), the dice service and the
engine in this process, with the receipt key and key history the test chooses; and what a
dishonest operator does with the store: restore a rewritten log into a fresh one."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.audit.signing import SigningKey
from boulevard.eventlog.jetstream import EXPECTED_LAST_SUBJECT_SEQ, MSG_ID
from boulevard.fairness import client_seed_commitment
from boulevard.platform.server import RunningService, start_service
from services.dice.app import DiceApp
from services.engine.app import EngineApp
from services.engine.settings import EngineSettings
from tests.integration.dice.support import dice_settings
from tests.support.identity import jwks_path, operator_md
from tests.support.keys import seat_key
from tests.support.nats import NatsHandle

TOKEN_KEY = "engine-audit-token-key-0123456789abcdef"


async def start_engine(
    server: NatsHandle, data: Path, key: SigningKey, history: Path | None = None
) -> RunningService:
    settings = EngineSettings(
        NATS_URL=server.url,  # type: ignore[call-arg]
        data_dir=data / "engine",
        token_key=TOKEN_KEY,  # type: ignore[arg-type]
        auth_jwks=jwks_path(),
        nats_identities_dir=server.identities_dir,
        engine_signing_key=key.seed.hex(),  # type: ignore[arg-type]
        engine_key_history_file=history,
        log_format="console",
        shutdown_grace_seconds=0.5,
    )
    return await start_service(EngineApp(settings), settings, port=0)


def dice_key_file(data: Path) -> Path:
    """Where `running_dice(server, data)` keeps the key that signs its dice logs' heads."""
    return data / "dice" / "dice" / "signing-key"


@asynccontextmanager
async def running_dice(server: NatsHandle, data: Path) -> AsyncIterator[RunningService]:
    settings = dice_settings(server.url, data / "dice", nats_identities_dir=server.identities_dir)
    service = await start_service(DiceApp(settings), settings, port=0)
    try:
        yield service
    finally:
        await service.stop()


def seed_of(game_request: str, seat: int) -> str:
    return f"{game_request}:{seat}"


async def create_game(
    stub: engine_pb2_grpc.EngineServiceStub, players: int = 2
) -> tuple[engine_pb2.CreateGameResponse, list[str]]:
    """A Las Vegas game whose seats hold `seat_key(i)` and committed to seeds, returned
    with the seeds (not revealed yet)."""
    request_id = uuid.uuid4().hex
    seeds = [seed_of(request_id, i) for i in range(players)]
    created = await stub.CreateGame(
        engine_pb2.CreateGameRequest(
            request_id=request_id,
            game="las_vegas",
            seats=[
                engine_pb2.SeatAssignment(
                    seat=i,
                    player_id=f"p{i}",
                    client_seed_commitment=client_seed_commitment(seeds[i]),
                    public_key=seat_key(i).public_hex,
                )
                for i in range(players)
            ],
        ),
        metadata=operator_md(),
    )
    return created, seeds


async def stored_log(stub: engine_pb2_grpc.EngineServiceStub, game_id: str) -> list[bytes]:
    page = await stub.GetGameLog(engine_pb2.GetGameLogRequest(game_id=game_id, page_size=1000))
    assert page.next_from_version == 0 and not any(e.redacted for e in page.envelopes)
    return [bytes(e.envelope) for e in page.envelopes]


async def restore(server: NatsHandle, game_id: str, log: Sequence[bytes]) -> None:
    """Write `log` as the game's history into `server`'s GAMES (made by an engine started
    on it), one commit per envelope, with the engine's own NATS identity: what an operator
    who rewrote a backup and restored it has stored."""
    nc = await server.connect("engine")
    try:
        js = nc.jetstream()
        last = 0
        for data in log:
            envelope = events_pb2.EventEnvelope.FromString(data)
            commit = events_pb2.EventCommit(
                first_version=envelope.version,
                events=[
                    events_pb2.StoredEvent(
                        event_id=envelope.event_id, type=envelope.type, data=data
                    )
                ],
            )
            ack = await js.publish(
                f"game.{game_id}",
                commit.SerializeToString(),
                headers={MSG_ID: envelope.event_id, EXPECTED_LAST_SUBJECT_SEQ: str(last)},
            )
            last = ack.seq
    finally:
        await nc.close()


async def copy_stream(source: NatsHandle, target: NatsHandle, stream: str, identity: str) -> int:
    """Every message of `stream` on `source`, in order, published to the same stream on
    `target` (made by its service) with `identity` and the messages' own headers but the
    expected-sequence check: the records of a restored backup, at the same sequences when
    `target`'s stream starts empty. Returns how many."""
    reader, writer = await source.connect(), await target.connect(identity)
    try:
        js = reader.jetstream()
        last = (await js.stream_info(stream)).state.last_seq
        for seq in range(1, last + 1):
            msg = await js.get_msg(stream, seq)
            headers = {
                k: v for k, v in (msg.headers or {}).items() if not k.startswith("Nats-Expected")
            }
            await writer.jetstream().publish(msg.subject, msg.data or b"", headers=headers)
        return last
    finally:
        await reader.close()
        await writer.close()
