"""The dice anchor (docs/auditing.md, "The dice anchor"): GameFinished records the dice
service's signed head over every dice leaf before the reveal, and `audit game` holds the
served dice log to it. A dishonest operator holds the dice key, so a rewritten dice log can
be re-signed — but not to the root the game's chain (and the ledger's anchor of it)
already committed to. Each way the head and the served log can disagree fails at
GameFinished's version; a game that promised a head (GameCreated.dice_anchored) and ends
without one fails; an older game without one passes with a note.

The engine's side (the settle step asks for the head and records it; new games promise
it) is tested here too, with a chance source that hands out a known head."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import uuid
from typing import Any

import pytest

from boulevard.accounting.treehead import TreeHeadSigner, key_id
from boulevard.api.v1 import dice_pb2, events_pb2
from boulevard.audit.dice_anchor import ServedDiceLog, anchor_problem, anchored_size
from boulevard.audit.game_log import audit_game_log
from boulevard.contract.dice_log import DICE_TREE_HEAD_TYPE, head_ref_of
from boulevard.eventlog.store import InMemoryEventStore
from boulevard.games import REGISTRY
from boulevard.games.base import (
    DiceHeadRef,
    GameConfig,
    GameCreated,
    GameFinished,
    PlayerSeat,
)
from boulevard.games.codec import Codec
from boulevard.platform.auth import verify_token
from services.dice.heads import sign_head
from services.engine.chance import LocalChance
from services.engine.engine import Engine, MemoryKeyValue
from tests.unit.audit.test_game_log import envelopes, fails_at, game_id_of, honest_game, rechain
from tests.unit.engine.test_engine_core import KEY, make_engine, seats, submit

DICE = TreeHeadSigner(bytes(range(32)))
OTHER = TreeHeadSigner(bytes(range(1, 33)))
KEYS = {DICE.key_id: DICE.public_key}
CODEC = Codec((*REGISTRY["las_vegas"].event_types, *REGISTRY["las_vegas"].command_types))


def leaf(**record: Any) -> bytes:
    return dice_pb2.DiceRecord(**record).SerializeToString()


def dice_leaves(game_id: str, outcomes: int = 3) -> list[bytes]:
    """A dice log's leaves before the reveal: commitment, seeds, `outcomes` outcomes."""
    out = [
        leaf(opened=dice_pb2.DiceCommitment(game_id=game_id, commitment="ab" * 32)),
        leaf(seeds=dice_pb2.DiceClientSeeds(game_id=game_id, client_seeds=["", "", ""])),
    ]
    for nonce in range(outcomes):
        out.append(leaf(outcome=dice_pb2.DiceOutcome(game_id=game_id, nonce=nonce, values=[3])))
    return out


def reveal(game_id: str) -> bytes:
    return leaf(revealed=dice_pb2.DiceReveal(game_id=game_id, server_seed="cd" * 32))


def head_over(game_id: str, leaves: list[bytes], signer: TreeHeadSigner = DICE) -> DiceHeadRef:
    """The head the dice service would sign over `leaves` (its own signing path)."""
    from boulevard.accounting.merkle import MerkleTree

    tree = MerkleTree()
    for data in leaves:
        tree.append(data)
    return head_ref_of(sign_head(signer, game_id, tree, 1_700_000_000_000))


# -- the pure check -------------------------------------------------------------------------

GID = "g-anchor"


def test_a_head_over_the_leaves_before_the_reveal_anchors_them() -> None:
    leaves = dice_leaves(GID)
    head = head_over(GID, leaves)
    assert anchor_problem(GID, head, [*leaves, reveal(GID)], KEYS) is None
    # Before the reveal (a crash between GameFinished and the reveal) it covers them all.
    assert anchor_problem(GID, head, leaves, KEYS) is None
    assert anchored_size([*leaves, reveal(GID)]) == len(leaves)


def test_a_rewritten_outcome_resigned_with_the_dice_key_has_another_root() -> None:
    leaves = dice_leaves(GID)
    head = head_over(GID, leaves)
    rewritten = list(leaves)
    rewritten[3] = leaf(outcome=dice_pb2.DiceOutcome(game_id=GID, nonce=1, values=[6]))
    problem = anchor_problem(GID, head, [*rewritten, reveal(GID)], KEYS)
    assert problem is not None and "root" in problem and head.root_hash in problem


def test_an_outcome_added_after_the_anchor_or_a_leaf_removed_is_a_wrong_size() -> None:
    leaves = dice_leaves(GID)
    head = head_over(GID, leaves)
    extra = leaf(outcome=dice_pb2.DiceOutcome(game_id=GID, nonce=3, values=[1]))
    added = anchor_problem(GID, head, [*leaves, extra, reveal(GID)], KEYS)
    assert added is not None and "added after the game ended" in added
    after_reveal = anchor_problem(GID, head, [*leaves, reveal(GID), extra], KEYS)
    assert after_reveal is not None and f"at {len(leaves)} records" in after_reveal
    removed = anchor_problem(GID, head, [*leaves[:-1], reveal(GID)], KEYS)
    assert removed is not None and "removed" in removed


