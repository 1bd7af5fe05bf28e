"""The contract generated from the transition table: every ``(state, trigger)`` pair.

For each pair a job is put in the state through the store's own verbs, the trigger is fired
through the matching verb, and the job must move as ``awa.domain.transitions.TRANSITIONS``
says, or be refused with nothing changed. A new row in the table is a new test here.
"""

from __future__ import annotations

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import TRANSITIONS, JobState, Trigger
from awa.ports import ClaimStore
from awa.testing.contract._helpers import StoreFixtures
from awa.testing.scenarios import drive_to, fire

__all__ = ["TableContract"]


_PAIRS = [(state, trigger) for state in JobState for trigger in Trigger]


class TableContract(StoreFixtures):
    """Every ``(state, trigger)`` pair is applied as the table says or refused with no change."""

    @pytest.mark.parametrize(
        ("state", "trigger"), _PAIRS, ids=[f"{s.value}-{t.value}" for s, t in _PAIRS]
    )
    def test_every_state_and_trigger_follows_the_table(
        self, store: ClaimStore, clock: ManualClock, state: JobState, trigger: Trigger
    ) -> None:
        # RESCUE_FAIL and RELEASE_FAIL need the last attempt; RETRY needs one more
        last = trigger in (Trigger.RESCUE_FAIL, Trigger.RELEASE_FAIL) and state.is_live
        max_attempts = 1 if last else 5
        driven = drive_to(store, clock, state, max_attempts=max_attempts)
        assert driven.job.state is state
        fired = fire(store, clock, trigger, driven)
        expected = TRANSITIONS.get((state, trigger))
        if expected is None:
            assert not fired.accepted, f"{trigger} from {state} must be refused"
            assert fired.after == fired.before, "a refused trigger must change nothing"
        else:
            assert fired.accepted, f"{trigger} from {state} must be applied ({fired.detail})"
            assert fired.after.state is expected
            assert fired.after.run_lease >= fired.before.run_lease
