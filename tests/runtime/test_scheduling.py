"""Scheduling through the clients, on both backends: periodic jobs fired by the maintenance
leader and run by the workers, unique inserts, and priority aging at claim time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

import awa

from .conftest import Backend, advance_until, run, until

S = awa.JobState


@dataclass
class Report:
    day: int


def test_a_periodic_job_is_stored_at_start_fired_by_the_leader_and_run(backend: Backend) -> None:
    async def story() -> None:
        clock, _, [client] = backend.clients()
        ran: list[dict[str, object]] = []

        @client.task(Report, queue="reports")
        async def report(job: awa.Job[Report]) -> None:
            ran.append(dict(job.metadata))

        client.periodic("minutely", "* * * * *", Report(1), queue="reports")
        assert await client.list_periodic() == []  # stored by start()
        config = awa.RuntimeConfig(maintenance_interval_s=1)
        await client.start([("reports", 2)], runtime_config=config)
        try:
            [stored] = await client.list_periodic()
            assert stored.next_fire_at == clock.now().replace(second=0) + timedelta(minutes=1)
            await advance_until(clock, lambda: len(ran) >= 2, step_s=20, steps_max=30)
        finally:
            await client.shutdown(timeout=1)
        assert ran[0]["periodic_name"] == "minutely"
        assert ran[0]["periodic_fire_at"] == stored.next_fire_at.isoformat()
        fires = [r["periodic_fire_at"] for r in ran]
        assert len(set(fires)) == len(fires), "a fire ran twice"
        [after] = await client.list_periodic()
        assert after.last_fire_at is not None

    run(story)


def test_periodic_verbs_from_the_client(backend: Backend) -> None:
    async def story() -> None:
        _, store, [client] = backend.clients()
        store.register_schedules(
            [awa.Schedule(name="nightly", cron="0 3 * * *", job=awa.NewJob(kind="report"))]
        )
        assert (await client.pause_periodic("nightly")).paused
        assert not (await client.resume_periodic("nightly")).paused
        job = await client.trigger_periodic("nightly")
        assert job.metadata["periodic_name"] == "nightly"
        await client.remove_periodic("nightly")
        with pytest.raises(awa.ScheduleNotFound):
            await client.remove_periodic("nightly")
        with pytest.raises(awa.ValidationError, match="cron"):
            client.periodic("bad", "every day", Report(1))
        with pytest.raises(awa.ValidationError, match="time zone"):
            client.periodic("bad", "0 3 * * *", Report(1), timezone="Paris")

    run(story)


def test_unique_inserts_from_the_client(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        once = awa.Unique(by_args=True)
        first = await client.insert(Report(7), unique=once)
        with pytest.raises(awa.UniqueConflict) as raised:
            await client.insert(Report(7), unique=once)
        assert raised.value.job_id == first.id
        assert await client.insert(Report(7), unique=once, on_conflict="skip") == first
        other = await client.insert(Report(8), unique=once)
        both = await client.insert_many(
            [awa.InsertSpec(args=Report(7), unique=once), awa.InsertSpec(args=Report(9))],
            on_conflict="skip",
        )
        assert both[0] == first
        assert both[1].id > other.id
        cancelled = await client.cancel_by_unique_key(Report(7), unique=once)
        assert cancelled is not None
        assert (cancelled.id, cancelled.state) == (first.id, S.CANCELLED)
        assert await client.cancel_by_unique_key(Report(7), unique=once) is None

    run(story)


def test_priority_aging_set_at_start_lets_old_low_priority_work_through(
    backend: Backend,
) -> None:
    async def story() -> None:
        clock, _, [client] = backend.clients()
        order: list[str] = []

        @client.task(Report)
        async def report(job: awa.Job[Report]) -> None:
            order.append(f"{job.priority}:{job.args.day}")

        await client.insert(Report(1), priority=4)
        clock.advance(300)
        await client.insert_many([awa.InsertSpec(args=Report(2), priority=2)])
        await client.start([("default", 1)], priority_aging_interval=100)
        try:
            await until(lambda: len(order) == 2)
        finally:
            await client.shutdown(timeout=1)
        assert order == ["4:1", "2:2"]  # 4 - 3 steps = 1: ahead of the priority-2 job

    run(story)
