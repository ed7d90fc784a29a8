"""A bot seat that keeps its seed back fails the audit (issue 25), on a real nats-server:
someone holding the matchmaker's identity publishes a match with a bot seat (the bot key,
a committed seed), the human reveals, the bot's reveal never comes, the deadline passes
and the engine fixes the seeds with the bot missing. The operator, who holds the bot's
seed, chose after seeing the human's: the game audit used to pass with a note."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.audit.game_log import GameAuditFailed, audit_game_log
from boulevard.audit.signing import SigningKey
from boulevard.fairness import client_seed_commitment
from boulevard.platform.auth import PlayerClaims, issue_token
from boulevard.platform.server import start_service
from services.engine.app import EngineApp
from services.engine.settings import EngineSettings
from tests.integration.dice.support import dice_settings, running_dice
from tests.integration.matchmaking.support import eventually
from tests.support.identity import jwks_path
from tests.support.keys import seat_key
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration

TOKEN_KEY = "engine-test-token-key-0123456789abcdef"
BOT_KEY = SigningKey(bytes([9]) * 32)


async def test_a_bot_seat_that_never_reveals_fails_the_audit(
    nc: NATS, nats_server: NatsHandle, tmp_path: Path
) -> None:
    url = nats_server.url
    settings = EngineSettings(
        NATS_URL=url,  # type: ignore[call-arg]
        token_key=TOKEN_KEY,  # type: ignore[arg-type]
        auth_jwks=jwks_path(),
        shutdown_grace_seconds=0.5,
        engine_reveal_seconds=2.0,
        engine_reveal_sweep_seconds=0.2,
    )
    match = events_pb2.MatchFormed(
        match_id="mbotwithheld",
        game="las_vegas",
        seats=[
            events_pb2.MatchSeat(
                seat=0, player_id="ann", public_key=seat_key(0).public_hex,
                client_seed_commitment=client_seed_commitment("ann's seed"),
            ),
            events_pb2.MatchSeat(
                seat=1, player_id="bot-1", bot=True, public_key=BOT_KEY.public_hex,
                client_seed_commitment=client_seed_commitment("the bot's seed"),
            ),
        ],
    )  # fmt: skip
    async with running_dice(dice_settings(url, tmp_path)):
        service = await start_service(EngineApp(settings), settings, port=0)
        try:
            await nc.jetstream().publish("mm.match_formed", match.SerializeToString())
            async with grpc.aio.insecure_channel(service.address) as channel:
                stub = engine_pb2_grpc.EngineServiceStub(channel)

                async def created() -> bool:
                    try:
                        await stub.GetGame(engine_pb2.GetGameRequest(game_id="mbotwithheld"))
                    except grpc.aio.AioRpcError:
                        return False
                    return True

                await eventually(created, within=20)
                token = issue_token(TOKEN_KEY.encode(), PlayerClaims("mbotwithheld", 0, "ann"), 600)
                await stub.RevealSeed(
                    engine_pb2.RevealSeedRequest(
                        game_id="mbotwithheld", player_token=token, client_seed="ann's seed"
                    )
                )

                async def fixed() -> bool:
                    got = await stub.GetGame(engine_pb2.GetGameRequest(game_id="mbotwithheld"))
                    return bool(got.to_act)

                await eventually(fixed, within=20)
                page = await stub.GetGameLog(engine_pb2.GetGameLogRequest(game_id="mbotwithheld"))
        finally:
            await service.stop()
    log = [bytes(e.envelope) for e in page.envelopes]
    redacted = frozenset(e.version for e in page.envelopes if e.redacted)
    envs = [events_pb2.EventEnvelope.FromString(d) for d in log]
    at = next(e.version for e in envs if e.type == "ClientSeedsFixed")
    with pytest.raises(GameAuditFailed) as failed:
        audit_game_log("mbotwithheld", log, redacted=redacted)
    assert failed.value.version == at, failed.value
    assert "bot seat 1 did not reveal its client seed" in failed.value.message
