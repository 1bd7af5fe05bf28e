"""Every refusal happens before the store does any work, on the memory store as on PostgreSQL
(``tests/postgres/test_hostile_input.py``): a store whose every primitive fails still refuses
each row of the refusals table with its ``ValidationError``."""

import re
from contextlib import AbstractContextManager
from typing import Any, NoReturn

import pytest

from awa.adapters.memory import ManualClock, MemoryStore
from awa.domain import Lease
from awa.testing.contract import REFUSALS, Given, Refusal


class _NoWork(MemoryStore):
    """Any transaction or one-statement primitive is a test failure."""

    def _refuse(self, *_: Any, **__: Any) -> NoReturn:
        raise AssertionError("the store did work before checking its arguments")

    def _transaction(self, action: str) -> AbstractContextManager[Any]:
        self._refuse(action)

    _insert = _claim = _promote = _delete_finished = _expire_dlq = _refuse
    _try_lead = _release_lead = _get_job = _list_jobs = _set_queue_paused = _refuse
    _set_dlq_enabled = _list_dlq = _get_dlq_entry = _purge_dlq = _refuse


STAND_INS: dict[Given, object] = {
    Given.LIVE_LEASE: Lease(1, 1),
    Given.PENDING_CALLBACK: "x",
    Given.FAILED_JOB: 1,
}


@pytest.mark.parametrize("refusal", REFUSALS, ids=[r.id for r in REFUSALS])
def test_every_refusal_comes_before_any_work(refusal: Refusal) -> None:
    args, kwargs = refusal.arguments(STAND_INS)
    with pytest.raises(refusal.error, match=re.escape(refusal.fragment)):
        getattr(_NoWork(ManualClock()), refusal.verb)(*args, **kwargs)
