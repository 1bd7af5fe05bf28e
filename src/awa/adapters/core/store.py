"""``StoreCore``: the ``ClaimStore`` port written once, its roles composed.

Every public verb checks its arguments first (``awa.ports.checks``), then either hands the
work to one primitive the adapter supplies (reads, settings, the statements simple enough to
run as one) or runs the lifecycle itself inside one ``Transaction`` of the adapter's: lock
the rows, let the domain decide (``awa.domain.decisions``), write the decided rows back.
Adapters hold storage, not decisions (``docs/store-adapters.md``).
"""

from __future__ import annotations

from awa.adapters.core.callbacks import Callbacks
from awa.adapters.core.dead_letters import DeadLetters
from awa.adapters.core.maintenance import Maintaining
from awa.adapters.core.operating import Operating
from awa.adapters.core.schedules import Schedules
from awa.adapters.core.working import Working

__all__ = ["StoreCore"]


class StoreCore(Working, Callbacks, Maintaining, Operating, DeadLetters, Schedules):
    """A ``ClaimStore`` whose verbs are written once, by role: producing and the schedules
    (``Schedules`` builds on ``Producing``), working, callbacks, maintenance, operating and
    the dead-letter queue. Subclasses supply the primitives; ``RowPaths`` supplies insert,
    claim, promote and fire over a ``RowTransaction``."""
