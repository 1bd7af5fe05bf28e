"""The contract of job summaries (``list_job_summaries``): what a listing shows of each job.

A summary lists what ``list_jobs`` (``home="jobs"``) or ``list_dlq`` (``home="dlq"``) would
list, in the same order and pages, with every field equal to ``summarize`` of the whole job:
a store may read less, never show something else. The last error is cut at
``LAST_ERROR_CHARS_MAX`` characters (characters, not bytes), and marked where it was cut.
"""

from __future__ import annotations

from typing import Any

from awa.adapters.memory import ManualClock
from awa.domain import Fail, JobState, NewJob
from awa.ports import LAST_ERROR_CHARS_MAX, ClaimStore
from awa.ports.listing import summarize
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish, _one

__all__ = ["ListingContract"]

_FILTERS: tuple[dict[str, Any], ...] = (
    {},
    {"queue": "q1"},
    {"kind": "b"},
    {"state": JobState.RETRYABLE},
    {"state": JobState.FAILED},
    {"tag": "red"},
    {"queue": "q4", "kind": "a", "tag": "red"},
    {"queue": "q1", "kind": "a", "tag": "red"},
    {"limit": 2},
    {"kind": "nothing"},
)


def _fail(store: ClaimStore, clock: ManualClock, queue: str, *errors: str, **fields: Any) -> int:
    """A job of ``queue`` that recorded ``errors``, one an attempt (the last one terminal)."""
    job = _one(store, queue=queue, max_attempts=len(errors) + 1, **fields)
    for n, error in enumerate(errors, start=1):
        clock.advance(3600)  # past any backoff
        claimed = _claim_one(store, queue)
        assert claimed.id == job.id
        _finish(store, claimed.lease, Fail(error, terminal=n == len(errors)))
    return job.id


class ListingContract(StoreFixtures):
    """Summaries of both homes: the same jobs as the whole listings, the same fields."""

    def _populate(self, store: ClaimStore, clock: ManualClock) -> None:
        store.set_dlq_enabled("dead", True)
        store.insert(
            [
                NewJob(kind="a", queue="q1", tags=("red", "x")),
                NewJob(kind="b", queue="q1", priority=1),
                NewJob(kind="a", queue="q2", tags=("red",)),
            ]
        )
        _claim_one(store, "q2")
        clock.advance(1)
        [retrying] = store.insert([NewJob(kind="b", queue="q3", max_attempts=3)])
        _finish(store, _claim_one(store, "q3").lease, Fail("boom\nat line 2"))
        _fail(store, clock, "q4", "first", "second and last", kind="a", tags=("red",))
        for kind in ("a", "b", "a"):
            clock.advance(1)
            tags = ("red",) if kind == "a" else ()
            _fail(store, clock, "dead", f"{kind} died", kind=kind, tags=tags)
        assert store.get_job(retrying.id).state is JobState.RETRYABLE

    def test_job_summaries_are_list_jobs_summarized(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        self._populate(store, clock)
        for filters in _FILTERS:
            expected = [summarize(job) for job in store.list_jobs(**filters)]
            assert store.list_job_summaries(**filters) == expected, filters
            assert store.list_job_summaries(home="jobs", **filters) == expected, filters

    def test_dlq_summaries_are_list_dlq_summarized_with_reason_and_time(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        self._populate(store, clock)
        entries = store.list_dlq()
        assert len(entries) == 3
        for filters in _FILTERS:
            kept = [
                e
                for e in entries
                if all(
                    (e.job.tags if name == "tag" else [getattr(e.job, name)]).__contains__(value)
                    for name, value in filters.items()
                    if name != "limit"
                )
            ][: filters.get("limit", 100)]
            expected = [summarize(e.job, e) for e in kept]
            assert store.list_job_summaries(home="dlq", **filters) == expected, filters
        [newest] = store.list_job_summaries(home="dlq", limit=1)
        assert (newest.dlq_reason, newest.dlq_at) == (entries[0].reason, entries[0].dlq_at)
        assert newest.last_error == "a died"

    def test_summaries_page_newest_first_with_before_id(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.set_dlq_enabled("d", True)
        store.insert([NewJob(kind="page") for _ in range(5)])
        for _ in range(5):
            _fail(store, clock, "d", "x")
        for home in ("jobs", "dlq"):
            pages, before = [], None
            while page := store.list_job_summaries(home=home, limit=2, before_id=before):
                pages.append([s.id for s in page])
                before = page[-1].id
            ids = [i for p in pages for i in p]
            assert [len(p) for p in pages] == [2, 2, 1], home
            assert ids == sorted(ids, reverse=True), home
            assert len(set(ids)) == 5, home

    def test_a_summary_keeps_the_start_of_the_last_error_only(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        """Cut by characters (an emoji is one), marked with an ellipsis when cut; an error of
        exactly the bound is kept whole."""
        chars = LAST_ERROR_CHARS_MAX
        whole = "é" * (chars - 1) + "😀"
        long = "😀" * (chars - 2) + "ab" + "c" * 20_000
        ids = {
            "whole": _fail(store, clock, "e", "an earlier one", whole),
            "one more": _fail(store, clock, "e", whole + "!"),
            "long": _fail(store, clock, "e", long[:10_000]),
            "none": _one(store, queue="e").id,
        }
        shown = {s.id: s.last_error for s in store.list_job_summaries(queue="e")}
        assert shown[ids["whole"]] == whole
        assert shown[ids["one more"]] == whole[:-1] + "…"
        assert shown[ids["long"]] == "😀" * (chars - 2) + "a…"
        assert shown[ids["none"]] is None
        for summary in store.list_job_summaries(queue="e"):
            assert summary == summarize(store.get_job(summary.id))
