"""A running worker records which kinds it handles on each of its queues, so kinds waiting
where no live worker handles them can be named; it forgets itself when it stops."""

from __future__ import annotations

from dataclasses import dataclass

import awa
from awa.ports import TracksWorkers

from .conftest import Backend, run, until


@dataclass
class ChargeCard:
    cents: int


def test_kinds_waiting_where_no_live_worker_handles_them_are_reported(backend: Backend) -> None:
    async def story() -> None:
        _, store, [worker, producer] = backend.clients(2)
        assert isinstance(store, TracksWorkers)

        @worker.task(ChargeCard, queue="payments")
        async def charge(job: awa.Job[ChargeCard]) -> None: ...

        def waiting() -> list[tuple[str, str, int]]:
            return [(u.queue, u.kind, u.runnable) for u in store.unhandled_kinds()]

        # the producer never imported the handler: without a declaration it picks default
        stray = await producer.insert(ChargeCard(100))
        assert stray.queue == "default"
        await producer.insert(ChargeCard(5), queue="payments")
        await producer.pause_queue("payments")  # the job there waits while the worker lives
        assert waiting() == [("default", "charge_card", 1), ("payments", "charge_card", 1)]

        await worker.start([("payments", 1)])
        await until(lambda: waiting() == [("default", "charge_card", 1)])
        await worker.shutdown()  # forgotten at once, not after its record lapses
        assert waiting() == [("default", "charge_card", 1), ("payments", "charge_card", 1)]

    run(story)
