"""`boulevard play <game>`: sit down at a table and play, in the terminal.

Queues through matchmaking for a table of --seats (bots take the seats nobody takes within
--bot-fill seconds), then plays the seat it is given through the engine's public gRPC API:
the board as the game draws it, your money and hand, the other players' moves in words as
they happen, and your legal actions as a menu (arrows and enter; `s` highlights the move the
game's bot would make; `q` quits). The dice service's commitment is shown when the game is
created and verified when it ends (VerifyGame, and every outcome re-derived here). With
--evidence FILE, the seat's receipts and the dice and ledger heads shown at the end are
written there, for `boulevard audit game --evidence FILE`.

Joining and playing go through the client library (`MatchmakingClient.join`,
`MatchmakingClient.seat_player`): whatever a seat must carry, it carries for this app too.

Exit codes: 0 the game ended and its dice verified, 1 the dice did not verify, 2 cannot
play (unreachable, refused), 130 quit before the end.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import hashlib
import os
import random
import sys
from pathlib import Path

import grpc
from textual.markup import escape

from boulevard.api.v1 import dice_pb2_grpc, engine_pb2, engine_pb2_grpc, ledger_pb2_grpc
from boulevard.audit.signing import SigningKey
from boulevard.cli.login import issuer_folder, local_issuer
from boulevard.cli.screen import GameScreen
from boulevard.client.dice import DiceReader
from boulevard.client.matchmaking import MatchmakingClient
from boulevard.contract.clocks import ClockRequest, parse_time_control
from boulevard.games import get_game
from boulevard.games.clock import ClockError
from boulevard.platform import tls
from boulevard.platform.identity import bearer
from boulevard.platform.keys import load_key
from boulevard.platform.replicas import engine_channel
from boulevard.platform.settings import Settings
from boulevard.seats.player import SeatPlayer, keep_heads, reclaim_if_absent
from boulevard.seats.watching import WATCH_RETRIES, each_event


class PlayApp(GameScreen):
    """The screen of one seat, joined through matchmaking."""

    def __init__(
        self,
        game: str,
        player: str,
        seats: int,
        *,
        token: str,
        matchmaking: str,
        engine: str,
        dice: str,
        bot_fill: int = 2,
        ledger: str = "",
        evidence: Path | None = None,
        key: SigningKey | None = None,
        time_control: ClockRequest = None,
        resume: str = "",
    ) -> None:
        super().__init__(game, seat=None)
        self.player = player  # the token's subject: the name the table shows
        self.token = token  # the player's bearer JWT (boulevard login)
        self.seats = seats
        self.addresses = {
            "matchmaking": matchmaking, "engine": engine, "dice": dice, "ledger": ledger
        }  # fmt: skip
        self.evidence_path = evidence  # the seat's evidence file, written at the end
        self.bot_fill = bot_fill
        # The key that signs this player's moves: kept on disk by `run`, so that a player
        # who quits can sit down again (`--resume`) and sign as the same seat.
        self.key = key
        self.time_control = time_control
        self.resume = resume  # a running game's id: sit down at it again, no matchmaking

    async def session(self) -> None:
        if self.resume:
            await self.resumed(self.resume)
        else:
            await self.joined()

    async def resumed(self, game_id: str) -> None:
        """Sit down again at a running game: a fresh seat token from the player's own JWT
        (RenewPlayerToken), the seat taken back from the platform's bot if its time ran out
        (turn-based games), then play on as before."""
        definition = get_game(self.game)
        self.title = f"Boulevard — {definition.title}"
        key = self.key or SigningKey.generate()
        async with (
            engine_channel(self.addresses["engine"]) as engines,
            tls.channel(self.addresses["dice"]) as dice_channel,
        ):
            engine = engine_pb2_grpc.EngineServiceStub(engines)
            renewed = await engine.RenewPlayerToken(
                engine_pb2.RenewPlayerTokenRequest(game_id=game_id), metadata=bearer(self.token)
            )
            seat, token = int(renewed.seat), renewed.player_token
            self.seat = seat
            self.begin(self.game, game_id, f"game {game_id} — you are seat {seat} again")
            self.query_one("#seat").border_title = f"you — {escape(self.player)}, seat {seat}"
            self.query_one("#actions").display = True
            reclaimed = await reclaim_if_absent(engine, game_id, seat, token, key)
            if reclaimed is not None:
                self.say("your seat is yours again: the platform's bot played it meanwhile")

            async def renew() -> str:
                again: engine_pb2.RenewPlayerTokenResponse = await engine.RenewPlayerToken(
                    engine_pb2.RenewPlayerTokenRequest(game_id=game_id),
                    metadata=bearer(self.token),
                )
                return again.player_token

            player = SeatPlayer(
                engine,
                game_id,
                definition.name,
                seat,
                token,
                definition.bots["heuristic"],
                random.Random(f"{game_id}:{seat}"),
                key,
                choose=self.offer,
                renew=renew,
                # The reclaim's receipt goes into the evidence file with the moves'.
                accepted=[reclaimed] if reclaimed is not None else [],
            )
            await self._play(engine, player, game_id, token, dice_channel)

    async def joined(self) -> None:

        definition = get_game(self.game)
        self.title = f"Boulevard — {definition.title}"
        self.say(
            f"queueing {self.player} for {definition.title} at a table of {self.seats}; "
            f"bots take the empty seats after {self.bot_fill}s…"
        )
        async with (
            MatchmakingClient(self.addresses["matchmaking"], token=self.token, key=self.key) as mm,
            engine_channel(self.addresses["engine"]) as engines,
            tls.channel(self.addresses["dice"]) as dice_channel,
        ):
            ticket = await mm.join(
                self.game,
                self.seats,
                bot_fill_after_seconds=self.bot_fill,
                time_control=self.time_control,
            )
            self.seat = ticket.seat
            self.begin(
                self.game, ticket.game_id, f"game {ticket.game_id} — you are seat {ticket.seat}"
            )
            # A border title is markup: the name is escaped so it shows as typed.
            who = escape(self.player)
            self.query_one("#seat").border_title = f"you — {who}, seat {ticket.seat}"
            self.query_one("#actions").display = True
            self.say("seated; waiting for the other players…")
            engine = engine_pb2_grpc.EngineServiceStub(engines)
            player = mm.seat_player(engine, ticket, choose=self.offer)
            await self._play(engine, player, player.game_id, player.token, dice_channel)

    async def _play(
        self,
        engine: engine_pb2_grpc.EngineServiceStub,
        player: SeatPlayer,
        game_id: str,
        token: str,
        dice_channel: grpc.aio.Channel,
    ) -> None:
        watching = asyncio.create_task(self._watch(engine, game_id, token))
        try:
            await player.play()
            await asyncio.wait_for(asyncio.shield(watching), 30)
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
        await self.verify_dice(DiceReader(dice_channel))
        if self.evidence_path is not None:
            await self._write_evidence(player, dice_channel)

    async def _write_evidence(self, player: SeatPlayer, dice_channel: grpc.aio.Channel) -> None:
        """The seat's receipts with the dice and ledger heads shown now: what this player
        keeps to audit the game later (docs/auditing.md, "Evidence a player keeps")."""
        assert self.evidence_path is not None
        evidence = player.evidence()
        async with tls.channel(self.addresses["ledger"]) as ledger_channel:
            anchored = await keep_heads(
                evidence,
                dice_pb2_grpc.DiceServiceStub(dice_channel),
                ledger_pb2_grpc.LedgerServiceStub(ledger_channel),
            )
        self.evidence_path.write_text(evidence.dumps(), encoding="utf-8")
        self.say(f"evidence kept in {self.evidence_path}")
        if not anchored:
            self.say("note: no ledger head covered the game's end yet; an older one is kept")

    async def _watch(
        self, engine: engine_pb2_grpc.EngineServiceStub, game_id: str, token: str
    ) -> None:
        # From the first event: the commitment and the moves made before this screen opened.
        request = engine_pb2.WatchGameRequest(game_id=game_id, player_token=token)
        async for update in each_event(engine, request, retries=WATCH_RETRIES):
            self.show(update)
            if update.event.type == "GameFinished":
                return


def needs_a_terminal(command: str) -> bool:
    """The full-screen app draws with escape codes: piped or redirected, it wrote them into
    the pipe and could read no key. Say so instead (False) of starting it."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return True
    print(
        f"{command} is a full-screen app: run it in a terminal, with neither its input nor "
        "its output redirected (`boulevard watch <game_id>` without --tui prints plain text)",
        file=sys.stderr,
    )
    return False


