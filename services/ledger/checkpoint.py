"""Ledger checkpoints: the book's state at a LEDGER sequence, so a restart reads only the
tail of LEDGER instead of re-verifying every entry (docs/ledger.md, "Checkpoints").

The state lives in the JetStream KV bucket `ledger_checkpoint`, which only the ledger
identity may write or read (boulevard.messaging.identities):

- `e.<i>.<p>`: entry chunk `i`, entries `i*CHUNK + 1 .. (i+1)*CHUNK`: each entry's leaf
  hash, LEDGER stream sequence, game id and version. Entries never change, so a full chunk
  is written once and each checkpoint writes only the chunks completed since the last one.
- `s.<slot>.<p>`: everything else (balances, the signed heads and their sequences, the
  refusals, the quarantined sequences, and the entries after the last full chunk). Two
  slots, used in turn: a crash while one is written leaves the other, which the manifest
  still names, whole.
- `manifest`: written last, signed with the ledger's key: the LEDGER sequence the state
  covers, the tree size, root and frontier, the sequences of the signed head and the last
  entry it is anchored at, and digests of everything above.

A blob is split in parts of at most PART bytes (`.0`, `.1`, …); the first starts with the
blob's length, so parts left over from a longer blob are never read.

Loading trusts nothing it cannot check cheaply against LEDGER itself: the manifest's
signature; the root from its frontier against the signed head stored at the named
sequence; the last leaf against the entry stored at the named sequence; every leaf (the
tree rebuilt from them must have that root); digests of every chunk; and a state that no
sequence of valid entries could reach (a key twice, a balance below zero, balances not
summing to zero). Any failure raises CheckpointRejected, and the caller rebuilds from the
whole log.
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
import zlib
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from google.protobuf.message import DecodeError
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import BucketNotFoundError, KeyNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from boulevard.accounting import (
    AccountId,
    Ledger,
    LedgerError,
    MerkleTree,
    SignedTreeHead,
    TreeHead,
    TreeHeadSigner,
    decode_entry,
    leaf_hash,
    root_from_frontier,
    verify_document,
)
from boulevard.api.v1 import ledger_pb2
from services.ledger.book import LedgerBook, Rejection
from services.ledger.journal_log import replay_stream
from services.ledger.mapping import head_from_pb

CHECKPOINT_TYPE = "boulevard.ledger.checkpoint.v1"
FORMAT = 1
CHUNK = 4096  # entries per immutable chunk
PART = 512 * 1024  # bytes per KV value (a server's max_payload is 1 MB by default)
MANIFEST = "manifest"
_HASH = 32
_ENTRIES_MAGIC = b"BLE1"


class CheckpointRejected(Exception):
    """A stored checkpoint that does not match LEDGER (or does not parse): not used."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


# The binary forms ---------------------------------------------------------------------


def _u64(values: Sequence[int]) -> bytes:
    a = array("Q", values)
    if sys.byteorder != "little":
        a.byteswap()
    return a.tobytes()


def _from_u64(raw: bytes) -> array[int]:
    a = array("Q")
    a.frombytes(raw)
    if sys.byteorder != "little":
        a.byteswap()
    return a


@dataclass(frozen=True, slots=True)
class EntryRecords:
    """Per entry, what the book keeps beside the balances: leaf hashes back to back, LEDGER
    stream sequences, game ids and versions (the durable keys)."""

    leaves: bytes
    stream_seqs: array[int]
    game_ids: list[str]
    versions: array[int]

    def __len__(self) -> int:
        return len(self.stream_seqs)


def encode_entries(
    leaves: bytes, stream_seqs: Sequence[int], game_ids: Sequence[str], versions: Sequence[int]
) -> bytes:
    n = len(stream_seqs)
    if not (len(leaves) == n * _HASH and len(game_ids) == n and len(versions) == n):
        raise ValueError("one leaf hash, sequence, game id and version per entry")
    # Leaf hashes do not compress; the rest (sequences, versions, a few game ids) does.
    rest = _u64(stream_seqs) + _u64(versions) + "\n".join(game_ids).encode()
    return struct.pack("<4sI", _ENTRIES_MAGIC, n) + leaves + zlib.compress(rest, 1)


