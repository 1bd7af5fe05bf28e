"""``awa.ports.TracksWorkers`` written once: the arguments checked, then a store's three
primitives. A store opts in by deriving from ``WorkerPresence`` and supplying them."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence

from awa.domain.validation import check_seconds
from awa.ports import UnhandledKind
from awa.ports.checks import check_owner, check_worker_kinds

__all__ = ["WorkerPresence"]


class WorkerPresence(abc.ABC):
    def record_worker(
        self, owner: str, kinds: Mapping[str, Sequence[str]], *, ttl_s: float
    ) -> None:
        checked_owner = check_owner(owner)
        checked = check_worker_kinds(kinds)
        self._record_worker(checked_owner, checked, check_seconds("ttl", ttl_s, allow_zero=False))

    def forget_worker(self, owner: str) -> None:
        self._forget_worker(check_owner(owner))

    def unhandled_kinds(self) -> list[UnhandledKind]:
        return self._unhandled_kinds()

    @abc.abstractmethod
    def _record_worker(self, owner: str, kinds: dict[str, tuple[str, ...]], ttl_s: float) -> None:
        """Replace ``owner``'s rows (one per queue) with these, lapsing ``ttl_s`` from now;
        drop other owners' lapsed rows on the way."""

    @abc.abstractmethod
    def _forget_worker(self, owner: str) -> None: ...

    @abc.abstractmethod
    def _unhandled_kinds(self) -> list[UnhandledKind]:
        """Pending jobs due now (``run_at <= now``) grouped by ``(queue, kind)`` where no
        unlapsed row of that queue lists the kind, in that order."""
