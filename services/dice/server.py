"""The dice service's public gRPC API: commitments, outcomes, reveals and verification for
clients and auditors. Errors are mapped to status codes by the platform's interceptor."""

from __future__ import annotations

from typing import Any, TypeAlias

import grpc

from boulevard.api.v1 import dice_pb2, dice_pb2_grpc
from services.dice.queries import DiceQueries

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"


class DiceServicer(dice_pb2_grpc.DiceServiceServicer):
    def __init__(self, queries: DiceQueries) -> None:
        self._queries = queries

    async def GetCommitment(
        self, request: dice_pb2.GetCommitmentRequest, context: Context
    ) -> dice_pb2.GetCommitmentResponse:
        return await self._queries.get_commitment(request.game_id)

    async def ListOutcomes(
        self, request: dice_pb2.ListOutcomesRequest, context: Context
    ) -> dice_pb2.ListOutcomesResponse:
        return await self._queries.list_outcomes(
            request.game_id, request.page_size, request.page_token
        )

    async def GetReveal(
        self, request: dice_pb2.GetRevealRequest, context: Context
    ) -> dice_pb2.GetRevealResponse:
        return await self._queries.get_reveal(request.game_id)

    async def VerifyGame(
        self, request: dice_pb2.VerifyGameRequest, context: Context
    ) -> dice_pb2.VerifyGameResponse:
        return await self._queries.verify(request.game_id)

    async def ListLogRecords(
        self, request: dice_pb2.ListLogRecordsRequest, context: Context
    ) -> dice_pb2.ListLogRecordsResponse:
        return await self._queries.log_records(request.game_id)

    async def GetLogHeads(
        self, request: dice_pb2.GetLogHeadsRequest, context: Context
    ) -> dice_pb2.GetLogHeadsResponse:
        return await self._queries.log_heads(request.game_id, request.tree_size)

    async def GetLogInclusionProof(
        self, request: dice_pb2.GetLogInclusionProofRequest, context: Context
    ) -> dice_pb2.GetLogInclusionProofResponse:
        return await self._queries.inclusion_proof(
            request.game_id, request.tree_size, request.leaf_index
        )

    async def GetLogConsistencyProof(
        self, request: dice_pb2.GetLogConsistencyProofRequest, context: Context
    ) -> dice_pb2.GetLogConsistencyProofResponse:
        return await self._queries.consistency_proof(
            request.game_id, request.first_tree_size, request.second_tree_size
        )
