"""What the maintenance leader's services (``MaintenanceService``, ``PeriodicService``) share:
the store's maintenance role, the bounded way to call it, the configuration and counters, the
owner they lead as, and how long that leadership lasts unrenewed."""

from __future__ import annotations

from awa.ports import MaintenanceStore
from awa.runtime.config import RuntimeConfig
from awa.runtime.stats import RuntimeStats
from awa.runtime.store_calls import StoreCalls

__all__ = ["LEAD_TTL_INTERVALS", "LeaderService"]

#: the leadership lapses after this many maintenance intervals unrenewed: one slow round
#: does not hand it to another process
LEAD_TTL_INTERVALS = 3


class LeaderService:
    """A service that works only while its process leads maintenance (``try_lead``)."""

    def __init__(
        self,
        store: MaintenanceStore,
        store_call: StoreCalls,
        config: RuntimeConfig,
        stats: RuntimeStats,
        *,
        owner: str,
    ) -> None:
        self._store = store
        self._call = store_call
        self.config = config
        self._stats = stats
        self.owner = owner

    @property
    def lead_ttl_s(self) -> float:
        return LEAD_TTL_INTERVALS * self.config.maintenance_interval_s
