"""JetStream streams, created or updated idempotently from explicit configuration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError

from boulevard.platform.settings import Settings

log = structlog.get_logger(__name__)


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


class StreamMismatch(RuntimeError):
    """An existing stream is not configured as this version makes it, in a way that
    matters to who may read or write what: a service refuses to use it."""


# What a stream's configuration decides about evidence and about who reads what: it must
# be exactly as made. A stream captures every publish on its subjects, republishes and
# sources inside the account past the NATS permissions, and its limits discard evidence.
_EXACT = (
    "subjects",
    "retention",
    "storage",
    "discard",
    "max_msgs",
    "max_bytes",
    "max_age",
    "max_msgs_per_subject",
    "max_msg_size",
    "deny_delete",
    "deny_purge",
)
_ABSENT = ("mirror", "sources", "republish", "subject_transform")
# Unset limits are unlimited: nats-py leaves them None, the server answers -1 (0 for age).
_UNLIMITED = {"max_msgs": -1, "max_bytes": -1, "max_age": 0, "max_msgs_per_subject": -1,
              "max_msg_size": -1}  # fmt: skip


def _normal(name: str, value: Any) -> Any:
    if value is None and name in _UNLIMITED:
        return _UNLIMITED[name]
    if name == "max_age" and value is not None:
        return float(value)
    if name == "subjects":
        return sorted(value or ())
    if name == "retention" and value is None:
        return RetentionPolicy.LIMITS
    return value


def differences(found: StreamConfig, wanted: StreamConfig) -> tuple[list[str], list[str]]:
    """The fields where `found` is not `wanted`: those that matter to security (see
    `_EXACT`, `_ABSENT`), then the others this module sets (window, replicas, flags)."""
    unsafe = [
        name
        for name in _EXACT
        if _normal(name, getattr(found, name)) != _normal(name, getattr(wanted, name))
    ]
    unsafe += [name for name in _ABSENT if getattr(found, name)]
    benign = [
        name
        for name in ("duplicate_window", "num_replicas", "allow_direct", "allow_atomic")
        if getattr(found, name) != getattr(wanted, name)
    ]
    return unsafe, benign


async def ensure_stream(js: JetStreamContext, spec: StreamSpec, *, update: bool = False) -> None:
    """Create the stream, or check the existing one.

    A service never updates a stream (NATS permissions refuse it, docs/security.md: a
    stream's configuration reaches past them), so it creates a missing stream and checks an
    existing one: configured otherwise where it matters (subjects, republish, sources,
    limits, deletes: `differences`) it raises StreamMismatch and the service does not
    start; other differences (an older version's duplicate window, say) are logged.
    `update=True` brings an existing stream to this configuration: for the `admin`
    identity (`boulevard up` does it before starting the services)."""
    config = spec.config()
    try:
        info = await js.stream_info(spec.name)
    except NotFoundError:
        await js.add_stream(config)
        return
    if update:
        await js.update_stream(config)
        return
    unsafe, benign = differences(info.config, config)
    if unsafe:
        raise StreamMismatch(
            f"stream {spec.name} is not configured as Boulevard makes it ({', '.join(unsafe)}): "
            "someone made or changed it to capture, republish, source or discard messages; "
            "refusing to use it (docs/security.md)"
        )
    if benign:
        log.warning(
            "stream configured otherwise than this version makes it; an operator applies it "
            "with the admin identity (boulevard up does)",
            stream=spec.name,
            fields=benign,
        )


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
