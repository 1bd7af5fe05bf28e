"""The worker's log: one line per ended attempt, and one per lifecycle event of the process.

Every line carries its fields as ``extra`` (``job_id``, ``kind``, ``queue``, ``attempt``,
``max_attempts``, ``outcome``, ``duration_s``, ``error_type``, ``error``, and for a retry or a
snooze ``next_run_at``), so a JSON formatter (``awa worker --log-format json``) writes them as
keys. "after 0.009s" is how long the handler ran; the job runs again at ``next_run_at``.
Failures, rescues, releases and dropped handlers are WARNING; snoozes, parks, cancels (by the
handler, or from outside while it ran) and refused late finishes INFO; completions DEBUG (one
line per job at INFO would cost a busy worker a fifth of its throughput). The logger is
``awa.worker``.

The job data a message quotes (kind, queue, error text) is escaped there
(``awa.escaping.printable``), so each attempt is one line under any formatter, not only under
``awa worker``'s own (``awa.worker.log_output``); the ``extra`` fields keep it exact.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timezone
from typing import Any

from awa.escaping import printable
from awa.ports import Rescued, StaleReason
from awa.runtime.observe import AttemptEnd, Ending, MaintenanceReport, Observer

__all__ = ["AttemptLog"]

log = logging.getLogger("awa.worker")

_LEVELS = {
    ending: logging.WARNING
    if ending in (Ending.RETRIED, Ending.FAILED, Ending.RELEASED, Ending.DROPPED)
    else logging.DEBUG
    if ending is Ending.COMPLETED
    else logging.INFO
    for ending in Ending
}


def _next_run_at(end: AttemptEnd) -> str | None:
    """When a retried or snoozed job runs next (ISO 8601, UTC, milliseconds)."""
    job = end.job
    if job is None or end.ending not in (Ending.RETRIED, Ending.SNOOZED):
        return None
    at = job.run_at.astimezone(timezone.utc).isoformat(timespec="milliseconds")
    return at.replace("+00:00", "Z")


def _fields(end: AttemptEnd) -> dict[str, Any]:
    return {
        "job_id": end.job_id,
        "kind": end.kind,
        "queue": end.queue,
        "attempt": end.attempt,
        "max_attempts": end.max_attempts,
        "outcome": end.ending.value,
        "duration_s": round(end.handler_s, 6),
        "error_type": end.error_type,
        "error": end.error,
        "next_run_at": _next_run_at(end),
    }


class AttemptLog(Observer):
    def hears(self, ending: Ending) -> bool:
        return log.isEnabledFor(_LEVELS[ending])

    def attempt_ended(self, end: AttemptEnd) -> None:
        level = _LEVELS[end.ending]
        why = f": {printable(end.error)}" if end.error else ""
        if end.ending is Ending.STALE and end.stale_reason is not None:
            why = f": the attempt no longer owned the job ({end.stale_reason})"
        elif end.ending is Ending.CANCELLED and end.stale_reason is StaleReason.CANCELLED:
            why = ": cancelled while running; the handler's outcome was not written"
        elif end.ending is Ending.RELEASED and end.job is not None:
            why += f"; now {end.job.state.value}"  # retryable at once, or failed when spent
        fields = _fields(end)
        if fields["next_run_at"] is not None:
            why += f"; runs again at {fields['next_run_at']}"
        log.log(
            level,
            "job %s (%s, queue %s) attempt %s/%s %s after %.3fs%s",
            end.job_id,
            printable(end.kind),
            printable(end.queue),
            end.attempt,
            end.max_attempts,
            end.ending.value,
            fields["duration_s"],  # the line and its field say the same
            why,
            extra=fields,
        )

    def maintained(self, report: MaintenanceReport, rescued: Sequence[Rescued]) -> None:
        for item in rescued:
            job = item.job
            where = "dead-lettered" if item.dead_lettered else job.state.value
            log.warning(
                "job %s (%s, queue %s) attempt %s/%s rescued: %s; now %s",
                job.id,
                printable(job.kind),
                printable(job.queue),
                job.attempt,
                job.max_attempts,
                printable(item.cause.error),
                where,
                extra={
                    "job_id": job.id,
                    "kind": job.kind,
                    "queue": job.queue,
                    "attempt": job.attempt,
                    "max_attempts": job.max_attempts,
                    "outcome": "rescued",
                    "error": item.cause.error,
                    "dlq_reason": item.cause.dlq_reason.value if item.dead_lettered else None,
                },
            )

    def worker_started(self, owner: str, queues: Sequence[str]) -> None:
        log.info(
            "worker %s started on queues %s",
            owner,
            ", ".join(queues),
            extra={"owner": owner, "queues": list(queues)},
        )

    def worker_stopped(self, owner: str, released: int) -> None:
        log.info(
            "worker %s stopped (%d running attempts released)",
            owner,
            released,
            extra={"owner": owner, "released": released},
        )

    def leadership_changed(self, owner: str, leading: bool) -> None:
        log.info(
            "worker %s %s the maintenance leadership",
            owner,
            "took" if leading else "lost",
            extra={"owner": owner, "leading": leading},
        )
