"""Prometheus metrics: every metric Boulevard exports, in one place.

The services record into these module-level metrics (prometheus-client's default registry,
which also carries the process collector: CPU seconds, RSS, open fds) and `serve()` exposes
them on `/metrics` at `<metrics_host>:<service>_metrics_port`. Labels stay bounded: a game
name, an event type, a gRPC method and code, never a game or player id.

The dashboard (deploy/grafana/boulevard.json) and the alert rules
(deploy/prometheus/alerts.yml) name only metrics defined here; a test checks that they do.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from prometheus_client import REGISTRY, Counter, Gauge, Histogram, start_http_server
from prometheus_client.registry import CollectorRegistry

from boulevard.platform.handlers import Behavior, WrappingInterceptor, is_generator

# Latency buckets for calls that hit JetStream (fsync on every write: `sync_interval: always`)
_LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_WAIT = (0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600)

# -- every service

GRPC_REQUESTS = Counter(
    "boulevard_grpc_requests",
    "gRPC calls handled, by service, method and status code",
    ["service", "method", "code"],
)
GRPC_SECONDS = Histogram(
    "boulevard_grpc_request_seconds",
    "Time to handle a gRPC call (for streams: until the stream ends)",
    ["service", "method"],
    buckets=_LATENCY,
)
HEALTH_SERVING = Gauge(
    "boulevard_health_serving",
    "1 while the service's gRPC health says SERVING, 0 otherwise",
    ["service"],
)
NATS_RECONNECTS = Counter(
    "boulevard_nats_reconnects", "Times the NATS connection came back after a loss", ["service"]
)
NATS_DISCONNECTS = Counter(
    "boulevard_nats_disconnects", "Times the NATS connection was lost", ["service"]
)
POISON_MESSAGES = Counter(
    "boulevard_poison_messages",
    "Messages a consumer could not decode or handle and skipped (terminated)",
    ["service", "consumer"],
)

current_service = ""  # this process's service (start_service sets it), for module-level hooks

# -- engine

GAMES_STARTED = Counter("boulevard_games_started", "Games created by the engine", ["game"])
GAMES_FINISHED = Counter("boulevard_games_finished", "Games that reached GameFinished", ["game"])
SEATS_TIMED_OUT = Counter(
    "boulevard_seats_timed_out", "Seats whose clock ran out (SeatTimedOut recorded)", ["game"]
)
STAND_IN_MOVES = Counter(
    "boulevard_stand_in_moves",
    "Moves the platform's bot played for seats that timed out (hand-overs: see timed out)",
    ["game"],
)
GAMES_OVERDUE = Gauge(
    "boulevard_games_overdue",
    "Games with a clock this engine process holds whose deadline (or an absent seat's turn) "
    "passed over 10 s ago and that nobody has moved on: waiting longer than their time "
    "control allows",
)
GAMES_HALTED = Counter(
    "boulevard_games_halted",
    "Games the engine halted on loading them: their log holds an event it cannot read",
    ["game"],
)
GAMES_LIVE = Gauge(
    "boulevard_games_live",
    "Unfinished games this engine process holds in memory (sum over replicas for the total)",
)
EVENTS_APPENDED = Counter(
    "boulevard_events_appended", "Events appended to GAMES by the engine", ["game"]
)
APPEND_SECONDS = Histogram(
    "boulevard_event_append_seconds",
    "Time of one append to GAMES (all the events of one command), acknowledged by JetStream",
    ["game"],
    buckets=_LATENCY,
)
LAST_APPEND = Gauge(
    "boulevard_last_append_timestamp_seconds",
    "Unix time of the last append to GAMES by this engine process",
)
GAMES_LONGEST_WAIT = Gauge(
    "boulevard_games_longest_wait_seconds",
    "The longest any live game this engine holds has gone without an event",
)
GAMES_STALLED = Gauge(
    "boulevard_games_stalled",
    "Live games this engine holds with no event for longer than BOULEVARD_ENGINE_STALL_SECONDS",
)
GAME_LOADS = Counter(
    "boulevard_engine_game_loads",
    "Games the engine looked up, by where it found them: cache (in memory), snapshot (its "
    "snapshot and the log after it) or log (the whole log)",
    ["source"],
)
GAMES_CACHED = Gauge(
    "boulevard_engine_games_cached", "Games this engine process holds in memory (live or not)"
)

# -- dice

DICE_OUTCOMES = Counter("boulevard_dice_outcomes", "Outcomes drawn and recorded on DICE", ["kind"])
DICE_SEEDS_UNPURGED = Gauge(
    "boulevard_dice_seeds_unpurged",
    "Revealed seeds the vault still holds because their purge failed (retried every second)",
)
DICE_VERIFICATIONS = Counter(
    "boulevard_dice_verifications",
    "VerifyGame answers by result (a failure means recorded outcomes do not match the seed)",
    ["result"],
)

# -- ledger

LEDGER_ENTRIES = Counter("boulevard_ledger_entries", "Journal entries posted to LEDGER")
LEDGER_TREE_SIZE = Gauge("boulevard_ledger_tree_size", "Entries in the ledger's Merkle tree")
LEDGER_REJECTIONS = Counter(
    "boulevard_ledger_rejections",
    "Game events the ledger refused to post (the LEDGER ALARM), by reason code",
    ["code"],
)
LEDGER_UNEXPLAINED = Counter(
    "boulevard_ledger_unexplained_entries",
    "Entries read back from LEDGER that no game event explains (the LEDGER ALARM): the "
    "ledger stops signing heads",
)
LEDGER_CHECKPOINTS = Counter(
    "boulevard_ledger_checkpoints",
    "Ledger checkpoints by outcome: written, write_failed, loaded, none, unreadable (the"
    " bucket did not answer, a timeout or lost connection: read again, no alarm), rejected"
    " (read and does not match LEDGER: a LEDGER ALARM, the ledger rebuilt from the whole log)",
    ["outcome", "reason"],
)
LEDGER_REBUILD_SECONDS = Gauge(
    "boulevard_ledger_rebuild_seconds",
    "How long the ledger's last rebuild took, by where it started (checkpoint or log)",
    ["source"],
)
LEDGER_RECONCILIATIONS = Counter(
    "boulevard_ledger_reconciliations",
    "Reconcile answers by result (a failure: ledger money differs from the game's)",
    ["result"],
)

# -- JetStream, as the services read it (boulevard.messaging.lag)

CONSUMER_PENDING = Gauge(
    "boulevard_consumer_pending_messages",
    "Messages a durable consumer has not acknowledged yet (undelivered plus unacked)",
    ["stream", "consumer"],
)
CONSUMER_ACK_FLOOR_AGE = Gauge(
    "boulevard_consumer_ack_floor_age_seconds",
    "Seconds since a durable consumer last acknowledged, while messages wait (0: none wait)",
    ["stream", "consumer"],
)
STREAM_REPLICAS = Gauge("boulevard_stream_replicas", "Replicas a stream is configured with",
                        ["stream"])  # fmt: skip
STREAM_REPLICAS_CURRENT = Gauge(
    "boulevard_stream_replicas_current",
    "Replicas of a stream that are up to date, the leader included",
    ["stream"],
)
STREAM_HAS_LEADER = Gauge(
    "boulevard_stream_has_leader", "1 while a stream has a leader (0: no writes possible)",
    ["stream"],
)  # fmt: skip

# -- matchmaking

QUEUE_DEPTH = Gauge("boulevard_matchmaking_queue_depth", "Tickets waiting for a match", ["game"])
TIME_TO_MATCH = Histogram(
    "boulevard_matchmaking_time_to_match_seconds",
    "From a ticket's creation to the match that seats it",
    ["game"],
    buckets=_WAIT,
)
MATCHES_FORMED = Counter("boulevard_matches_formed", "Matches committed", ["game"])
BOT_GAMES_RESUMED = Counter(
    "boulevard_bot_games_resumed",
    "Bot games this process took over after the process playing them stopped",
)


# -- gateway (services/gateway: browsers over Connect and gRPC-Web)

GATEWAY_REQUESTS = Counter(
    "boulevard_gateway_requests",
    "Calls the gateway answered, by procedure (Service/Method), protocol (connect, grpc-web,"
    " grpc) and the status code the caller saw (for streams: counted when the stream ends)",
    ["procedure", "protocol", "code"],
)
GATEWAY_STREAMS_OPEN = Gauge(
    "boulevard_gateway_streams_open",
    "Server streams the gateway is forwarding now, by procedure and protocol",
    ["procedure", "protocol"],
)
GATEWAY_FORWARD_SECONDS = Histogram(
    "boulevard_gateway_forward_seconds",
    "Time of one forwarded unary call, from the decoded request to the service's answer",
    ["procedure", "protocol"],
    buckets=_LATENCY,
)


def metric_names(registry: CollectorRegistry = REGISTRY) -> set[str]:
    """Every sample name the registry exports (counters with their _total, histograms with
    _bucket/_sum/_count), for checking what dashboards and alerts may refer to."""
    names: set[str] = set()
    for family in registry.collect():
        names.add(family.name)
        for sample in family.samples:
            names.add(sample.name)
        if family.type == "counter":
            names.add(family.name + "_total")
        elif family.type == "histogram":
            names.update(family.name + s for s in ("_bucket", "_sum", "_count"))
    return names


def serve_metrics(host: str, port: int) -> int:
    """Serve /metrics from a thread; the port it bound (port 0 picks a free one)."""
    server, _thread = start_http_server(port, addr=host)
    return int(server.server_address[1])


class Timer:
    """`with Timer(histogram.labels(...)):` without the decorator machinery."""

    def __init__(self, observer: Any) -> None:
        self._observer = observer

    def __enter__(self) -> None:
        self._start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self._observer.observe(time.perf_counter() - self._start)


def _code_of(context: grpc.aio.ServicerContext[Any, Any], failed: BaseException | None) -> str:
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return str(code.name)
    if isinstance(failed, asyncio.CancelledError):
        return str(grpc.StatusCode.CANCELLED.name)
    if failed is not None:
        return str(grpc.StatusCode.UNKNOWN.name)
    return str(grpc.StatusCode.OK.name)


# A bidi stream is counted and timed as a whole under its method's name with this suffix
# ("SubmitActions.stream"): its messages may be calls of their own under the method's name
# (SubmitActions counts each move so, docs/performance.md), which a stream's count and its
# life-long duration would muddle.
BIDI_STREAM = ".stream"

Recorder = Callable[[grpc.aio.ServicerContext[Any, Any], float, Any], None]


class MetricsInterceptor(WrappingInterceptor):
    """Counts every call by method and final status code and times it. Runs outside the
    error interceptor, so a domain error is counted with the code the client saw. A bidi
    stream is counted once it ends, as "<method>.stream" (`BIDI_STREAM`); client-streaming
    methods, which no service of ours has, are not counted."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def recorder(self, method: str, *, bidi: bool = False) -> Recorder:
        """What a call of `method` (a whole bidi stream, with `bidi`) records when it ends
        (its labels looked up once per method, its status code on every call)."""
        service, short = self.service, method.rsplit("/", 1)[-1] + (BIDI_STREAM if bidi else "")
        requests = GRPC_REQUESTS
        seconds = GRPC_SECONDS.labels(service, short)

        def record(context: grpc.aio.ServicerContext[Any, Any], start: float, exc: Any) -> None:
            seconds.observe(time.perf_counter() - start)
            requests.labels(service, short, _code_of(context, exc)).inc()

        return record

    def wrap_unary(self, behavior: Behavior, method: str) -> Behavior:
        return _timed(behavior, self.recorder(method))

    def wrap_generator(self, behavior: Behavior, method: str) -> Behavior:
        return _timed_generator(behavior, self.recorder(method))

    def wrap_bidi(self, behavior: Behavior, method: str) -> Behavior:
        record = self.recorder(method, bidi=True)
        if not is_generator(behavior):
            return _timed(behavior, record)  # a coroutine reading and writing on `context`
        return _timed_generator(behavior, record)


def _timed(behavior: Behavior, record: Recorder) -> Behavior:
    async def timed(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        start, failed = time.perf_counter(), None
        try:
            return await behavior(request, context)
        except BaseException as exc:
            failed = exc
            raise
        finally:
            record(context, start, failed)

    return timed


def _timed_generator(behavior: Behavior, record: Recorder) -> Behavior:
    async def timed(
        request: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[Any]:
        start, failed = time.perf_counter(), None
        try:
            async for item in behavior(request, context):
                yield item
        except BaseException as exc:
            failed = exc
            raise
        finally:
            record(context, start, failed)

    return timed
