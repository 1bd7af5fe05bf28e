"""The callback verbs (``awa.ports.CallbackStore``): a running attempt registers a callback;
the external side answers or extends it."""

from __future__ import annotations

import abc
from datetime import datetime

from awa.adapters._fencing import Locked, Writes
from awa.adapters.core.fenced import FencedCore
from awa.adapters.core.transaction import Transaction
from awa.domain import CallbackNotFound, Job, Lease, Resolution, ValidationError, decisions
from awa.domain.defaults import CALLBACK_TIMEOUT_S
from awa.domain.validation import check_seconds
from awa.ports import WriteResult
from awa.ports.checks import check_callback_id, check_register_callback, check_resolution

__all__ = ["Callbacks"]


class Callbacks(FencedCore):
    @abc.abstractmethod
    def _new_callback_id(self) -> str: ...

    def register_callback(
        self, lease: Lease, *, timeout_s: float = CALLBACK_TIMEOUT_S, callback_id: str | None = None
    ) -> WriteResult:
        check_register_callback(lease, timeout_s, callback_id)
        with self._transaction("registering a callback") as tx:
            if callback_id is None:
                chosen = self._new_callback_id()
            elif tx.callback_pending(callback_id):
                raise ValidationError(f"callback id {callback_id!r} is already pending")
            else:
                chosen = callback_id

            def decide(_: int, job: Job, now: datetime) -> Job:
                return decisions.register_callback(job, chosen, timeout_s, now)

            return self._fenced_in(tx, [lease], decide)[0]

    def resolve_callback(self, callback_id: str, resolution: Resolution) -> Job:
        check_resolution(callback_id, resolution)
        with self._transaction("resolving a callback") as tx:
            locked = _pending(tx, callback_id)
            decision = decisions.resolve_callback(locked.job, callback_id, resolution, tx.now())
            writes = Writes()
            writes.answered.append(locked.job.lease)
            writes.decided(decision, locked.dlq_enabled)
            tx.write(writes)
            return decision.job

    def heartbeat_callback(self, callback_id: str, *, timeout_s: float) -> Job:
        check_callback_id(callback_id)
        check_seconds("callback timeout", timeout_s, allow_zero=False)
        with self._transaction("extending a callback") as tx:
            locked = _pending(tx, callback_id)
            extended = decisions.heartbeat_callback(locked.job, callback_id, timeout_s, tx.now())
            writes = Writes()
            writes.keep(extended)
            tx.write(writes)
            return extended


def _pending(tx: Transaction, callback_id: str) -> Locked:
    locked = tx.lock_callback(callback_id)
    if locked is None:
        raise CallbackNotFound(callback_id)
    return locked
