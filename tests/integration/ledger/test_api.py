"""The ledger's gRPC API: paging, filters, proofs against served heads, precise errors."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from nats.aio.client import Client as NATS

from boulevard.accounting import decode_entry, verify_consistency, verify_inclusion
from boulevard.api.v1 import ledger_pb2
from tests.integration.ledger.support import (
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


async def test_pages_filters_proofs_and_errors(
    nats_server: NatsHandle, nc: NATS, tmp_path: Path
) -> None:
    envelopes, _ = synthetic_games(games=3, events_per_game=20, seed=4)
    total = money_events(envelopes)
    await publish_envelopes(nc, envelopes)
    settings = ledger_settings(
        nats_server.url, tmp_path, ledger_sign_every=10, ledger_fetch_batch=4
    )
    async with running_ledger(settings) as service, ledger_client(service.address) as client:
        await wait_for_size(client, total)
        stub = client.stub

        # Paging through everything, small pages, gives each entry once, in order.
        seqs = [e.seq async for e in client.entries(page_size=7)]
        assert seqs == list(range(1, total + 1))
        game = envelopes[0].game_id
        mine = [e async for e in client.entries(game_id=game, page_size=3)]
        assert {e.game_id for e in mine} == {game}
        assert [e.version for e in mine] == sorted(e.version for e in mine)
        seat0 = [e async for e in client.entries(game_id=game, account="seat:0", page_size=2)]
        assert seat0 and all(any(p.account == "seat:0" for p in e.postings) for e in seat0)
        assert {e.seq for e in seat0} < {e.seq for e in mine}
        later = [e.seq async for e in client.entries(from_seq=total - 2)]
        assert later == [total - 2, total - 1, total]

        # The served fields are the canonical bytes, decoded.
        e = mine[0]
        entry = decode_entry(e.canonical)
        assert (entry.seq, entry.hash, entry.source.version) == (e.seq, e.hash, e.version)

        # Heads were signed in batches; proofs served for any of them verify.
        heads = [h async for h in client.tree_heads()]
        assert len(heads) >= 2 and heads[-1].head.tree_size == total
        first, last = heads[0].head, heads[-1].head
        proof = await client.consistency_proof(first.tree_size, last.tree_size)
        verify_consistency(first.tree_size, last.tree_size, first.root_hash, last.root_hash, proof)
        proofs = await client.inclusion_proofs(first.tree_size, list(range(first.tree_size)))
        for i, path in proofs.items():
            leaf = decode_entry((await _entry(client, i + 1)).canonical).hash
            verify_inclusion(i, first.tree_size, leaf, path, first.root_hash)
        head, _, _ = await client.tree_head(first.tree_size)
        assert head == heads[0]

        async def status(call: object) -> grpc.StatusCode:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call  # type: ignore[misc]
            return err.value.code()

        req = ledger_pb2
        assert await status(stub.GetBalances(req.GetBalancesRequest())) == (
            grpc.StatusCode.INVALID_ARGUMENT
        )
        assert await status(
            stub.GetBalances(req.GetBalancesRequest(book=game, account="seat 0"))
        ) == (grpc.StatusCode.INVALID_ARGUMENT)
        assert await status(stub.ListEntries(req.ListEntriesRequest(page_token="x"))) == (
            grpc.StatusCode.INVALID_ARGUMENT
        )
        assert await status(stub.ListEntries(req.ListEntriesRequest(game_id="a.b"))) == (
            grpc.StatusCode.INVALID_ARGUMENT
        )
        # Past the tree: OUT_OF_RANGE, as for proofs (issue 27: it said NOT_FOUND, the docs
        # OUT_OF_RANGE); a size within the tree that no head was signed for: NOT_FOUND.
        assert await status(stub.GetTreeHead(req.GetTreeHeadRequest(tree_size=10**6))) == (
            grpc.StatusCode.OUT_OF_RANGE
        )
        assert await status(stub.GetTreeHead(req.GetTreeHeadRequest(tree_size=total + 1))) == (
            grpc.StatusCode.OUT_OF_RANGE
        )
        unsigned = next(n for n in range(1, total) if n not in {h.head.tree_size for h in heads})
        assert await status(stub.GetTreeHead(req.GetTreeHeadRequest(tree_size=unsigned))) == (
            grpc.StatusCode.NOT_FOUND
        )
        assert await status(
            stub.GetInclusionProof(
                req.GetInclusionProofRequest(tree_size=total + 1, leaf_indexes=[0])
            )
        ) == (grpc.StatusCode.OUT_OF_RANGE)
        assert await status(
            stub.GetInclusionProof(req.GetInclusionProofRequest(tree_size=total, leaf_indexes=[]))
        ) == (grpc.StatusCode.INVALID_ARGUMENT)
        assert await status(
            stub.GetInclusionProof(
                req.GetInclusionProofRequest(tree_size=total, leaf_indexes=[total])
            )
        ) == (grpc.StatusCode.OUT_OF_RANGE)
        assert await status(
            stub.GetConsistencyProof(
                req.GetConsistencyProofRequest(first_tree_size=5, second_tree_size=4)
            )
        ) == (grpc.StatusCode.INVALID_ARGUMENT)
        assert await status(stub.Reconcile(req.ReconcileRequest(game_id="nope"))) == (
            grpc.StatusCode.NOT_FOUND
        )
        # Synthetic games are in no registry: they cannot be replayed, and say so.
        assert await status(stub.Reconcile(req.ReconcileRequest(game_id=game))) == (
            grpc.StatusCode.FAILED_PRECONDITION
        )
        assert await client.balances("no-such-game") == {}


async def _entry(client: object, seq: int) -> ledger_pb2.LedgerEntry:
    async for e in client.entries(from_seq=seq, page_size=1):  # type: ignore[attr-defined]
        return e
    raise AssertionError(f"no entry {seq}")
