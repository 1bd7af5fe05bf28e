"""The behavioural contract every ``ClaimStore`` adapter passes, one module per area.

Subclass ``ClaimStoreContract`` in your adapter's tests and supply the store, built on the
``ManualClock`` the suite hands you::

    class TestMyStore(ClaimStoreContract):
        def make_store(self, clock: ManualClock) -> ClaimStore:
            return MyStore(..., clock=clock)

(or override the ``store`` fixture when building it needs other fixtures). The suite does not
know which store it tests.

``ClaimStoreContract`` is the composition of the areas below; each is a mixin with the same
fixture protocol, so an adapter in progress can run one area at a time
(``class TestMyStoreClaims(InsertClaimContract): ...``) and see what it is still missing:

==========================  ====================  ============================================
mixin                       module                area
==========================  ====================  ============================================
``TableContract``           ``table``             every ``(state, trigger)`` pair, from the table
``InsertClaimContract``     ``insert_claim``      insert, claim
``FencingContract``         ``fencing``           heartbeats, stale leases, late writes
``OutcomeContract``         ``outcomes``          what each handler outcome does
``RescueContract``          ``rescue``            crashes, deadlines, the poison-job rule
``CallbackContract``        ``callbacks``         register, resolve, heartbeat a callback
``OperatorContract``        ``operators``         cancel, retry, get, list, queue stats
``ListingContract``         ``listing``           job summaries of both homes, as listings show
``DlqContract``             ``dlq``               the dead-letter queue
``HintContract``            ``hints``             subscribe and its wake-up hints
``PresenceContract``        ``presence``          which kinds live workers handle, per queue
``MaintenanceContract``     ``maintenance``       promote, retention, leadership
``QueueSettingsContract``   ``queue_settings``    configure_queue, retention per queue
``FlowContract``            ``flow``              concurrency and rate limits per queue
``FlowKeysContract``        ``flow_keys``         limits per concurrency key, ordering keys
``UniqueContract``          ``unique``            unique keys through every transition
``PeriodicContract``        ``periodic``          schedules, due fires, the fire's compare-and-set
``SummaryContract``         ``summary``           the queue summary (an optional capability)
``StreamedInsertContract``  ``streamed_inserts``  chunks made while written (optional)
``UnreadableRowContract``   ``unreadable``        a row the store cannot read back (optional)
``HostileInputContract``    ``hostile``           hostile values: refused, or read back whole
``RefusalContract``         ``refusals``          one table of refused inputs, every verb
==========================  ====================  ============================================
"""

from __future__ import annotations

from awa.testing.contract._helpers import StoreFixtures
from awa.testing.contract.callbacks import CallbackContract
from awa.testing.contract.dlq import DlqContract
from awa.testing.contract.fencing import FencingContract
from awa.testing.contract.flow import FlowContract
from awa.testing.contract.flow_keys import FlowKeysContract
from awa.testing.contract.hints import HintContract
from awa.testing.contract.hostile import HostileInputContract
from awa.testing.contract.insert_claim import InsertClaimContract
from awa.testing.contract.listing import ListingContract
from awa.testing.contract.maintenance import MaintenanceContract
from awa.testing.contract.operators import OperatorContract
from awa.testing.contract.outcomes import OutcomeContract
from awa.testing.contract.periodic import PeriodicContract
from awa.testing.contract.presence import PresenceContract
from awa.testing.contract.queue_settings import QueueSettingsContract
from awa.testing.contract.refusals import REFUSALS, Given, Refusal, RefusalContract
from awa.testing.contract.rescue import RescueContract
from awa.testing.contract.streamed_inserts import StreamedInsertContract
from awa.testing.contract.summary import SummaryContract
from awa.testing.contract.table import TableContract
from awa.testing.contract.unique import UniqueContract
from awa.testing.contract.unreadable import Plant, UnreadableRowContract

__all__ = [
    "REFUSALS",
    "CallbackContract",
    "ClaimStoreContract",
    "DlqContract",
    "FencingContract",
    "FlowContract",
    "FlowKeysContract",
    "Given",
    "HintContract",
    "HostileInputContract",
    "InsertClaimContract",
    "ListingContract",
    "MaintenanceContract",
    "OperatorContract",
    "OutcomeContract",
    "PeriodicContract",
    "Plant",
    "PresenceContract",
    "QueueSettingsContract",
    "Refusal",
    "RefusalContract",
    "RescueContract",
    "StoreFixtures",
    "StreamedInsertContract",
    "SummaryContract",
    "TableContract",
    "UniqueContract",
    "UnreadableRowContract",
]


class ClaimStoreContract(
    TableContract,
    InsertClaimContract,
    FencingContract,
    OutcomeContract,
    RescueContract,
    CallbackContract,
    OperatorContract,
    ListingContract,
    DlqContract,
    HintContract,
    PresenceContract,
    MaintenanceContract,
    QueueSettingsContract,
    FlowContract,
    FlowKeysContract,
    UniqueContract,
    PeriodicContract,
    SummaryContract,
    StreamedInsertContract,
    UnreadableRowContract,
    HostileInputContract,
    RefusalContract,
):
    """Pytest mix-in: the whole ``ClaimStore`` contract."""
