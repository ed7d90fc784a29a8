"""JetStream streams, created or updated idempotently from explicit configuration."""

from __future__ import annotations

from dataclasses import dataclass

from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError

from boulevard.platform.settings import Settings


@dataclass(frozen=True, slots=True)
class StreamSpec:
    name: str
    subjects: tuple[str, ...]
    replicas: int = 1
    duplicate_window_seconds: float = 120.0
    memory: bool = False
    # Logs are evidence: nobody deletes or purges a message from them.
    deny_delete: bool = True
    deny_purge: bool = True

    def config(self) -> StreamConfig:
        return StreamConfig(
            name=self.name,
            subjects=list(self.subjects),
            storage=StorageType.MEMORY if self.memory else StorageType.FILE,
            num_replicas=self.replicas,
            duplicate_window=self.duplicate_window_seconds,
            discard=DiscardPolicy.NEW,
            deny_delete=self.deny_delete,
            deny_purge=self.deny_purge,
            allow_direct=True,
            allow_atomic=True,
        )


async def ensure_stream(js: JetStreamContext, spec: StreamSpec, owner: bool = True) -> None:
    """Create the stream, or (its owner only) bring an existing one to this configuration.

    A service that only reads a stream makes it when it starts first, but never changes it:
    NATS lets only the owner's identity update a stream (docs/security.md)."""
    config = spec.config()
    try:
        await js.stream_info(spec.name)
    except NotFoundError:
        await js.add_stream(config)
        return
    if owner:
        await js.update_stream(config)


def platform_streams(settings: Settings) -> dict[str, StreamSpec]:
    """The streams of DESIGN.md ("Names and ports"), named and sized by settings."""

    def spec(name: str, prefix: str, wildcard: str = ">") -> StreamSpec:
        return StreamSpec(
            name=name,
            subjects=(f"{prefix}.{wildcard}",),
            replicas=settings.stream_replicas,
            duplicate_window_seconds=settings.duplicate_window_seconds,
        )

    s = settings
    return {
        "games": spec(s.games_stream, s.games_subject_prefix),
        # `dice.<game_id>` only: the dice service's request subjects `dice.rpc.<op>` have
        # three tokens and must not land in the evidence stream.
        "dice": spec(s.dice_stream, s.dice_subject_prefix, "*"),
        "ledger": spec(s.ledger_stream, s.ledger_subject_prefix),
        "matchmaking": spec(s.matchmaking_stream, s.matchmaking_subject_prefix),
    }
