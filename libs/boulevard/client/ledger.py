"""Client of the ledger service (`LedgerService`, gRPC), for apps and auditors.

Pages and batches are handled here, so callers iterate entries and heads and ask proofs for
any number of leaves. What a ledger is reconciled against (`money_trail`) and the heads'
wire form are the contract's (`boulevard.contract.ledger`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import grpc

from boulevard.accounting import SignedTreeHead
from boulevard.api.v1 import ledger_pb2, ledger_pb2_grpc
from boulevard.contract.ledger import head_from_pb

MAX_PAGE = 1000


class LedgerClient:
    def __init__(self, channel: grpc.aio.Channel, timeout: float = 30.0) -> None:
        self.stub = ledger_pb2_grpc.LedgerServiceStub(channel)
        self.timeout = timeout

    async def balances(self, book: str, account: str = "") -> dict[str, int]:
        reply = await self.stub.GetBalances(
            ledger_pb2.GetBalancesRequest(book=book, account=account), timeout=self.timeout
        )
        return {b.account: b.amount for b in reply.balances}

    async def entries(
        self, game_id: str = "", account: str = "", from_seq: int = 0, page_size: int = MAX_PAGE
    ) -> AsyncIterator[ledger_pb2.LedgerEntry]:
        token = ""
        while True:
            reply = await self.stub.ListEntries(
                ledger_pb2.ListEntriesRequest(
                    game_id=game_id,
                    account=account,
                    page_size=page_size,
                    page_token=token,
                    from_seq=from_seq,
                ),
                timeout=self.timeout,
            )
            for e in reply.entries:
                yield e
            token = reply.next_page_token
            if not token:
                return

    async def tree_head(self, tree_size: int = 0) -> tuple[SignedTreeHead, bytes, int]:
        """A signed head (the latest by default), the ledger's public key, and its size now."""
        reply = await self.stub.GetTreeHead(
            ledger_pb2.GetTreeHeadRequest(tree_size=tree_size), timeout=self.timeout
        )
        return head_from_pb(reply.head), bytes(reply.public_key), reply.tree_size

    async def tree_heads(self) -> AsyncIterator[SignedTreeHead]:
        token = ""
        while True:
            reply = await self.stub.ListTreeHeads(
                ledger_pb2.ListTreeHeadsRequest(page_size=MAX_PAGE, page_token=token),
                timeout=self.timeout,
            )
            for h in reply.heads:
                yield head_from_pb(h)
            token = reply.next_page_token
            if not token:
                return

    async def inclusion_proofs(
        self, tree_size: int, leaf_indexes: Sequence[int]
    ) -> dict[int, list[bytes]]:
        out: dict[int, list[bytes]] = {}
        for i in range(0, len(leaf_indexes), MAX_PAGE):
            reply = await self.stub.GetInclusionProof(
                ledger_pb2.GetInclusionProofRequest(
                    tree_size=tree_size, leaf_indexes=leaf_indexes[i : i + MAX_PAGE]
                ),
                timeout=self.timeout,
            )
            for p in reply.proofs:
                out[p.leaf_index] = [bytes(h) for h in p.hashes]
        return out

    async def consistency_proof(self, first: int, second: int) -> list[bytes]:
        reply = await self.stub.GetConsistencyProof(
            ledger_pb2.GetConsistencyProofRequest(first_tree_size=first, second_tree_size=second),
            timeout=self.timeout,
        )
        return [bytes(h) for h in reply.hashes]

    async def reconcile(
        self, game_id: str, include_events: bool = False
    ) -> ledger_pb2.ReconcileResponse:
        reply: ledger_pb2.ReconcileResponse = await self.stub.Reconcile(
            ledger_pb2.ReconcileRequest(game_id=game_id, include_events=include_events),
            timeout=self.timeout,
        )
        return reply