def decode_entries(raw: bytes) -> EntryRecords:
    try:
        magic, n = struct.unpack_from("<4sI", raw)
        if magic != _ENTRIES_MAGIC:
            raise ValueError("not an entry chunk")
        leaves_end = 8 + n * _HASH
        leaves = raw[8:leaves_end]
        rest = zlib.decompress(raw[leaves_end:])
        seqs, versions = _from_u64(rest[: 8 * n]), _from_u64(rest[8 * n : 16 * n])
        ids = rest[16 * n :].decode().split("\n") if n else []
    except (struct.error, zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise CheckpointRejected("malformed", f"an entry chunk does not decode: {exc}") from None
    if not (len(leaves) == n * _HASH and len(seqs) == len(versions) == len(ids) == n):
        raise CheckpointRejected("malformed", "an entry chunk's parts differ in length")
    return EntryRecords(leaves, seqs, ids, versions)


def _frame(blob: bytes) -> list[bytes]:
    framed = struct.pack("<Q", len(blob)) + blob
    return [framed[i : i + PART] for i in range(0, len(framed), PART)]


def _unframe(key: str, parts: Callable[[int], bytes | None]) -> bytes:
    first = parts(0)
    if first is None or len(first) < 8:
        raise CheckpointRejected("missing", f"{key} is not in the bucket")
    (length,) = struct.unpack_from("<Q", first)
    out, p = bytearray(first[8:]), 1
    while len(out) < length:
        part = parts(p)
        if part is None:
            raise CheckpointRejected("missing", f"{key} part {p} is not in the bucket")
        out += part
        p += 1
    if len(out) != length:
        raise CheckpointRejected("malformed", f"{key} is longer than it says")
    return bytes(out)


def _chain(digests: Sequence[bytes]) -> bytes:
    """One digest over all chunk digests, so the manifest stays small at any size."""
    d = bytes(_HASH)
    for c in digests:
        d = hashlib.sha256(d + c).digest()
    return d


def _head_json(sth: SignedTreeHead, stream_seq: int) -> list[Any]:
    return [stream_seq, sth.head.to_json(), sth.signature.hex()]


def _head_from_json(item: list[Any]) -> tuple[SignedTreeHead, int]:
    seq, doc, signature = item
    head = TreeHead(
        tree_size=doc["tree_size"],
        root_hash=bytes.fromhex(doc["root_hash"]),
        timestamp_unix_ms=doc["timestamp_unix_ms"],
        key_id=doc["key_id"],
        log_id=doc.get("log_id", ""),
        head_type=doc["type"],
    )
    return SignedTreeHead(head, bytes.fromhex(signature)), int(seq)


# The store ----------------------------------------------------------------------------


async def open_bucket(js: JetStreamContext, bucket: str, replicas: int = 1) -> KeyValue:
    try:
        return await js.key_value(bucket)
    except BucketNotFoundError:
        return await js.create_key_value(
            KeyValueConfig(bucket=bucket, history=1, storage=StorageType.FILE, replicas=replicas)
        )


class LedgerCheckpoints:
    """Writes the book's state every `every` entries (and on a clean stop); loads and
    verifies it on start. Used only under the book's lock."""

    def __init__(
        self,
        js: JetStreamContext,
        kv: KeyValue,
        *,
        bucket: str,
        stream: str,
        prefix: str,
        signer: TreeHeadSigner,
        every: int,
    ) -> None:
        self.js = js
        self.kv = kv
        self.bucket = bucket
        self.stream = stream
        self.prefix = prefix
        self.signer = signer
        self.every = every
        self._forget()

    def _forget(self) -> None:
        self.chunk_digests: list[bytes] = []  # full chunks known to be in the bucket
        self.size = 0  # entries the latest checkpoint (written or loaded) covers
        self.stream_seq = 0
        self.slot = "b"  # the slot the latest manifest names; the next write takes the other
        self.attempted = 0  # the size at the last write tried: a failing bucket is retried
        # every `every` entries, not every second

    def due(self, size: int) -> bool:
        return size - max(self.size, self.attempted) >= self.every

    # Writing ----------------------------------------------------------------------------

    async def _put_blob(self, key: str, blob: bytes) -> None:
        for p, part in enumerate(_frame(blob)):
            await self.kv.put(f"{key}.{p}", part)

    async def write(self, book: LedgerBook) -> bool:
        """Store the book's state; the caller has just signed a head at its size. Returns
        whether anything was written."""
        n = book.size
        head_seq = book.head_seqs.get(n)
        if n == 0 or head_seq is None:
            return False
        if n == self.size and book.last_stream_seq == self.stream_seq:
            return False
        self.attempted = n
        tree = book.ledger.tree
        full = n // CHUNK
        digests = list(self.chunk_digests[:full])
        for i in range(len(digests), full):
            blob = _entries_blob(book, i * CHUNK, (i + 1) * CHUNK)
            await self._put_blob(f"e.{i}", blob)
            digests.append(hashlib.sha256(blob).digest())
        tail = _entries_blob(book, full * CHUNK, n)
        state = _state_blob(book, tail)
        slot = "a" if self.slot == "b" else "b"
        await self._put_blob(f"s.{slot}", state)
        body = {
            "type": CHECKPOINT_TYPE,
            "format": FORMAT,
            "key_id": self.signer.key_id,
            "stream": self.stream,
            "stream_seq": book.last_stream_seq,
            "tree_size": n,
            "root_hash": tree.root(n).hex(),
            "frontier": [h.hex() for h in tree.frontier(n)],
            "head_stream_seq": head_seq,
            "last_entry_stream_seq": book.stream_seq_of(n),
            "chunk_entries": CHUNK,
            "chunks": full,
            "chunks_digest": _chain(digests).hex(),
            "state_slot": slot,
            "state_digest": hashlib.sha256(state).hexdigest(),
        }
        signature = self.signer.sign_document(body)
        manifest = json.dumps({"body": body, "signature": signature.hex()}, sort_keys=True)
        await self.kv.put(MANIFEST, manifest.encode())
        self.chunk_digests, self.size, self.slot = digests, n, slot
        self.stream_seq = book.last_stream_seq
        return True

    # Loading ----------------------------------------------------------------------------

    async def load(self, book: LedgerBook) -> bool:
        """Fill the (empty) book from the stored checkpoint. False when there is none;
        CheckpointRejected when it does not match LEDGER."""
        self._forget()
        try:
            stored = await self.kv.get(MANIFEST)
        except KeyNotFoundError:
            return False
        if not stored.value:
            return False
        body, signature = _parse_manifest(stored.value)
        try:
            verify_document(body, signature, self.signer.public_key)
        except LedgerError as err:
            raise CheckpointRejected("signature", err.message) from None
        try:
            return await self._load_verified(book, body)
        except (KeyError, IndexError, TypeError, ValueError, LedgerError) as exc:
            raise CheckpointRejected("malformed", f"{type(exc).__name__}: {exc}") from None

    async def _load_verified(self, book: LedgerBook, m: dict[str, Any]) -> bool:
        if m["format"] != FORMAT or m["chunk_entries"] != CHUNK:
            raise CheckpointRejected("malformed", f"format {m['format']}/{m['chunk_entries']}")
        if m["stream"] != self.stream:
            raise CheckpointRejected("other_stream", f"made for stream {m['stream']!r}")
        n, seq, head_seq = int(m["tree_size"]), int(m["stream_seq"]), int(m["head_stream_seq"])
        entry_seq = int(m["last_entry_stream_seq"])
        info = await self.js.stream_info(self.stream)
        last = int(info.state.last_seq)
        if not 0 < entry_seq < head_seq <= seq <= last or n < 1:
            raise CheckpointRejected(
                "beyond_log",
                f"covers LEDGER up to {seq} (head at {head_seq}, last entry at {entry_seq}), "
                f"the stream ends at {last}",
            )
        root = bytes.fromhex(m["root_hash"])
        frontier = [bytes.fromhex(h) for h in m["frontier"]]
        if root_from_frontier(n, frontier) != root:
            raise CheckpointRejected("frontier", "the frontier does not lead to the root")
        # Anchors in LEDGER: the signed head at its sequence, the last entry at its own.
        head_msg = await self._message(head_seq)
        if head_msg[0] != f"{self.prefix}.head":
            raise CheckpointRejected("head_mismatch", f"LEDGER {head_seq} is not a tree head")
        try:
            sth = head_from_pb(ledger_pb2.SignedTreeHead.FromString(head_msg[1]))
            sth.verify(self.signer.public_key)
        except (DecodeError, LedgerError) as exc:
            raise CheckpointRejected("head_mismatch", f"LEDGER {head_seq}: {exc}") from None
        if (sth.head.tree_size, sth.head.root_hash) != (n, root):
            raise CheckpointRejected(
                "head_mismatch",
                f"the head at LEDGER {head_seq} is ({sth.head.tree_size}, "
                f"{sth.head.root_hash.hex()}), the checkpoint says ({n}, {root.hex()})",
            )
        entry_msg = await self._message(entry_seq)
        if not entry_msg[0].startswith(f"{self.prefix}.entry."):
            raise CheckpointRejected("chain_head", f"LEDGER {entry_seq} is not an entry")
        try:
            last_entry = decode_entry(entry_msg[1])
        except LedgerError as exc:
            raise CheckpointRejected("chain_head", f"LEDGER {entry_seq}: {exc}") from None
        if last_entry.seq != n:
            raise CheckpointRejected("chain_head", f"LEDGER {entry_seq} is not entry {n}")
        chain_head = leaf_hash(entry_msg[1])
        # The state, then every chunk.
        slot = m["state_slot"]
        state = _unframe(f"s.{slot}", _sub(await self._parts(f"s.{slot}."), ""))
        if hashlib.sha256(state).hexdigest() != m["state_digest"]:
            raise CheckpointRejected("digest", "the state does not match the manifest")
        doc, tail = _parse_state(state)
        chunks = int(m["chunks"])
        if chunks != n // CHUNK:
            raise CheckpointRejected("malformed", f"{chunks} chunks for {n} entries")
        parts = await self._parts("e.")
        blobs = [_unframe(f"e.{i}", _sub(parts, f"{i}.")) for i in range(chunks)]
        digests = [hashlib.sha256(b).digest() for b in blobs]
        if _chain(digests).hex() != m["chunks_digest"]:
            raise CheckpointRejected("digest", "the entry chunks do not match the manifest")
        records = [decode_entries(b) for b in blobs] + [tail]
        if any(len(r) != CHUNK for r in records[:-1]) or len(tail) != n - chunks * CHUNK:
            raise CheckpointRejected("malformed", "a chunk holds the wrong number of entries")
        tree = MerkleTree.from_leaf_hashes(b"".join(r.leaves for r in records))
        if tree.root() != root:
            raise CheckpointRejected("leaves", "the leaf hashes do not lead to the signed root")
        if tree.leaf_hash(n - 1) != chain_head:
            raise CheckpointRejected("chain_head", f"leaf {n - 1} is not entry {n}'s hash")
        stream_seqs = array("Q")
        versions = array("Q")
        game_ids: list[str] = []
        for r in records:
            stream_seqs.extend(r.stream_seqs)
            versions.extend(r.versions)
            game_ids.extend(r.game_ids)
        if stream_seqs[-1] != entry_seq or any(a >= b for a, b in pairwise(stream_seqs)):
            raise CheckpointRejected("state", "entry sequences are not increasing to the last")
        heads = [_head_from_json(h) for h in doc["heads"]]
        for h, at in heads:
            size = h.head.tree_size
            if not 0 < size <= n or at > seq or tree.root(size) != h.head.root_hash:
                raise CheckpointRejected("state", f"a head of size {size} does not match")
        if (heads[-1][0].head.tree_size, heads[-1][1]) != (n, head_seq):
            raise CheckpointRejected("state", "the last head is not the anchored one")
        balances = {AccountId(b, a): amount for b, a, amount in doc["balances"]}
        try:
            ledger = Ledger.restore(tree, balances, zip(game_ids, versions, strict=True))
        except LedgerError as err:
            raise CheckpointRejected("state", err.message) from None
        rejections = [Rejection(*r) for r in doc["rejections"]]
        book.restore(
            ledger,
            stream_seqs=stream_seqs,
            game_ids=game_ids,
            versions=versions,
            heads=heads,
            rejections=rejections,
            quarantined=[int(q) for q in doc["quarantined"]],
            last_stream_seq=seq,
        )
        self.chunk_digests, self.size, self.slot, self.stream_seq = digests, n, m["state_slot"], seq
        return True

    async def _message(self, seq: int) -> tuple[str, bytes]:
        try:
            msg = await self.js.get_msg(self.stream, seq)
        except NotFoundError:
            raise CheckpointRejected("beyond_log", f"LEDGER has no message {seq}") from None
        return msg.subject or "", msg.data or b""

    async def _parts(self, prefix: str) -> dict[str, bytes]:
        """Every value in the bucket whose key starts with `prefix`, keyed by the rest."""
        base = f"$KV.{self.bucket}."
        out: dict[str, bytes] = {}

        def take(subject: str, data: bytes, seq: int) -> None:
            if data:  # an empty value is a delete marker
                out[subject[len(base) + len(prefix) :]] = data

        await replay_stream(self.js, f"KV_{self.bucket}", f"{base}{prefix}>", take)
        return out


def _sub(parts: dict[str, bytes], prefix: str) -> Callable[[int], bytes | None]:
    return lambda p: parts.get(f"{prefix}{p}")


def _entries_blob(book: LedgerBook, lo: int, hi: int) -> bytes:
    names = book.game_names
    return encode_entries(
        book.ledger.tree.leaf_hashes(lo, hi),
        book.stream_seqs[lo:hi],
        [names[g] for g in book.entry_games[lo:hi]],
        book.entry_versions[lo:hi],
    )


def _state_blob(book: LedgerBook, tail: bytes) -> bytes:
    heads = [_head_json(h, book.head_seqs[h.head.tree_size]) for h in book.heads]
    doc = {
        "balances": [[a.book, a.name, v] for a, v in book.ledger.balances().items()],
        "heads": heads,
        "rejections": [
            [r.game_id, r.version, r.event_id, r.code, r.message] for r in book.rejections.values()
        ],
        "quarantined": list(book.quarantined),
    }
    body = json.dumps(doc, separators=(",", ":")).encode()
    return zlib.compress(struct.pack("<I", len(body)) + body + tail, 1)


def _parse_state(state: bytes) -> tuple[dict[str, Any], EntryRecords]:
    try:
        raw = zlib.decompress(state)
        (length,) = struct.unpack_from("<I", raw)
        doc = json.loads(raw[4 : 4 + length])
    except (zlib.error, struct.error, ValueError) as exc:
        raise CheckpointRejected("malformed", f"the state does not decode: {exc}") from None
    if not isinstance(doc, dict):
        raise CheckpointRejected("malformed", "the state is not an object")
    return doc, decode_entries(raw[4 + length :])


def _parse_manifest(raw: bytes) -> tuple[dict[str, Any], bytes]:
    try:
        stored = json.loads(raw)
        body, signature = stored["body"], bytes.fromhex(stored["signature"])
        if not isinstance(body, dict) or body.get("type") != CHECKPOINT_TYPE:
            raise ValueError(f"not a {CHECKPOINT_TYPE}")
    except (ValueError, TypeError, KeyError) as exc:
        raise CheckpointRejected("malformed", f"the manifest does not parse: {exc}") from None
    return body, signature
