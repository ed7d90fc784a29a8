"""The ledger's gRPC servicer: each method hands the request to the reader."""

from __future__ import annotations

from typing import Any, TypeAlias

import grpc

from boulevard.api.v1 import ledger_pb2, ledger_pb2_grpc
from services.ledger.reader import LedgerReader

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"


class LedgerServicer(ledger_pb2_grpc.LedgerServiceServicer):
    def __init__(self, reader: LedgerReader) -> None:
        self.reader = reader

    async def GetBalances(
        self, request: ledger_pb2.GetBalancesRequest, context: Context
    ) -> ledger_pb2.GetBalancesResponse:
        return await self.reader.balances(request)

    async def ListEntries(
        self, request: ledger_pb2.ListEntriesRequest, context: Context
    ) -> ledger_pb2.ListEntriesResponse:
        return await self.reader.list_entries(request)

    async def GetTreeHead(
        self, request: ledger_pb2.GetTreeHeadRequest, context: Context
    ) -> ledger_pb2.GetTreeHeadResponse:
        return await self.reader.tree_head(request)

    async def ListTreeHeads(
        self, request: ledger_pb2.ListTreeHeadsRequest, context: Context
    ) -> ledger_pb2.ListTreeHeadsResponse:
        return await self.reader.tree_heads(request)

    async def GetInclusionProof(
        self, request: ledger_pb2.GetInclusionProofRequest, context: Context
    ) -> ledger_pb2.GetInclusionProofResponse:
        return await self.reader.inclusion_proofs(request)

    async def GetConsistencyProof(
        self, request: ledger_pb2.GetConsistencyProofRequest, context: Context
    ) -> ledger_pb2.GetConsistencyProofResponse:
        return await self.reader.consistency_proof(request)

    async def Reconcile(
        self, request: ledger_pb2.ReconcileRequest, context: Context
    ) -> ledger_pb2.ReconcileResponse:
        return await self.reader.reconcile(request)
