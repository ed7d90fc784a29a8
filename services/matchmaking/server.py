"""Matchmaking's gRPC servicer. Domain RPCs arrive with the matchmaking issue; until then
the generated base class answers UNIMPLEMENTED."""

from __future__ import annotations

from boulevard.api.v1 import matchmaking_pb2_grpc


class MatchmakingServicer(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    pass
