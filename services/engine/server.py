"""The engine's gRPC servicer. Domain RPCs arrive with the engine issue; until then the
generated base class answers UNIMPLEMENTED."""

from __future__ import annotations

from boulevard.api.v1 import engine_pb2_grpc


class EngineServicer(engine_pb2_grpc.EngineServiceServicer):
    pass
