"""One game's outcome log as an auditor checks it (docs/fairness.md, "The signed outcome
log"): the leaf records (commitment, client seeds, every outcome, the reveal) are the leaves
of an RFC 6962 Merkle tree — the ledger's own code, `boulevard.accounting.merkle` — and the
dice service signs a tree head after every leaf with Ed25519 (`boulevard.accounting.treehead`,
type `boulevard.dice.tree_head.v1`, `log_id` = the game id). A leaf and its head are stored in
one message (a `signed_leaf`) or, in logs of older releases, in two; what an auditor checks,
the leaves' exact bytes and the heads, is the same either way (`split_messages`).

Pure: no I/O. The dice service uses the same functions to refuse a log that no longer
matches its own signed heads; signing a head is its own (`services/dice/heads.py`): the
contract says what a head is, the key's holder makes one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError

from boulevard.accounting.errors import ErrorCode, VerificationFailed
from boulevard.accounting.merkle import MerkleTree
from boulevard.accounting.treehead import (
    SignedTreeHead,
    TreeHead,
    verify_tree_head,
)
from boulevard.api.v1 import dice_pb2
from boulevard.fairness import Mismatch
from boulevard.games.base import DiceHeadRef

DICE_TREE_HEAD_TYPE = "boulevard.dice.tree_head.v1"
LEAF_KINDS = ("opened", "seeds", "outcome", "revealed")


def leaf_in(record: dice_pb2.DiceRecord, data: bytes) -> bytes | None:
    """The Merkle leaf one stored message holds: the `leaf` of a `signed_leaf`, none for a
    `head`, else the message's own bytes (a leaf stored alone; so is anything unreadable as
    a leaf, which `parse_log` then names)."""
    which = record.WhichOneof("record")
    if which == "signed_leaf":
        return bytes(record.signed_leaf.leaf)
    if which == "head":
        return None
    return data


def head_in(record: dice_pb2.DiceRecord) -> dice_pb2.DiceTreeHead | None:
    """The signed head one stored message holds: a `head`'s, or a `signed_leaf`'s own."""
    which = record.WhichOneof("record")
    if which == "head":
        return record.head
    if which == "signed_leaf" and record.signed_leaf.HasField("head"):
        return record.signed_leaf.head
    return None


def split_messages(
    items: Sequence[tuple[dice_pb2.DiceRecord, bytes]],
) -> tuple[list[bytes], list[dice_pb2.DiceTreeHead]]:
    """Every leaf and every head the stored messages (record, exact bytes) hold, in stream
    order: the raw log an auditor checks (`check_log`), whichever form stored it — a leaf
    then its head in two messages, or both in one `signed_leaf`."""
    leaves: list[bytes] = []
    heads: list[dice_pb2.DiceTreeHead] = []
    for record, data in items:
        leaf = leaf_in(record, data)
        if leaf is not None:
            leaves.append(leaf)
        head = head_in(record)
        if head is not None:
            heads.append(head)
    return leaves, heads


def signed_head_of(head: dice_pb2.DiceTreeHead) -> SignedTreeHead:
    """The wire head as the accounting package's signed tree head (raises
    VerificationFailed for a malformed one)."""
    return SignedTreeHead(
        TreeHead(
            head.tree_size,
            bytes(head.root_hash),
            head.timestamp_unix_ms,
            head.key_id,
            head.game_id,
            DICE_TREE_HEAD_TYPE,
        ),
        bytes(head.signature),
    )


def head_ref_of(head: dice_pb2.DiceTreeHead) -> DiceHeadRef:
    """A wire head as GameFinished records it (its game is the game whose log holds it)."""
    return DiceHeadRef(
        tree_size=head.tree_size,
        root_hash=bytes(head.root_hash).hex(),
        timestamp_unix_ms=head.timestamp_unix_ms,
        key_id=head.key_id,
        signature=bytes(head.signature).hex(),
    )


def signed_head_of_ref(game_id: str, ref: DiceHeadRef) -> SignedTreeHead:
    """The head GameFinished records, as a signed tree head of `game_id`'s dice log
    (raises VerificationFailed for a malformed one: hex that is not, a short root)."""
    try:
        root, signature = bytes.fromhex(ref.root_hash), bytes.fromhex(ref.signature)
    except ValueError:
        raise VerificationFailed(
            ErrorCode.INVALID_FIELD, "the root hash or signature is not hex"
        ) from None
    if (root.hex(), signature.hex()) != (ref.root_hash, ref.signature):
        # bytes.fromhex also reads spaces and capitals; the browser's decoder does not.
        raise VerificationFailed(ErrorCode.INVALID_FIELD, "hex must be lowercase, no spaces")
    return SignedTreeHead(
        TreeHead(
            ref.tree_size, root, ref.timestamp_unix_ms, ref.key_id, game_id, DICE_TREE_HEAD_TYPE
        ),
        signature,
    )


@dataclass(frozen=True, slots=True)
class LogProblem:
    """Why a game's outcome log cannot be trusted. `leaf_index` names the record at fault.
    Codes: unsigned_log, bad_signature, wrong_game, record_removed, record_changed,
    record_unsigned, malformed_record, out_of_order."""

    code: str
    leaf_index: int | None
    message: str

    def describe(self) -> str:
        where = "the log" if self.leaf_index is None else f"log record {self.leaf_index}"
        return f"FAIL at {where} ({self.code}): {self.message}"


@dataclass
class GameLog:
    """The leaf records of one game, parsed, in log order."""

    opened: dice_pb2.DiceCommitment | None = None
    seeds: dice_pb2.DiceClientSeeds | None = None
    outcomes: list[dice_pb2.DiceOutcome] = field(default_factory=list)
    revealed: dice_pb2.DiceReveal | None = None


@dataclass(frozen=True, slots=True)
class PublishedOpening:
    """What a game's own log publishes about its dice: GameCreated's server commitment and
    seats' seed commitments, and ClientSeedsFixed's seeds (`None` until they are fixed)."""

    server_commitment: str
    seat_commitments: tuple[str, ...]
    client_seeds: tuple[str, ...] | None = None
    missing_seats: tuple[int, ...] = ()
    reveal_deadline_unix_ms: int | None = None  # GameCreated's; None: not compared


def check_published(game: GameLog, published: PublishedOpening) -> Mismatch | None:
    """Whether the dice log's opening is the one the game's log publishes: the server seed
    committed, the seats' commitments it was drawn against (`commitment_mismatch`), and the
    client seeds the outcomes use (`seeds_mismatch`). Otherwise the dice could run on other
    seeds than the ones the players are seen revealing (none at all, or one dropped)."""
    opened = game.opened
    if opened is None:
        return Mismatch("commitment_mismatch", None, "the dice log holds no commitment")
    recorded = (opened.commitment, tuple(opened.client_seed_commitments))
    deadline = published.reveal_deadline_unix_ms
    if recorded != (published.server_commitment, published.seat_commitments) or (
        deadline is not None and deadline != opened.reveal_deadline_unix_ms
    ):
        return Mismatch(
            "commitment_mismatch",
            None,
            "the commitments (or the reveal deadline) in the game's GameCreated are not the "
            "ones the dice log recorded",
        )
    if published.client_seeds is None:
        return None
    seeds = game.seeds
    used = (tuple(seeds.client_seeds), tuple(seeds.missing_seats)) if seeds else None
    if used != (published.client_seeds, published.missing_seats):
        return Mismatch(
            "seeds_mismatch",
            None,
            f"the game's ClientSeedsFixed fixes seeds {list(published.client_seeds)} (missing "
            f"{list(published.missing_seats)}); the dice log's outcomes use "
            f"{list(used[0]) if used else 'none'} (missing {list(used[1]) if used else []})",
        )
    return None


def describe_record(record: dice_pb2.DiceRecord) -> str:
    which = record.WhichOneof("record")
    if which == "outcome":
        return f"the outcome with nonce {record.outcome.nonce}"
    return f"the {which or 'empty'} record"


def check_log(
    game_id: str,
    records: Sequence[bytes],
    heads: Sequence[dice_pb2.DiceTreeHead],
    public_key: bytes,
) -> LogProblem | None:
    """Whether `records` (the leaf data, in order) are exactly what the service signed:
    every head is signed by `public_key` for this game, each head's root is the root of the
    first `tree_size` records, and the last head covers every record. With a head after every
    leaf, the first head that disagrees names the first record removed, changed or inserted."""
    tree = MerkleTree()
    for data in records:
        tree.append(data)
    if not heads:
        return LogProblem("unsigned_log", None, "the service served no signed head")
    ordered = sorted(heads, key=lambda h: h.tree_size)
    for head in ordered:
        if head.game_id != game_id:
            return LogProblem(
                "wrong_game", None, f"a head of game {head.game_id!r} was served for {game_id!r}"
            )
        try:
            verify_tree_head(signed_head_of(head), public_key)
        except VerificationFailed as err:
            return LogProblem("bad_signature", None, str(err))
        if head.tree_size > tree.size:
            return LogProblem(
                "record_removed",
                tree.size,
                f"the service signed {head.tree_size} records but only {tree.size} are served",
            )
        if head.tree_size and tree.root(head.tree_size) != bytes(head.root_hash):
            index = head.tree_size - 1
            return LogProblem(
                "record_changed",
                index,
                f"{_what(records, index)} is not the record signed at tree size "
                f"{head.tree_size}: a record up to it was removed, changed or inserted",
            )
    last = ordered[-1].tree_size
    if last < tree.size:
        return LogProblem(
            "record_unsigned",
            last,
            f"{_what(records, last)} was added after the last signed head "
            f"(size {last}, {tree.size} records served)",
        )
    return None


def parse_log(records: Sequence[bytes]) -> tuple[GameLog, LogProblem | None]:
    """The leaf records parsed into their parts, and the first rule of their order broken:
    the commitment first, the client seeds after it and before any outcome, the reveal
    last."""
    game = GameLog()
    for index, data in enumerate(records):
        record = dice_pb2.DiceRecord()
        try:
            record.ParseFromString(data)
        except DecodeError:
            return game, LogProblem("malformed_record", index, "not a DiceRecord")
        which = record.WhichOneof("record")
        if which not in LEAF_KINDS:
            return game, LogProblem("malformed_record", index, f"{which!r} is not a leaf")
        if index == 0:
            if which != "opened":
                return game, LogProblem("out_of_order", 0, "the commitment is not the first record")
            game.opened = record.opened
            continue
        if game.revealed is not None:
            return game, LogProblem(
                "out_of_order", index, f"{describe_record(record)} comes after the reveal"
            )
        if which == "opened":
            return game, LogProblem("out_of_order", index, "a second commitment record")
        if which == "seeds":
            if game.seeds is not None or game.outcomes:
                return game, LogProblem(
                    "out_of_order", index, "client seeds recorded twice or after an outcome"
                )
            game.seeds = record.seeds
        elif which == "outcome":
            if game.seeds is None:
                return game, LogProblem(
                    "out_of_order",
                    index,
                    f"{describe_record(record)} was drawn before the client seeds were fixed",
                )
            game.outcomes.append(record.outcome)
        else:
            game.revealed = record.revealed
    return game, None


def _what(records: Sequence[bytes], index: int) -> str:
    if index >= len(records):
        return f"record {index}"
    record = dice_pb2.DiceRecord()
    try:
        record.ParseFromString(records[index])
    except DecodeError:
        return f"record {index} (unreadable)"
    return f"record {index} ({describe_record(record)})"


@dataclass
class SignedView:
    """What a game's stored messages say once read against the service's own signed heads:
    `trusted` are the leaves the heads cover, in order (the log as the service wrote it);
    `tail` the leaves after the last head (a crash between a leaf and its head leaves one);
    `skipped` the positions of leaves no head covers and of heads that do not check — put
    there by someone else, left out (and reported by an audit of the raw log)."""

    trusted: list[bytes] = field(default_factory=list)
    tree: MerkleTree = field(default_factory=MerkleTree)
    tail: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    signed_size: int = 0
    head: dice_pb2.DiceTreeHead | None = None  # the good head of size `signed_size`


def signed_view(
    game_id: str, items: Sequence[tuple[dice_pb2.DiceRecord, bytes]], public_key: bytes
) -> SignedView:
    """Read a game's messages (record, exact bytes), in stream order, against the heads
    signed by `public_key`: each good head covers exactly one more leaf. A `head` alone
    covers the one among the leaves since the previous head that gives its root; a
    `signed_leaf`'s head covers its own leaf and nothing else, or the whole message is
    skipped (its leaf is never pending: this service stores the two together, so a
    `signed_leaf` whose head does not cover it is not one it wrote)."""
    view = SignedView()
    pending: list[int] = []
    for position, (record, _data) in enumerate(items):
        which = record.WhichOneof("record")
        if which == "signed_leaf":
            signed = record.signed_leaf
            if not signed.HasField("head") or not _good_head(
                view, game_id, signed.head, public_key
            ):
                view.skipped.append(position)
                continue
            leaf = bytes(signed.leaf)
            view.tree.append(leaf)
            if view.tree.root() != bytes(signed.head.root_hash):
                view.tree = _tree_of(view.trusted)
                view.skipped.append(position)
                continue
            view.skipped.extend(pending)
            view.trusted.append(leaf)
            view.signed_size = view.tree.size
            view.head = signed.head
            pending = []
            continue
        if which != "head":
            pending.append(position)
            continue
        head = record.head
        if not _good_head(view, game_id, head, public_key):
            view.skipped.append(position)
            continue
        match = _covered_leaf(view, pending, items, bytes(head.root_hash))
        if match is None:
            view.skipped.append(position)
            continue
        view.skipped.extend(p for p in pending if p != match)
        view.trusted.append(items[match][1])
        view.signed_size = view.tree.size
        view.head = head
        pending = []
    view.tail = pending
    return view


def _good_head(
    view: SignedView, game_id: str, head: dice_pb2.DiceTreeHead, public_key: bytes
) -> bool:
    """Whether `head` is this game's, signed by `public_key`, one leaf past the view."""
    if head.game_id != game_id or head.tree_size != view.tree.size + 1:
        return False
    try:
        verify_tree_head(signed_head_of(head), public_key)
    except VerificationFailed:
        return False
    return True


def _tree_of(leaves: Sequence[bytes]) -> MerkleTree:
    tree = MerkleTree()
    for data in leaves:
        tree.append(data)
    return tree


def _covered_leaf(
    view: SignedView,
    pending: list[int],
    items: Sequence[tuple[dice_pb2.DiceRecord, bytes]],
    root: bytes,
) -> int | None:
    """The pending leaf whose append gives `root` (appended to the view's tree), or None
    (the tree unchanged). The usual case, one pending leaf that fits, costs one append."""
    for position in pending:
        view.tree.append(items[position][1])
        if view.tree.root() == root:
            return position
        # Not this one: rebuild the tree without it (only when someone wrote junk).
        view.tree = _tree_of(view.trusted)
    return None