def test_a_head_not_signed_by_a_held_dice_key_fails() -> None:
    leaves = dice_leaves(GID)
    served = [*leaves, reveal(GID)]
    head = head_over(GID, leaves)
    forged = dataclasses.replace(head, signature=head_over(GID, leaves[:-1]).signature)
    assert "does not verify" in (anchor_problem(GID, forged, served, KEYS) or "")
    # Signed by a key the auditor does not hold for the dice service.
    stranger = head_over(GID, leaves, OTHER)
    assert "not a dice key" in (anchor_problem(GID, stranger, served, KEYS) or "")
    # Another game's head (the log id is signed): it does not verify for this game.
    other_game = head_over("g-other", leaves)
    assert "does not verify" in (anchor_problem(GID, other_game, served, KEYS) or "")
    # Hex an auditor in another language would read differently.
    shouty = dataclasses.replace(head, root_hash=head.root_hash.upper())
    assert "does not verify" in (anchor_problem(GID, shouty, served, KEYS) or "")


def test_the_signed_bytes_are_the_documented_canonical_json() -> None:
    """docs/fairness.md: the head's canonical JSON, the game id as its log id."""
    leaves = dice_leaves(GID)
    head = head_over(GID, leaves)
    body = {
        "key_id": key_id(DICE.public_key),
        "log_id": GID,
        "root_hash": head.root_hash,
        "timestamp_unix_ms": head.timestamp_unix_ms,
        "tree_size": len(leaves),
        "type": DICE_TREE_HEAD_TYPE,
    }
    message = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    Ed25519PublicKey.from_public_bytes(DICE.public_key).verify(
        bytes.fromhex(head.signature), message
    )


# -- in the game audit ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished_game() -> list[bytes]:
    log, _, _ = asyncio.run(honest_game("las_vegas", 3, seed=5))
    return log


def anchored(log: list[bytes], head: DiceHeadRef | None, promised: bool = True) -> list[bytes]:
    """The log as an engine of this release writes it: GameCreated promising the dice
    head, GameFinished carrying `head`."""
    envs = envelopes(log)
    first, last = envs[0], envs[-1]
    created = CODEC.loads(first.payload)
    finished = CODEC.loads(last.payload)
    assert isinstance(created, GameCreated) and isinstance(finished, GameFinished)
    first.payload = CODEC.dumps(dataclasses.replace(created, dice_anchored=promised))
    last.payload = CODEC.dumps(dataclasses.replace(finished, dice_head=head))
    return rechain(envs)


def test_a_game_whose_end_anchors_its_dice_log_passes(finished_game: list[bytes]) -> None:
    gid = game_id_of(finished_game)
    leaves = dice_leaves(gid)
    log = anchored(finished_game, head_over(gid, leaves))
    report = audit_game_log(gid, log, dice_log=ServedDiceLog([*leaves, reveal(gid)], KEYS))
    assert report.finished
    assert f"dice head anchors the dice log's {len(leaves)} records" in report.summary()


@pytest.mark.parametrize(
    ("served", "match"),
    [
        ("rewritten", "root"),
        ("extra", "added after the game ended"),
        ("withheld", "does not serve that log"),
        ("stranger", "not a dice key"),
    ],
)
def test_a_dice_log_that_is_not_the_anchored_one_fails_at_game_finished(
    finished_game: list[bytes], served: str, match: str
) -> None:
    gid = game_id_of(finished_game)
    leaves = dice_leaves(gid)
    log = anchored(finished_game, head_over(gid, leaves))
    dice = {
        "rewritten": [*leaves[:-1], leaf(outcome=dice_pb2.DiceOutcome(nonce=2)), reveal(gid)],
        "extra": [*leaves, leaf(outcome=dice_pb2.DiceOutcome(nonce=3)), reveal(gid)],
        "withheld": None,
        "stranger": [*leaves, reveal(gid)],
    }[served]
    keys = {OTHER.key_id: OTHER.public_key} if served == "stranger" else KEYS
    failed = fails_at(log, len(log), match, dice_log=ServedDiceLog(dice, keys))
    assert "version" in str(failed)


def test_a_promised_head_missing_from_game_finished_fails(finished_game: list[bytes]) -> None:
    gid = game_id_of(finished_game)
    log = anchored(finished_game, None)
    served = ServedDiceLog([*dice_leaves(gid), reveal(gid)], KEYS)
    fails_at(log, len(log), "dice_anchored", dice_log=served)
    fails_at(log, len(log), "GameFinished carries none")  # the log alone shows it


