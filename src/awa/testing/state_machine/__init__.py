"""A Hypothesis state machine that drives any ``ClaimStore`` and checks the lifecycle's laws.

Build a test class for your adapter with::

    TestMyStoreMachine = make_state_machine(lambda clock: MyStore(clock=clock)).TestCase

Each rule predicts the store's answer from the pure domain (the reference) before calling the
store, so a store that applies a write the lease should have fenced off, claims the wrong job,
or loses a job fails here. Some inserts take unique keys (of two, with one of three state
sets): the machine predicts each conflict from the jobs that hold a key, and after every step
checks that no two jobs hold one. The machine knows nothing about which store it drives.

The rules live by role, each a ``MachineBase`` (``base.py``: the model and the shared checks):
``producers``, ``workers``, ``external`` (the system behind callbacks), ``operators``,
``maintenance`` and the ``invariants`` checked after every step.
"""

from __future__ import annotations

from hypothesis.stateful import RuleBasedStateMachine

from awa.testing.state_machine.base import STALENESS_S, StoreFactory
from awa.testing.state_machine.external import ExternalRules
from awa.testing.state_machine.invariants import Invariants
from awa.testing.state_machine.maintenance import MaintenanceRules
from awa.testing.state_machine.operators import OperatorRules
from awa.testing.state_machine.producers import ProducerRules
from awa.testing.state_machine.workers import WorkerRules

__all__ = ["STALENESS_S", "StoreFactory", "make_state_machine"]


def make_state_machine(
    store_factory: StoreFactory, *, jobs_max: int = 10
) -> type[RuleBasedStateMachine]:
    """A ``RuleBasedStateMachine`` class over stores built by ``store_factory``, which gets a
    fresh ``ManualClock`` and must return an empty store using it."""

    # Hypothesis collects the rules of every base by name, so the order it draws them in is
    # the same as one class holding them all
    class ClaimStoreMachine(
        ProducerRules, WorkerRules, ExternalRules, OperatorRules, MaintenanceRules, Invariants
    ):
        def __init__(self) -> None:
            super().__init__(store_factory)

    ClaimStoreMachine.jobs_max = jobs_max
    ClaimStoreMachine.__name__ = ClaimStoreMachine.__qualname__ = "ClaimStoreMachine"
    return ClaimStoreMachine