def player_key(data_dir: Path, player: str) -> SigningKey:
    """The key that signs `player`'s moves from this machine, kept (mode 0600) in the data
    dir so that `play --resume` signs as the same seat after a quit."""
    name = hashlib.sha256(player.encode()).hexdigest()[:32]
    return load_key("", data_dir / "players" / name / "signing-key")


def resumed_game(engine: str, game_id: str) -> str:
    """The registry name of a running game (to draw it), or "" when it is not there."""

    async def ask() -> str:
        async with engine_channel(engine) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            game = await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id))
            return "" if game.status != engine_pb2.GAME_STATUS_ACTIVE else game.game

    try:
        return asyncio.run(ask())
    except grpc.RpcError:
        return ""


def run(args: argparse.Namespace) -> int:
    settings = Settings()
    engine_address = args.engine or f"{settings.grpc_host}:{settings.engine_port}"
    resume = getattr(args, "resume", "") or ""
    if resume:
        args.game = resumed_game(engine_address, resume)
        if not args.game:
            print(f"no running game {resume} to sit down at again", file=sys.stderr)
            return 2
    elif not args.game:
        print("name the game to play (or --resume <game_id>)", file=sys.stderr)
        return 2
    try:
        time_control = parse_time_control(getattr(args, "clock", "") or "")
    except ClockError as err:
        print(f"--clock: {err}", file=sys.stderr)
        return 2
    definition = get_game(args.game)
    seats = args.seats or min(max(3, definition.min_players), definition.max_players)
    if not definition.min_players <= seats <= definition.max_players:
        low, high = definition.min_players, definition.max_players
        print(
            f"{definition.title} seats {low}-{high} players: --seats {low} to {high}",
            file=sys.stderr,
        )
        return 2
    token = args.token or os.environ.get("BOULEVARD_PLAYER_TOKEN", "")
    player = args.player or getpass.getuser()
    if token:
        player = token_subject(token) or player
    else:
        data_dir = args.data_dir or settings.data_dir
        if not (issuer_folder(data_dir) / "jwks.json").exists():
            print(
                "no token: pass --token (from your identity provider, or `boulevard login`), "
                "or run next to a local `boulevard up`",
                file=sys.stderr,
            )
            return 2
        token = local_issuer(settings, data_dir).mint(player, ("player",), 6 * 3600)
    key = player_key(args.data_dir or settings.data_dir, player)
    if not needs_a_terminal("boulevard play"):
        return 2
    app = PlayApp(
        args.game,
        player,
        seats,
        token=token,
        matchmaking=args.matchmaking or f"{settings.grpc_host}:{settings.matchmaking_port}",
        engine=engine_address,
        dice=args.dice or f"{settings.grpc_host}:{settings.dice_port}",
        bot_fill=args.bot_fill,
        ledger=getattr(args, "ledger", None) or f"{settings.grpc_host}:{settings.ledger_port}",
        evidence=getattr(args, "evidence", None),
        key=key,
        time_control=time_control,
        resume=resume,
    )
    app.run()
    return exit_code(app)


def exit_code(app: GameScreen) -> int:
    """What a closed screen tells the shell (see the module's docstring), after printing its
    last words, since the screen itself is gone."""
    if app.finished:
        print(f"game over — {app.ranking}\ndice: {app.dice_verdict or 'not verified'}")
        return 0 if app.dice_ok else 1
    print(app.last_status or "left before the end")
    return 2 if app.failed else 130


def token_subject(token: str) -> str:
    """The `sub` a JWT names, read without verifying it (only to show a name; the services
    verify the token)."""
    import base64
    import json

    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return str(claims.get("sub", ""))
    except (IndexError, ValueError):
        return ""
