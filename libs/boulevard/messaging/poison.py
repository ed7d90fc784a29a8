"""Poison messages: what a consumer does with a message it cannot use.

The rule (docs/security.md, "Poison messages"): a message that does not decode, or that
does not fit where it arrives (out of sequence, not chaining, on the wrong subject), is
logged with where it was and why, counted here, and skipped (acknowledged, so it is never
redelivered); it stays in its stream as evidence. A consumer never crashes, never retries
it forever, and goes on with the next message. `POISONED` is the counter the metrics
endpoint exports; tests read it in-process.
"""

from __future__ import annotations

from collections import Counter

import structlog

from boulevard.platform import metrics

log = structlog.get_logger(__name__)

POISONED: Counter[tuple[str, str]] = Counter()
"""(consumer, reason) -> messages skipped."""


def poisoned(
    consumer: str,
    reason: str,
    *,
    subject: str = "",
    seq: int | None = None,
    error: BaseException | str | None = None,
) -> None:
    """Report one skipped message: an error log line and a count."""
    POISONED[(consumer, reason)] += 1
    metrics.POISON_MESSAGES.labels(metrics.current_service, consumer).inc()
    log.error(
        "poison message skipped",
        consumer=consumer,
        reason=reason,
        subject=subject[:128],
        seq=seq,
        error=(error if isinstance(error, str) else repr(error))[:200] if error else None,
    )
