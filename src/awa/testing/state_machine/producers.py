"""The machine's producers: inserts, some of them taking unique keys.

Some inserts take unique keys (of two, with one of three state sets): the machine predicts each
conflict from the jobs that hold a key (``MachineBase._holder``).
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from awa.domain import (
    DEFAULT_UNIQUE_STATES,
    JobState,
    NewJob,
    Unique,
    UniqueConflict,
    holds_unique_key,
)
from awa.domain.states import TERMINAL_STATES
from awa.testing.state_machine.base import QUEUES, MachineBase, Model

__all__ = ["ProducerRules"]

#: unique keys (two times in three): one of two keys with the default, "unfinished" or every
#: state set
_KEYED = st.builds(
    lambda key, states: (key, Unique(by_args=["key"], states=states)),
    st.sampled_from(["a", "b"]),
    st.sampled_from(
        [DEFAULT_UNIQUE_STATES, frozenset(JobState) - TERMINAL_STATES, frozenset(JobState)]
    ),
)
_UNIQUE = st.one_of(st.none(), _KEYED, _KEYED)


class ProducerRules(MachineBase):
    @initialize(
        jobs=st.lists(
            st.tuples(
                st.sampled_from(QUEUES),
                st.integers(1, 4),
                st.integers(1, 3),
                st.sampled_from([None, "a", "a"]),
                st.sampled_from([None, None, "o"]),
            ),
            min_size=2,
            max_size=4,
        ),
        key_limit=st.sampled_from([None, 1]),
    )
    def seed_jobs(
        self, jobs: list[tuple[str, int, int, str | None, str | None]], key_limit: int | None
    ) -> None:
        # start with work on both queues so short runs still reach re-claims and rescues, and
        # with jobs of one key, often on a queue that limits keys: the keyed claims' laws need
        # two jobs of a key at once, which few short runs would reach from empty queues
        for queue, priority, max_attempts, concurrency_key, ordering_key in jobs:
            self.insert(
                queue, priority, max_attempts, 0, None, "raise", concurrency_key, ordering_key
            )
        if key_limit is not None:
            self._limit(QUEUES[0], "key_concurrency_limit", key_limit)

    @precondition(lambda self: len(self.models) < self.jobs_max)
    @rule(
        queue=st.sampled_from(QUEUES),
        priority=st.integers(1, 4),
        max_attempts=st.integers(1, 3),
        delay_s=st.sampled_from([0, 0, 45]),
        unique=_UNIQUE,
        on_conflict=st.sampled_from(["raise", "skip"]),
        concurrency_key=st.sampled_from([None, "a", "b"]),
        ordering_key=st.sampled_from([None, None, "o"]),
    )
    def insert(
        self,
        queue: str,
        priority: int,
        max_attempts: int,
        delay_s: int,
        unique: tuple[str, Unique] | None,
        on_conflict: str,
        concurrency_key: str | None = None,
        ordering_key: str | None = None,
    ) -> None:
        run_at = self.clock.now() + timedelta(seconds=delay_s) if delay_s else None
        new = NewJob(
            kind="machine",
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            run_at=run_at,
            args={"key": unique[0]} if unique else {},
            unique=unique[1] if unique else None,
            concurrency_key=concurrency_key,
            ordering_key=ordering_key,
        )
        jobs, _ = self._all()
        holder = self._holder(new.unique_key_at(run_at or self.clock.now()), jobs)
        try:
            [job] = self.store.insert([new], on_conflict=on_conflict)  # type: ignore[arg-type]
        except UniqueConflict as conflict:
            refused_for: int | None = conflict.job_id
        else:
            refused_for = None
        if refused_for is not None:
            assert holder is not None, "an insert with a free key was refused"
            assert (on_conflict, refused_for) == ("raise", holder.id)
            assert len(self._all()[0]) == len(jobs), "a refused insert inserted"
            return
        if holder is not None:
            assert on_conflict == "skip", f"job {holder.id} holds the key, yet it inserted"
            assert job == holder, "skip must answer with the holder"
            return
        assert job.id not in self.models
        assert job.state is (JobState.SCHEDULED if delay_s else JobState.AVAILABLE)
        assert holds_unique_key(job) is (unique is not None)
        self.models[job.id] = Model(unique_key=job.unique_key)