def test_a_game_that_promised_nothing_passes_with_a_note(finished_game: list[bytes]) -> None:
    gid = game_id_of(finished_game)
    served = ServedDiceLog([*dice_leaves(gid), reveal(gid)], KEYS)
    report = audit_game_log(gid, finished_game, dice_log=served)
    assert "the game predates dice anchors" in report.summary()
    # Begun by an older release, finished by this one: its head is checked when present.
    gid_log = anchored(finished_game, head_over(gid, dice_leaves(gid, 2)), promised=False)
    fails_at(gid_log, len(gid_log), "records", dice_log=served)


def test_a_head_without_the_dice_log_is_noted_not_checked(finished_game: list[bytes]) -> None:
    gid = game_id_of(finished_game)
    log = anchored(finished_game, head_over(gid, dice_leaves(gid)))
    report = audit_game_log(gid, log)
    assert "recorded, not checked (no dice log given)" in report.summary()


# -- stored bytes stay as they were ---------------------------------------------------------


def test_events_without_the_new_fields_encode_to_their_old_bytes() -> None:
    """GameCreated and GameFinished of every older log re-encode to the bytes stored (the
    audit re-encodes each payload and compares): the new fields are omitted at their
    defaults. The literal bytes are what release 2 wrote."""
    created = GameCreated(
        "las_vegas", GameConfig(2), (PlayerSeat(0, "a"), PlayerSeat(1, "b")), "ab" * 32
    )
    finished = GameFinished(((0,), (1,)), (50, 20), ("a", "b"), "done")
    assert CODEC.dumps(finished) == (
        b'{"player_ids":["a","b"],"ranking":[[0],[1]],"reason":"done","scores":[50,20],'
        b'"type":"GameFinished"}'
    )
    assert b"dice_anchored" not in CODEC.dumps(created)
    assert CODEC.loads(CODEC.dumps(created)) == created
    head = head_over("g", dice_leaves("g"))
    with_head = dataclasses.replace(finished, dice_head=head)
    assert CODEC.loads(CODEC.dumps(with_head)) == with_head
    assert json.loads(CODEC.dumps(with_head))["dice_head"]["tree_size"] == 5
    promised = dataclasses.replace(created, dice_anchored=True)
    assert json.loads(CODEC.dumps(promised))["dice_anchored"] is True


# -- the engine -----------------------------------------------------------------------------


class AnchoredChance(LocalChance):
    """Local dice that hand out a known head, as the dice service would its signed one."""

    anchored = True

    def __init__(self) -> None:
        super().__init__(random.Random(7))
        self.asked: list[str] = []

    async def head(self, game_id: str) -> DiceHeadRef:  # type: ignore[override]
        self.asked.append(game_id)
        return head_over(game_id, dice_leaves(game_id))


async def play_out(engine: Engine, store: InMemoryEventStore) -> tuple[str, list[bytes]]:
    """Random bots play a new game of the engine's to its end: its id and log bytes."""
    created = await engine.create_game("r-anchor", "las_vegas", seats(3))
    game_id = created.game_id
    rng = random.Random(2)
    session = await engine.load(game_id)
    while session.finished is None:
        for seat, token in enumerate(created.tokens):
            legal = session.game.legal_commands(session.state, seat)
            if legal:
                view = session.game.view(session.state, seat)
                command = session.game.bots["random"](view, legal, seat, rng)
                claims = verify_token(KEY, token)
                await submit(engine, game_id, claims, command, session.version, uuid.uuid4().hex)
                break
        session = await engine.load(game_id)
    return game_id, [r.data for r in await store.read(game_id)]


def payload_of(data: bytes) -> Any:
    return CODEC.loads(events_pb2.EventEnvelope.FromString(data).payload)


async def test_the_engine_records_the_dice_head_in_game_finished() -> None:
    store, chance = InMemoryEventStore(), AnchoredChance()
    gid, log = await play_out(Engine(store, chance, MemoryKeyValue(), KEY), store)
    assert payload_of(log[0]).dice_anchored is True
    assert payload_of(log[-1]).dice_head == head_over(gid, dice_leaves(gid))
    assert chance.asked == [gid] and gid in chance.revealed  # the reveal after it
    served = ServedDiceLog([*dice_leaves(gid), reveal(gid)], KEYS)
    assert "dice head anchors" in audit_game_log(gid, log, dice_log=served).summary()


async def test_no_head_is_promised_where_none_can_be_kept() -> None:
    """Local dice keep no signed log; during a rolling upgrade (new games on an older
    release's rules) an older engine, which records no head, may finish the game."""
    store = InMemoryEventStore()
    created = await make_engine(store).create_game("g-local", "las_vegas", seats(3))
    assert payload_of((await store.read(created.game_id))[0].data).dice_anchored is False
    upgrading = Engine(store, AnchoredChance(), MemoryKeyValue(), KEY, rules_release="1")
    created = await upgrading.create_game("g-upgrading", "las_vegas", seats(3))
    assert payload_of((await store.read(created.game_id))[0].data).dice_anchored is False
